"""The plan's view of every graph node as numpy columns indexed by T-order position, so that
checks over all nodes run as array operations and look at single nodes only when they fail."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat

import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.verify.plan_view import NodeEntries


@dataclass(frozen=True)
class NodeColumns:
    """Per graph node (T-order index): has a `nodes` entry, its logical and physical stream
    (-1 without an entry), its first listed gid (-1 when unlisted) and that task's stream."""

    has_entry: np.ndarray
    stream: np.ndarray
    physical: np.ndarray
    gid: np.ndarray
    listed_on: np.ndarray

    @property
    def has_task(self) -> np.ndarray:
        """Nodes that issue a task: a physical stream in their entry, and listed."""
        return (self.physical >= 0) & (self.gid >= 0)

    @cached_property
    def single_logical(self) -> dict[int, int] | None:
        """Physical stream -> the logical stream of its graph nodes; None when a physical
        stream holds nodes of several logical streams."""
        on = (self.physical >= 0) & (self.stream >= 0)
        width = int(self.stream.max(initial=0)) + 1
        pairs = sorted_distinct(self.physical[on] * width + self.stream[on])
        physical = pairs // width
        if np.any(physical[1:] == physical[:-1]):  # sorted: a repeat is next to its twin
            return None
        return dict(zip(physical.tolist(), (pairs % width).tolist(), strict=True))


def node_columns(names: tuple[str, ...], entries: NodeEntries, where: Mapping[str, int],
                 stream_of_task: np.ndarray) -> NodeColumns:
    """Columns for the nodes `names` from the plan's entries and the task numbering `where`
    (name -> first gid); `stream_of_task[gid]` is a task's stream id."""
    n = len(names)
    if entries.names == names:  # as plans are written: entries in T-order
        has_entry = np.ones(n, bool)
        stream = np.array(entries.streams, np.int64)
        physical = np.array(entries.physical, np.int64)
    else:  # row -1 (no entry) reads the -1 appended to each column
        rows = np.fromiter(map(entries.rows.get, names, repeat(-1)), np.int64, n)
        has_entry = rows >= 0
        stream = np.array([*entries.streams, -1], np.int64)[rows]
        physical = np.array([*entries.physical, -1], np.int64)[rows]
    gid = np.fromiter(map(where.get, names, repeat(-1)), np.int64, n)
    listed = gid >= 0
    listed_on = np.full(n, -1, np.int64)
    listed_on[listed] = stream_of_task[gid[listed]]
    return NodeColumns(has_entry, stream, physical, gid, listed_on)

