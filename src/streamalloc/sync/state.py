"""The records the sync stages share: what every stage reads (`SyncInputs`) and the state they
hand each other (`SyncState`).

`SyncState` is frozen. A stage returns a new one (`dataclasses.replace`) and never changes the
containers of the state it was given: it works on its own `copy()` of what it changes, so every
intermediate state stays as it was when the stage finished (and can be printed later).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from streamalloc.allocation import Allocation
from streamalloc.ir.graph import Graph
from streamalloc.sync.activation import Activation, LabelActivation
from streamalloc.sync.context import SyncModel
from streamalloc.sync.generate import Namer
from streamalloc.sync.limits import Limits, limits_of
from streamalloc.sync.model import SyncMaps, Task
from streamalloc.sync.switch import SwitchState


@dataclass(frozen=True)
class SyncInputs:
    """What the stages read and none changes: the graph's facts, the logical allocation, the
    device limits, and whether Phase A makes notifies (`ge.event: notify`) instead of events."""

    model: SyncModel
    allocation: Allocation
    limits: Limits
    notify: bool

    @classmethod
    def of(cls, graph: Graph, allocation: Allocation) -> SyncInputs:
        """The inputs of synchronizing `allocation` of `graph`."""
        return cls(SyncModel.of_allocation(graph, allocation), allocation, limits_of(graph),
                   graph.option("ge.event") == "notify")

    @property
    def graph(self) -> Graph:
        """The graph being synchronized."""
        return self.model.graph


@dataclass(frozen=True, slots=True)
class AttachedSend:
    """An event from the last user of an attached stream, sent on that stream (spec 2.7)."""

    id: int
    sender: str
    stream: int


@dataclass(frozen=True)
class Physical:
    """What the split decided: each new stream's logical stream, the event count after the
    split events, the huge streams, the capacity per stream and the units the split counted."""

    split_to_logic: Mapping[int, int]
    event_count: int
    huge_streams: tuple[int, ...]
    capacity: int
    counted: Mapping[int, int]


@dataclass(frozen=True)
class SyncState:
    """The sync layer's state between stages.

    `streams`: each graph node's stream (logical; physical after `split`); `stream_num`: the
    streams in use (logical, then StreamActive and split streams); `labels`, `activation`:
    activation (spec 6); `pairs`: Phase A's pairs between nodes (events, or notifies in notify
    mode); `events`: the loop-activation and attached-stream events, numbered after the pairs'
    events; `tasks`: the task order from `sync-tasks` on; `namer`: the sync node names given;
    `physical`: the split's result.
    """

    streams: Mapping[str, int]
    stream_num: int
    namer: Namer
    labels: LabelActivation = field(default_factory=LabelActivation)
    activation: Activation = field(default_factory=Activation)
    pairs: SyncMaps = field(default_factory=SyncMaps)
    events: SyncMaps = field(default_factory=SyncMaps)
    attached_sends: tuple[AttachedSend, ...] = ()
    switches: SwitchState = field(default_factory=SwitchState)
    tasks: tuple[Task, ...] = ()
    physical: Physical | None = None

    @classmethod
    def initial(cls, ctx: SyncInputs) -> SyncState:
        """Before the first stage: the allocation's logical streams, nothing synchronized."""
        streams = {n: a.stream for n, a in ctx.allocation.nodes.items()}
        return cls(MappingProxyType(streams), ctx.allocation.total_stream_num,
                   Namer(ctx.graph.root.name))
