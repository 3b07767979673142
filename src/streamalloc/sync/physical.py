"""Phase B's stages (spec 5): the physical split and its events, then the device limits.

`split` (B1-B6) puts tasks without a stream that issue tasks on stream 0, fails on a stream id
beyond the last one, sizes each stream (the huge stream in single-stream mode), splits logical
streams by task capacity (none with `streamalloc.unlimited_stream_depth`), keeps each Send and
Recv with its node (`split_events.py`), updates activation for the new streams (6.5), repeats
switch handling (B5) and puts one Send/Recv pair at each split point. `limits` checks the
counts against the device limits.
"""

from __future__ import annotations

from types import MappingProxyType

import msgspec
from msgspec.structs import replace

from streamalloc.errors import AllocationInfeasible, LimitExceeded
from streamalloc.facts import INVALID, PROFILING_UNITS, RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.ir.graph import Graph
from streamalloc.mappings import own_dict
from streamalloc.passes import PassResult, outcome
from streamalloc.sync.activation import Activation, after_split
from streamalloc.sync.generate import Namer, check_pairs
from streamalloc.sync.model import Task, TaskColumns, node_streams, task_at
from streamalloc.sync.split import SplitResult, split_streams
from streamalloc.sync.split_events import logical_places, place_split_events, rehome
from streamalloc.sync.state import Physical, SyncInputs, SyncState
from streamalloc.sync.switch import SwitchState, handle_switches, place_after_graph
from streamalloc.sync.tasks import assigned, collect, home_streamless, stream_units, task_units


class _Owned(msgspec.Struct):
    """The split stage's own copies of what it changes: the task order's columns (with copies
    of its made records; the activation's generated StreamActive tasks are among them)."""

    rows: TaskColumns
    streams: dict[str, int]
    activation: Activation
    switches: SwitchState
    namer: Namer

    @classmethod
    def of(cls, plan: SyncState) -> _Owned:
        assert plan.tasks is not None, "the split runs after sync-tasks"
        rows = plan.tasks.editable()
        activation = plan.activation.copy()
        if activation.generated:  # a few StreamActive tasks, when there are switches
            copies = {id(plan.tasks.made[r]): task for r, task in rows.made.items()}
            activation.generated = {n: copies.get(id(t), t)
                                    for n, t in activation.generated.items()}
        return cls(rows, own_dict(plan.streams), activation, plan.switches.copy(),
                   plan.namer.copy())


class Split(msgspec.Struct, frozen=True):
    """B1-B6 (spec 5.2-5.8, 6.5): physical streams by task capacity, and their events."""

    name = "split"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The physical streams, activation and task order after the split."""
        own = _Owned.of(plan)
        home_streamless(ctx.graph, own.rows)
        _check_stream_ids(ctx.graph, own.rows, plan.stream_num)
        max_task, huge = _capacity(ctx, own.rows)
        if ctx.graph.option(UNLIMITED_DEPTH) == "true":
            n = plan.stream_num
            result = SplitResult(n, [set() for _ in range(n)], {s: s for s in range(n)},
                                 event_num=plan.events.counter)
            own.streams.update(node_streams(own.rows))
        else:
            result = _split(ctx, plan, own, max_task)
        rows = place_split_events(own.rows, result.events, own.namer, ctx.graph.by_name)
        check_pairs(rows.made.values())
        units = stream_units(ctx.graph, rows, own.activation.active_stream_list)
        physical = Physical(MappingProxyType(dict(result.split_to_logic)), result.event_num,
                            huge, max_task, MappingProxyType(units))
        return outcome(plan, replace(
            plan, streams=MappingProxyType(own.streams), stream_num=result.stream_num,
            activation=own.activation, switches=own.switches, tasks=rows.table(),
            namer=own.namer, physical=physical))


def _split(ctx: SyncInputs, plan: SyncState, own: _Owned, max_task: int) -> SplitResult:
    """B4 and B5: split `own.rows` in place, then activation and switches follow."""
    graph = ctx.graph
    units = collect(graph, own.rows, max_task, own.activation.active_stream_list)
    syncs, logical = logical_places(own.rows)
    result = split_streams(ctx.model, own.rows, units,
                           (plan.stream_num, max_task, plan.events.counter))
    rehome(own.rows, syncs, logical)
    own.streams.update(node_streams(own.rows))
    opened_by = {s: task_at(own.rows, row, graph.by_name)
                 for s, row in result.opened_by.items()}
    labeled = after_split(ctx.model, own.streams, plan.labels, own.activation,
                          split=result.split_streams, opened_by=opened_by)
    made = handle_switches(ctx.model, labeled, own.activation, own.switches,
                           result.stream_num)  # B5 repeats 6.3
    result.stream_num += len(made)
    own.rows = place_after_graph(ctx.model, own.rows, made)
    return result


def _units_total(graph: Graph, task: Task) -> int:
    """5.2's UNITS_TOTAL: the explicit main count if any, else the units of all records."""
    main = assigned(graph, task, False)
    return main if main > 0 else sum(task_units(graph, task).values())


def _check_stream_ids(graph: Graph, rows: TaskColumns, stream_num: int) -> None:
    """GE fails when a node's stream id is beyond the last stream id (5.5, 8): the logical
    streams number `stream_num`. (Quirk Q1 of the logical spec can leave a node there; GE
    fails the same way when an earlier split has already raised its last id, where it would
    otherwise read past its per-stream tables.)"""
    if max(rows.streams, default=INVALID) < stream_num and \
            max(map(max, filter(None, rows.attached)), default=INVALID) < stream_num:
        return
    offending = [task_at(rows, r, graph.by_name) for r, (s, a)
                 in enumerate(zip(rows.streams, rows.attached, strict=True))
                 if s >= stream_num or (a and max(a) >= stream_num)]
    task = min(offending, key=lambda t: t.is_sync)  # name a graph node, not its Recv
    beyond = [s for s in (task.stream, *task.attached) if s >= stream_num]
    counted = f"beyond the last stream id {stream_num - 1}" if stream_num \
        else "but GE counted no logical stream"
    raise AllocationInfeasible(
        f"node {task.name!r} is on stream {beyond[0]}, {counted}; GE's split fails on it "
        "(GE's quirk Q1 hands a stream id out twice and leaves a node there: "
        "docs/ge-behaviour.md, \"Quirks that are kept\")")


def _capacity(ctx: SyncInputs, rows: TaskColumns) -> tuple[int, tuple[int, ...]]:
    """B1 (spec 5.2): a single-stream model that overflows a stream gets the huge stream 0."""
    graph, limits, allocation = ctx.graph, ctx.limits, ctx.allocation
    if graph.option("ge.enableSingleStream") != "true":
        return limits.max_task_per_stream, ()
    if allocation.main_stream_num > 1:
        raise AllocationInfeasible(
            f"graph {graph.name!r}: ge.enableSingleStream is \"true\" but rule set "
            f"{allocation.rules!r} puts its nodes on {allocation.main_stream_num} main streams; "
            "GE fails on more than one in single-stream mode: set ge.enableSingleStream to "
            "\"false\", or use rules that keep one stream (ge-static-single-stream, or a file "
            "extending it)")
    estimate = sum(_units_total(graph, task_at(rows, r, graph.by_name))
                   for r, s in enumerate(rows.streams) if s != INVALID) + RESERVED_UNITS
    if estimate > limits.max_task_per_stream:
        return limits.max_task_per_huge_stream, (0,)
    return limits.max_task_per_stream, ()


class CheckLimits(msgspec.Struct, frozen=True):
    """The device limits (`streamalloc.max_*` options): streams, events, notifies, and the task
    units of each physical stream (its tasks, GE's explicit counts included, and the work on it
    as an attached stream) with the 7 profiling units the runtime adds, against the stream's
    depth (the huge depth for a huge stream). The 20 spare units of GE's reserve (5.6) are
    room GE keeps for itself, not a device limit: a stream GE fills to its limit is valid."""

    name = "limits"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """LimitExceeded (exit 4) for the first limit the plan exceeds; the plan unchanged."""
        physical, limits = plan.physical, ctx.limits
        assert physical is not None, "limits run after the split"
        checks = [("streams", plan.stream_num, limits.model_streams,
                   f"option streamalloc.max_streams: {limits.max_streams} slots, less the "
                   "caller's stream"),
                  ("events", physical.event_count, limits.max_events,
                   "option streamalloc.max_events"),
                  ("notifies", plan.notify_count, limits.max_notifies,
                   "option streamalloc.max_notifies")]
        for what, value, limit, why in checks:
            if value > limit:
                raise LimitExceeded(f"the plan needs {value} {what}, over the limit of {limit} "
                                    f"({why})")
        if ctx.graph.option(UNLIMITED_DEPTH) != "true":
            _check_depth(ctx, physical)
        return PassResult(plan, False)


def _check_depth(ctx: SyncInputs, physical: Physical) -> None:
    limits = ctx.limits
    for stream, used in sorted(physical.counted.items()):
        huge = stream in physical.huge_streams
        depth = limits.max_task_per_huge_stream if huge else limits.max_task_per_stream
        if used + PROFILING_UNITS > depth:
            option = "max_task_per_huge_stream" if huge else "max_task_per_stream"
            raise LimitExceeded(
                f"physical stream {stream} needs {used} task units + {PROFILING_UNITS} "
                f"profiling units, over its depth of {depth} (option streamalloc.{option}); "
                + _why_over(physical, stream, huge))


def _why_over(physical: Physical, stream: int, huge: bool) -> str:
    """Why the split left a stream over its depth: one node too large for it, or, in
    single-stream mode, a piece of the huge stream 0, which GE splits at the huge depth though
    only stream 0 is created huge (spec 5.2, 5.3)."""
    if huge or not physical.huge_streams or physical.split_to_logic.get(stream) != 0:
        return "a single node (with its own Send/Recv) larger than a stream cannot be split"
    pieces = sum(u for s, u in physical.counted.items()
                 if s == 0 or physical.split_to_logic.get(s) == 0)
    # unsplit, stream 0 holds fewer units than its pieces (no split events), so this many
    # with GE's reserve never splits
    return (f"in single-stream mode GE splits the huge stream 0 at the huge depth "
            f"({physical.capacity}), but creates only stream 0 huge, so this piece of it is a "
            f"normal stream; stream 0 and its pieces hold {pieces} task units: "
            f"streamalloc.max_task_per_huge_stream={pieces + RESERVED_UNITS} or more keeps them "
            "all on stream 0")
