"""Phase A and Phase B in GE's order (spec 1.5), over any allocator's logical allocation.

`synchronize` folds the sync stages (`sync_stages`: `stages.py`, then `physical.py`) over a
`SyncState` and makes the `SyncPlan` of the last state. An observer
(`streamalloc.passes.PassObserver`) is told after every stage; a record's text is the
canonical sync-state text (`state_text.py`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from types import MappingProxyType

from streamalloc import collector
from streamalloc.allocation import Allocation
from streamalloc.facts import INVALID
from streamalloc.ir.graph import Graph
from streamalloc.passes import Pass, PassObserver, PassRecord
from streamalloc.sync.model import Task
from streamalloc.sync.physical import CheckLimits, Split
from streamalloc.sync.result import SyncEvent, SyncNode, SyncPlan
from streamalloc.sync.stages import (
    SYNC_STRATEGIES,
    Activate,
    AttachedDependencies,
    AttachedEvents,
    AttachedResources,
    Eliminate,
    Insert,
    LoopActivation,
    MultiDimsReuse,
    Multiplex,
    Renumber,
    Switch,
    SyncTasks,
)
from streamalloc.sync.state import SyncInputs, SyncState
from streamalloc.sync.state_text import sync_state_text

__all__ = ["SYNC_STAGE_NAMES", "SYNC_STRATEGIES", "SyncStage", "sync_stages", "synchronize"]

SyncStage = Pass[SyncInputs, SyncState]


def sync_stages(strategy: str = "ge") -> tuple[SyncStage, ...]:
    """The stages in run order; `strategy` is the elimination ("ge" or "minimal")."""
    return (Activate(), Insert(), Eliminate(strategy), Renumber(), MultiDimsReuse(),
            Multiplex(), AttachedDependencies(), Switch(), LoopActivation(), AttachedEvents(),
            SyncTasks(), AttachedResources(), Split(), CheckLimits())


SYNC_STAGE_NAMES = tuple(stage.name for stage in sync_stages())


@collector.pausing
def synchronize(graph: Graph, allocation: Allocation, sync: str = "ge",
                observer: PassObserver | None = None) -> SyncPlan:
    """Events (or notifies), their elimination (`sync`: "ge" or "minimal") and numbering, the
    split, the task order; `observer` is told after every stage."""
    stages = sync_stages(sync)
    ctx = SyncInputs.of(graph, allocation)
    state = SyncState.initial(ctx)
    for stage in stages:
        result = stage.apply(ctx, state)
        state = result.plan
        if observer is not None:
            observer.after_pass(PassRecord(stage.name, "", result.changed, state,
                                           partial(sync_state_text, ctx, state)))
    return replace(sync_plan(ctx, state), sync=sync)


def sync_plan(ctx: SyncInputs, state: SyncState) -> SyncPlan:
    """The plan of the state after the last stage."""
    physical, allocation = state.physical, ctx.allocation
    assert physical is not None, "the plan is made after the split"
    streams = _streams(state)
    return SyncPlan(
        allocation=allocation,
        physical=state.streams,  # the allocation's nodes in its order: the split's copy of them
        streams=MappingProxyType({s: tuple(v) for s, v in streams.items()}),
        events=_events(state.tasks), sync_nodes=tuple(
            SyncNode(t.name, t.type, t.stream, t.sync_id, t.peer)
            for t in state.tasks if t.is_sync),
        activations=MappingProxyType({n: tuple(s) for n, s in
                                      state.activation.active_stream_list.items()}),
        split_to_logic=MappingProxyType(dict(physical.split_to_logic)),
        huge_streams=physical.huge_streams, event_count=physical.event_count,
        notify_count=state.notify_count,
        units=physical.counted)  # the split counted the final tasks; no later stage moves one


def _streams(state: SyncState) -> dict[int, list[str]]:
    """Each physical stream's task names in order."""
    streams: dict[int, list[str]] = {s: [] for s in range(state.stream_num)}
    for task in state.tasks:
        if task.stream != INVALID:
            streams[task.stream].append(task.name)
    return streams


def _events(tasks: tuple[Task, ...]) -> tuple[SyncEvent, ...]:
    """One event (or notify) per id: its Send task, its Recv task, their streams."""
    senders: dict[tuple[str, int], Task] = {}
    receivers: dict[tuple[str, int], Task] = {}
    for task in tasks:
        if task.stream != INVALID and task.is_sync and task.type != "StreamActive":
            side = senders if task.type.startswith("Send") else receivers
            side[(task.sync_kind, task.sync_id)] = task
    return tuple(SyncEvent(x, kind, s.peer, receivers[(kind, x)].peer, s.stream,
                           receivers[(kind, x)].stream)
                 for (kind, x), s in sorted(senders.items(), key=lambda i: (i[0][0], i[0][1])))
