"""Phase B's stages (spec 5): the physical split and its events, then the device limits.

`split` (B1-B6) sizes each stream (the huge stream in single-stream mode), splits logical
streams by task capacity (none with `streamalloc.unlimited_stream_depth`), updates activation
for the new streams (6.5), repeats switch handling (B5) and puts one Send/Recv pair around
each split point. `limits` checks the counts against the device limits.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from types import MappingProxyType

from streamalloc.errors import AllocationInfeasible, LimitExceeded
from streamalloc.facts import INVALID, RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.ir.graph import Graph
from streamalloc.passes import PassResult, outcome
from streamalloc.sync.activation import Activation, after_split
from streamalloc.sync.generate import Namer, check_pairs, sync_task
from streamalloc.sync.model import Task
from streamalloc.sync.split import SplitResult, split_streams
from streamalloc.sync.state import Physical, SyncInputs, SyncState
from streamalloc.sync.switch import SwitchState, graph_parents, handle_switches, place_after_graph
from streamalloc.sync.tasks import collect, task_units


@dataclass
class _Owned:
    """The split stage's own copies of what it changes (tasks copied with the generated
    StreamActive nodes among them, so identities within the stage hold)."""

    tasks: list[Task]
    streams: dict[str, int]
    activation: Activation
    switches: SwitchState
    namer: Namer

    @classmethod
    def of(cls, plan: SyncState) -> _Owned:
        copies = {id(t): t.copy() for t in plan.tasks}
        activation = plan.activation.copy()
        activation.generated = {n: copies.get(id(t), t) for n, t in activation.generated.items()}
        return cls([copies[id(t)] for t in plan.tasks], dict(plan.streams), activation,
                   plan.switches.copy(), plan.namer.copy())


@dataclass(frozen=True)
class Split:
    """B1-B6 (spec 5.2-5.8, 6.5): physical streams by task capacity, and their events."""

    name = "split"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The physical streams, activation and task order after the split."""
        own = _Owned.of(plan)
        max_task, huge = _capacity(ctx, own.tasks)
        if ctx.graph.option(UNLIMITED_DEPTH) == "true":
            n = plan.stream_num
            result = SplitResult(n, [set() for _ in range(n)], {s: s for s in range(n)},
                                 event_num=plan.events.counter)
        else:
            result = _split(ctx, plan, own, max_task)
        counted = _units(ctx.graph, own.tasks)  # what the split counted; its own Send/Recv next
        tasks = _with_split_events(own.tasks, result, own.namer)
        check_pairs(tasks)
        physical = Physical(MappingProxyType(dict(result.split_to_logic)), result.event_num,
                            huge, max_task, MappingProxyType(dict(counted)))
        return outcome(plan, replace(
            plan, streams=MappingProxyType(own.streams), stream_num=result.stream_num,
            activation=own.activation, switches=own.switches, tasks=tuple(tasks),
            namer=own.namer, physical=physical))


def _split(ctx: SyncInputs, plan: SyncState, own: _Owned, max_task: int) -> SplitResult:
    """B4 and B5: split `own.tasks` in place, then activation and switches follow."""
    graph = ctx.graph
    units_of = collect(graph, own.tasks, max_task, own.activation.active_stream_list)
    result = split_streams(graph, own.tasks, units_of,
                           (plan.stream_num, max_task, plan.events.counter))
    for task in own.tasks:
        if not task.is_sync:
            own.streams[task.name] = task.stream
    after_split(ctx.model, own.streams, plan.labels.first_active, own.activation,
                split=result.split_streams, opened_by=result.opened_by)
    made = handle_switches(ctx.model, plan.labels.labeled_streams, own.activation, own.switches,
                           result.stream_num)  # B5 repeats 6.3
    result.stream_num += len(made)
    own.tasks = place_after_graph(own.tasks, made, graph_parents(graph))
    return result


def _units(graph: Graph, tasks: list[Task]) -> dict[int, int]:
    units: dict[int, int] = defaultdict(int)
    for task in tasks:
        for stream, used in task_units(graph, task).items():
            if stream != INVALID:
                units[stream] += used
    return units


def _capacity(ctx: SyncInputs, tasks: list[Task]) -> tuple[int, tuple[int, ...]]:
    """B1 (spec 5.2): a single-stream model that overflows a stream gets the huge stream 0."""
    graph, limits, allocation = ctx.graph, ctx.limits, ctx.allocation
    if graph.option("ge.enableSingleStream") != "true":
        return limits.max_task_per_stream, ()
    if allocation.main_stream_num > 1:
        raise AllocationInfeasible(f"single-stream mode but {allocation.main_stream_num} main "
                                   "streams")
    estimate = sum(sum(task_units(graph, t).values()) for t in tasks if t.stream != INVALID) \
        + RESERVED_UNITS
    if estimate > limits.max_task_per_stream:
        return limits.max_task_per_huge_stream, (0,)
    return limits.max_task_per_stream, ()


def _with_split_events(tasks: list[Task], result: SplitResult, namer: Namer) -> list[Task]:
    """B6: a Send after each split point's predecessor, a Recv before the new stream's first."""
    if not result.events:
        return tasks
    after: dict[int, list[Task]] = defaultdict(list)
    before: dict[int, list[Task]] = defaultdict(list)
    for event in result.events:
        send_stream = event.old if event.attached else event.pre.stream
        after[id(event.pre)].append(sync_task(namer, "Send", event.id, send_stream, event.pre))
        recv_stream = event.new
        before[id(event.recv)].append(sync_task(namer, "Recv", event.id, recv_stream,
                                                event.recv))
    ordered: list[Task] = []
    for task in tasks:
        ordered += [*before[id(task)], task, *after[id(task)]]
    return ordered


@dataclass(frozen=True)
class CheckLimits:
    """The device limits (`streamalloc.max_*` options): streams, events, notifies, and the task
    units of each physical stream against its capacity."""

    name = "limits"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """LimitExceeded (exit 4) for the first limit the plan exceeds; the plan unchanged."""
        physical, limits = plan.physical, ctx.limits
        assert physical is not None, "limits run after the split"
        checks = [("streams", plan.stream_num, limits.max_streams, "max_streams"),
                  ("events", physical.event_count, limits.max_events, "max_events"),
                  ("notifies", plan.pairs.counter if ctx.notify else 0, limits.max_notifies,
                   "max_notifies")]
        for what, value, limit, option in checks:
            if value > limit:
                raise LimitExceeded(f"the plan needs {value} {what}, over the limit of {limit} "
                                    f"(option streamalloc.{option})")
        unlimited = ctx.graph.option(UNLIMITED_DEPTH) == "true"
        for stream, used in sorted(physical.counted.items()):
            if not unlimited and used + RESERVED_UNITS > physical.capacity:
                raise LimitExceeded(f"physical stream {stream} needs {used} task units + "
                                    f"{RESERVED_UNITS} reserved, over the capacity of "
                                    f"{physical.capacity} (a single node larger than the "
                                    "capacity cannot be split)")
        return PassResult(plan, False)
