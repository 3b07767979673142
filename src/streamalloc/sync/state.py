"""The records the sync stages share: what every stage reads (`SyncInputs`) and the state they
hand each other (`SyncState`).

`SyncState` is frozen. A stage returns a new one (`msgspec.structs.replace`) and never changes the
containers of the state it was given: it works on its own `copy()` of what it changes, so every
intermediate state stays as it was when the stage finished (and can be printed later).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from streamalloc.allocation import Allocation
from streamalloc.ir.graph import Graph
from streamalloc.sync.activation import Activation, LabelActivation
from streamalloc.sync.attached import AttachedSync, Resources
from streamalloc.sync.context import SyncModel
from streamalloc.sync.generate import Namer
from streamalloc.sync.limits import Limits, limits_of
from streamalloc.sync.model import SyncMaps, TaskTable
from streamalloc.sync.switch import SwitchState


class SyncInputs(msgspec.Struct, frozen=True):
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


class Physical(msgspec.Struct, frozen=True):
    """What the split decided: each new stream's logical stream, the event count after the
    split events, the huge streams, the capacity the split used (the huge one in single-stream
    mode with a huge stream) and the task units each physical stream holds in the end (its
    tasks and the work on it as an attached stream, split events included)."""

    split_to_logic: Mapping[int, int]
    event_count: int
    huge_streams: tuple[int, ...]
    capacity: int
    counted: Mapping[int, int]


class SyncState(msgspec.Struct, frozen=True):
    """The sync layer's state between stages.

    `streams`: each graph node's stream (logical; physical after `split`); `stream_num`: the
    streams in use (logical, then StreamActive and split streams); `labels`, `activation`:
    activation (spec 6); `pairs`: Phase A's pairs between nodes (events, or notifies in notify
    mode); `events`: the attached-stream and loop-activation events on nodes' main streams,
    numbered after the pairs' events; `attached_sync`: the Sends and Recvs of those events on
    attached streams; `resources`: the attached sync resources (4.5); `tasks`: the task order
    from `sync-tasks` on; `namer`: the sync node names given; `physical`: the split's result.
    """

    streams: Mapping[str, int]
    stream_num: int
    namer: Namer
    notify: bool = False  # Phase A's pairs are notifies (`ge.event: notify`)
    labels: LabelActivation = msgspec.field(default_factory=LabelActivation)
    activation: Activation = msgspec.field(default_factory=Activation)
    pairs: SyncMaps = msgspec.field(default_factory=SyncMaps)
    events: SyncMaps = msgspec.field(default_factory=SyncMaps)
    attached_sync: tuple[AttachedSync, ...] = ()
    resources: Resources = msgspec.field(default_factory=Resources)
    switches: SwitchState = msgspec.field(default_factory=SwitchState)
    tasks: TaskTable | None = None
    physical: Physical | None = None

    @property
    def notify_count(self) -> int:
        """Notify ids: Phase A's pairs in notify mode, and the attached notify resources."""
        return self.resources.notify_count + (self.pairs.counter if self.notify else 0)

    @classmethod
    def initial(cls, ctx: SyncInputs) -> SyncState:
        """Before the first stage: the allocation's logical streams, nothing synchronized."""
        return cls(ctx.allocation.node_streams, ctx.allocation.total_stream_num,
                   Namer(ctx.graph.root.name), notify=ctx.notify)
