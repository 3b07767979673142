"""The synchronized plan: physical streams, their task order, events, activation, counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from streamalloc.allocation import Allocation

PLAN_FORMAT = "streamalloc.plan/v1"

# The sections of a plan document (`SyncPlan.to_json`) made of ints, strings, lists and
# string-keyed objects only: written without json_text's type check (its `plain`), which costs
# more than encoding them. The tests hold every plan they make to it.
PLAIN_SECTIONS = frozenset({"nodes", "streams", "events", "sync_nodes", "tasks", "split_to_logic",
                            "stream_activations", "huge_streams"})


class SyncEvent(msgspec.Struct, frozen=True):
    """One event or notify id: recorded after `send`, waited before `recv`."""

    id: int
    kind: str
    send: str
    recv: str
    send_stream: int
    recv_stream: int


class SyncNode(msgspec.Struct, frozen=True):
    """A generated Send/Recv task (the new graph's Send/Recv node)."""

    name: str
    type: str
    stream: int
    event: int
    peer: str


class SyncPlan(msgspec.Struct, frozen=True):
    """Everything after logical allocation, for the plan file and the emulator."""

    allocation: Allocation
    physical: Mapping[str, int]
    streams: Mapping[int, tuple[str, ...]]
    events: tuple[SyncEvent, ...]
    sync_nodes: tuple[SyncNode, ...]
    activations: Mapping[str, tuple[int, ...]]
    split_to_logic: Mapping[int, int]
    huge_streams: tuple[int, ...]
    event_count: int
    notify_count: int
    units: Mapping[int, int]
    sync: str = "ge"  # the elimination strategy: "ge" (spec 3) or "minimal"

    def allocation_stream(self, physical: int) -> int:
        """The logical stream a physical stream was split from."""
        return self.split_to_logic.get(physical, physical)

    @property
    def physical_stream_count(self) -> int:
        """Physical streams after splitting (and switch StreamActive streams)."""
        return len(self.streams)

    def to_json(self) -> dict[str, Any]:
        """formats.md section 3."""
        alloc = self.allocation
        return {
            "format": PLAN_FORMAT,
            "graph": alloc.graph,
            "mode": alloc.mode,
            "sync": self.sync,
            "nodes": {name: {"stream": n.stream, "physical_stream": self.physical[name],
                             "attached_streams": list(n.attached), "rule": n.rule}
                      for name, n in alloc.nodes.items()},
            "streams": {str(s): list(tasks) for s, tasks in sorted(self.streams.items())},
            "logical_stream_count": alloc.main_stream_num,
            "physical_stream_count": self.physical_stream_count,
            "attached_stream_count": len(alloc.attached_stream_ids),
            "events": [{"id": e.id, "kind": e.kind, "send": e.send, "recv": e.recv,
                        "send_stream": e.send_stream, "recv_stream": e.recv_stream}
                       for e in self.events],
            "event_count": self.event_count,
            "notify_count": self.notify_count,
            "stream_activations": {n: list(s) for n, s in sorted(self.activations.items())},
            "split_to_logic": {str(k): v for k, v in sorted(self.split_to_logic.items())},
            "huge_streams": list(self.huge_streams),
            "tasks": {str(s): u for s, u in sorted(self.units.items())},
            "sync_nodes": [{"name": n.name, "type": n.type, "stream": n.stream,
                            "event": n.event, "peer": n.peer} for n in self.sync_nodes],
            "summary": alloc.summary(),
            "options": dict(sorted(alloc.options.items())),
            "rules": {"name": alloc.rules, "digest": alloc.rules_digest} if alloc.rules_digest
            else None,
        }
