"""The verifier's typed, immutable records of a plan file (docs/plan-format.md), as
`plan_input.py` reads them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import msgspec

# Generated task types and the id space they use
SEND_TYPES = {"Send": "event", "SendNotify": "notify"}
RECV_TYPES = {"Recv": "event", "RecvNotify": "notify"}


# The per-item records are NamedTuples: immutable like frozen dataclasses, but several times
# faster to build, which matters for plans with hundreds of thousands of tasks.
class NodeEntry(NamedTuple):
    """A graph node's place: logical stream and physical stream (-1 = no stream)."""

    stream: int
    physical_stream: int


@dataclass(frozen=True, eq=False)
class NodeEntries(Mapping[str, NodeEntry]):
    """The `nodes` object as columns in file order: node names, logical and physical streams.

    Checks over every node read the columns; a `NodeEntry` is made only for a name looked up
    (mostly to word a violation), which spares making one record per node of a large plan.
    """

    names: tuple[str, ...]
    streams: list[int]
    physical: list[int]

    @cached_property
    def rows(self) -> dict[str, int]:
        """Name -> row of its entry in the columns."""
        return dict(zip(self.names, range(len(self.names)), strict=True))

    def __getitem__(self, name: str) -> NodeEntry:
        row = self.rows[name]
        return NodeEntry(self.streams[row], self.physical[row])

    def __contains__(self, name: object) -> bool:
        return name in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


class SyncEntry(NamedTuple):
    """A generated task: Send/Recv (event id), SendNotify/RecvNotify (notify id), StreamActive."""

    name: str
    type: str
    stream: int
    ident: int | None

    @property
    def space(self) -> str | None:
        """"event", "notify", or None for a StreamActive."""
        return SEND_TYPES.get(self.type) or RECV_TYPES.get(self.type)


class RulesRef(NamedTuple):
    """The rule set a plan was made with: its name and the digest of its canonical text."""

    name: str
    digest: str


class EventEntry(NamedTuple):
    """One entry of `events`: the pair between the recording and the waiting node."""

    list_index: int
    id: int
    kind: str
    send: str
    recv: str
    send_stream: int
    recv_stream: int

    def label(self) -> str:
        """`events[i] (event 3, a -> b)` for messages."""
        return f"events[{self.list_index}] ({self.kind} {self.id}, {self.send} -> {self.recv})"


class PlanView(msgspec.Struct, frozen=True):
    """A plan as the verifier reads it. `streams` is sorted by stream id.

    The mappings are plain dicts (faster than read-only proxies); nothing writes to them.
    """

    source: str
    graph: str
    nodes: NodeEntries
    streams: Mapping[int, tuple[str, ...]]
    sync_nodes: tuple[SyncEntry, ...]
    events: tuple[EventEntry, ...]
    activations: Mapping[str, tuple[int, ...]]
    event_count: int
    notify_count: int
    physical_stream_count: int
    attached_stream_count: int = 0
    logical_stream_count: int | None = None
    tasks: Mapping[int, int] | None = None
    huge_streams: tuple[int, ...] | None = None
    attached: Mapping[str, tuple[int, ...]] = msgspec.field(default_factory=dict)
    options: Mapping[str, str] | None = None  # the options the plan was made with
    rules: RulesRef | None = None             # the rule set it was made with
    sync: str | None = None                   # its sync strategy: "ge" or "minimal"

    def count(self, space: str) -> int:
        """`event_count` or `notify_count`."""
        return self.event_count if space == "event" else self.notify_count
