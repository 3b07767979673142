"""Phase A and Phase B in GE's order (spec 1.5), over any allocator's logical allocation.

`synchronize` folds the sync stages (`sync_stages`: `stages.py`, then `physical.py`) over a
`SyncState` and makes the `SyncPlan` of the last state. An observer
(`streamalloc.passes.PassObserver`) is told after every stage; a record's text is the
canonical sync-state text (`state_text.py`).
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

import numpy as np
from msgspec.structs import replace

from streamalloc import collector
from streamalloc.allocation import Allocation
from streamalloc.facts import INVALID
from streamalloc.ir.graph import Graph
from streamalloc.passes import Pass, PassObserver, PassRecord
from streamalloc.sync.model import Task, TaskTable
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
    return (Activate(), Insert(strategy), Eliminate(strategy), Renumber(), MultiDimsReuse(),
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
    physical, allocation, tasks = state.physical, ctx.allocation, state.tasks
    assert physical is not None and tasks is not None, "the plan is made after the split"
    made = [task for _, task in tasks.made_rows()]
    return SyncPlan(
        allocation=allocation,
        physical=state.streams,  # the allocation's nodes in its order: the split's copy of them
        streams=MappingProxyType(_streams(tasks, state.stream_num)),
        events=_events(made), sync_nodes=tuple(
            SyncNode(t.name, t.type, t.stream, t.sync_id, t.peer) for t in made if t.is_sync),
        activations=MappingProxyType({n: tuple(s) for n, s in
                                      state.activation.active_stream_list.items()}),
        split_to_logic=MappingProxyType(dict(physical.split_to_logic)),
        huge_streams=physical.huge_streams, event_count=physical.event_count,
        notify_count=state.notify_count,
        units=physical.counted)  # the split counted the final tasks; no later stage moves one


def _streams(tasks: TaskTable, stream_num: int) -> dict[int, tuple[str, ...]]:
    """Each physical stream's task names in order (a stable sort of the rows by stream)."""
    streams = np.fromiter(tasks.streams, np.int64, len(tasks))
    order = np.argsort(streams, kind="stable")
    ordered = streams[order]
    starts = np.searchsorted(ordered, np.arange(stream_num + 1))
    names = tasks.names
    return {s: tuple(map(names.__getitem__, order[starts[s]:starts[s + 1]].tolist()))
            for s in range(stream_num)}


def _events(made: list[Task]) -> tuple[SyncEvent, ...]:
    """One event (or notify) per id: its Send task, its Recv task, their streams."""
    senders: dict[tuple[str, int], Task] = {}
    receivers: dict[tuple[str, int], Task] = {}
    for task in made:
        if task.stream != INVALID and task.is_sync and task.type != "StreamActive":
            side = senders if task.type.startswith("Send") else receivers
            side[(task.sync_kind, task.sync_id)] = task
    return tuple(SyncEvent(x, kind, s.peer, receivers[(kind, x)].peer, s.stream,
                           receivers[(kind, x)].stream)
                 for (kind, x), s in sorted(senders.items(), key=lambda i: (i[0][0], i[0][1])))
