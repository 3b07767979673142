"""The result of logical stream allocation, shared by every allocator: immutable, per node.

Per node: its logical stream (-1 where GE leaves none), the rule that decided it, its attached
streams; the summary GE exposes (logical stream infos, user labels, attached stream ids,
HCCL-followed stream count, whether a custom stream pass assigned it); provenance notes for
`streamalloc explain`; `allocation_text`, its canonical text form (what golden tests compare
and `--print-after` prints), beside the type so that allocators need nothing above them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from operator import attrgetter
from types import MappingProxyType
from typing import Any

import msgspec

from streamalloc.facts import INVALID

_STREAM, _ATTACHED = attrgetter("stream"), attrgetter("attached")


class Note(msgspec.Struct, frozen=True):
    """One decision: `rule` put the node (or its subgraph) on `stream` because of `reason`.

    `decides` is False for bookkeeping that does not choose a stream: a node taking its
    subgraph's stream, or compaction renaming an id.
    """

    rule: str
    stream: int
    reason: str
    decides: bool = True


class NodeStream(msgspec.Struct, frozen=True):
    """Where one node runs."""

    stream: int
    rule: str
    attached: tuple[int, ...] = ()


class Touch(msgspec.Struct, frozen=True):
    """One note in context: which rule, on what (the node, its subgraph or its labels)."""

    scope: str
    note: Note


class LogicalStreamInfo(msgspec.Struct, frozen=True):
    """GE's LogicalStreamAllocationInfo: one logical stream, its nodes and labels."""

    stream: int
    nodes: tuple[str, ...]
    user_stream_labels: tuple[str, ...]
    attached_stream_ids: tuple[int, ...]


@dataclass(frozen=True)
class Allocation:
    """Logical streams of every node of a model (root and subgraphs), in T-order."""

    graph: str
    mode: str
    rules: str
    nodes: Mapping[str, NodeStream]
    main_stream_num: int
    total_stream_num: int
    user_labels: Mapping[str, str]  # the user stream label of each node carrying one
    provenance: Mapping[str, tuple[Touch, ...]]
    custom_stream_ids: tuple[int, ...] = ()
    rules_digest: str = ""  # of the rule set's canonical text; "" when no rules ran (preset)
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @cached_property
    def node_streams(self) -> Mapping[str, int]:
        """Each node's logical stream, in T-order (made once: sync, the rule checks and the
        reports all read it)."""
        nodes = self.nodes
        return MappingProxyType(dict(zip(nodes.keys(), map(_STREAM, nodes.values()),
                                         strict=True)))

    @cached_property
    def node_attached(self) -> Mapping[str, tuple[int, ...]]:
        """The attached streams of the nodes that have some (few), in T-order."""
        nodes = self.nodes
        if not any(map(_ATTACHED, nodes.values())):  # most models: none
            return MappingProxyType({})
        return MappingProxyType({name: entry.attached for name, entry in
                                 compress(nodes.items(), map(_ATTACHED, nodes.values()))})

    @property
    def attached_stream_ids(self) -> tuple[int, ...]:
        """All attached stream ids, ascending."""
        return tuple(sorted({s for ids in self.node_attached.values() for s in ids}))

    @property
    def assigned_by_stream_pass(self) -> bool:
        """GE's IsAssignedByStreamPass: a custom stream pass allocated ids."""
        return bool(self.custom_stream_ids)

    def stream(self, node: str) -> int:
        """The logical stream of `node`."""
        return self.nodes[node].stream

    def logical_streams(self) -> tuple[LogicalStreamInfo, ...]:
        """Per main stream id (ascending): its nodes, user labels and attached streams."""
        members: dict[int, list[str]] = {}
        for name, stream in self.node_streams.items():
            if stream != INVALID:
                members.setdefault(stream, []).append(name)
        # few nodes carry a user label or attached streams: collected from those alone
        labels: dict[int, set[str]] = {}
        for name, label in self.user_labels.items():
            entry = self.nodes.get(name) if label else None
            if entry is not None and entry.stream != INVALID:
                labels.setdefault(entry.stream, set()).add(label)
        attached: dict[int, set[int]] = {}
        for name, ids in self.node_attached.items():
            stream = self.node_streams[name]
            if stream != INVALID:
                attached.setdefault(stream, set()).update(ids)
        return tuple(LogicalStreamInfo(
            stream=s, nodes=tuple(names), user_stream_labels=tuple(sorted(labels.get(s, ()))),
            attached_stream_ids=tuple(sorted(attached.get(s, ()))))
            for s, names in sorted(members.items()))

    def summary(self) -> dict[str, Any]:
        """GE's stream allocation summary (formats.md section 3 `summary`)."""
        return {
            "user_stream_labels": sorted({u for u in self.user_labels.values() if u}),
            # GE reports HCCL-followed streams from the HCCL kernel's task info, which no graph
            # dump or model file carries; without it the count is 0.
            "hccl_followed_stream_count": 0,
            "logical_stream_count": self.main_stream_num,
            "attached_stream_ids": list(self.attached_stream_ids),
            "assigned_by_stream_pass": self.assigned_by_stream_pass,
        }


def allocation_text(allocation: Allocation) -> str:
    """The canonical text of an allocation (stable, versioned header): the stream counts, then
    one line per node in T-order: name, stream, rule, attached streams."""
    lines = [f"// streamalloc allocation v1: graph {allocation.graph}, mode {allocation.mode}, "
             f"rules {allocation.rules}",
             f"main_stream_num {allocation.main_stream_num}",
             f"total_stream_num {allocation.total_stream_num}"]
    if allocation.custom_stream_ids:
        lines.append("custom_stream_ids " + ",".join(map(str, allocation.custom_stream_ids)))
    for name, node in allocation.nodes.items():
        attached = f" attached={','.join(map(str, node.attached))}" if node.attached else ""
        lines.append(f"{name} {node.stream} {node.rule}{attached}")
    return "\n".join(lines) + "\n"
