"""The plan's view of every graph node as numpy columns indexed by T-order position, so that
checks over all nodes run as array operations and look at single nodes only when they fail."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat

import numpy as np

from streamalloc.verify.plan_input import NodeEntry

NO_ENTRY = NodeEntry(-2, -2)  # below every valid stream id (-1 = no stream)


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
        pairs = np.unique(self.physical[on] * width + self.stream[on])
        physical = pairs // width
        if len(np.unique(physical)) < len(pairs):
            return None
        return dict(zip(physical.tolist(), (pairs % width).tolist(), strict=True))


def node_columns(names: Sequence[str], entries: Mapping[str, NodeEntry],
                 where: Mapping[str, int], stream_of_task: np.ndarray) -> NodeColumns:
    """Columns for the nodes `names` from the plan's entries and the task numbering `where`
    (name -> first gid); `stream_of_task[gid]` is a task's stream id."""
    n = len(names)
    pairs = np.fromiter(chain.from_iterable(map(entries.get, names, repeat(NO_ENTRY))),
                        np.int64, 2 * n).reshape(n, 2)
    gid = np.fromiter(map(where.get, names, repeat(-1)), np.int64, n)
    listed = gid >= 0
    listed_on = np.full(n, -1, np.int64)
    listed_on[listed] = stream_of_task[gid[listed]]
    stream, physical = np.maximum(pairs[:, 0], -1), np.maximum(pairs[:, 1], -1)
    return NodeColumns(pairs[:, 0] > NO_ENTRY.stream, stream, physical, gid, listed_on)
