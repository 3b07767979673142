"""Phase A and Phase B in GE's order (spec 1.5), over any allocator's logical allocation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from streamalloc.allocation import Allocation
from streamalloc.errors import AllocationInfeasible, LimitExceeded, UsageError
from streamalloc.facts import INVALID, RESERVED_UNITS
from streamalloc.ir.graph import Graph
from streamalloc.sync import activation
from streamalloc.sync.context import SyncContext
from streamalloc.sync.generate import Namer, check_pairs, sync_task
from streamalloc.sync.insert import insert_pairs
from streamalloc.sync.limits import Limits, limits_of
from streamalloc.sync.minimal import minimize
from streamalloc.sync.model import SyncMaps, Task
from streamalloc.sync.multiplexing import multiplex_events
from streamalloc.sync.numbering import renumber, reuse_multi_dims
from streamalloc.sync.optimize import optimize
from streamalloc.sync.result import SyncEvent, SyncNode, SyncPlan
from streamalloc.sync.split import SplitResult, split_streams
from streamalloc.sync.switch import SwitchState, handle_switches, place_after_graph
from streamalloc.sync.tasks import collect, task_units

# A7, the elimination of redundant pairs: GE's four optimisations (spec 3), or the transitive
# reduction of program order + activation + pairs (`minimal`). Everything else is shared.
ELIMINATION: dict[str, Callable[[SyncContext, SyncMaps], None]] = {
    "ge": optimize, "minimal": minimize}
SYNC_STRATEGIES = tuple(ELIMINATION)


def synchronize(graph: Graph, allocation: Allocation, sync: str = "ge") -> SyncPlan:
    """Events (or notifies), their elimination (`sync`: "ge" or "minimal") and numbering, the
    split, the task order."""
    if sync not in ELIMINATION:
        raise UsageError(f"sync strategy {sync!r} is not available; valid: "
                         f"{', '.join(SYNC_STRATEGIES)}")
    limits = limits_of(graph)
    ctx = SyncContext(graph, {n: a.stream for n, a in allocation.nodes.items()},
                      {n: list(a.attached) for n, a in allocation.nodes.items()})
    activation.by_label(ctx)
    activation.for_subgraphs(ctx)
    notify = graph.option("ge.event") == "notify"
    maps = SyncMaps()
    insert_pairs(ctx, maps)
    ELIMINATION[sync](ctx, maps)
    maps.counter = renumber(maps)
    reuse_multi_dims(ctx, maps)
    if not notify:
        multiplex_events(ctx, maps)
    events = SyncMaps(counter=0 if notify else maps.counter)
    switches = SwitchState()
    made = handle_switches(ctx, switches, allocation.total_stream_num)
    stream_num = allocation.total_stream_num + len(made)
    activation.loop_activation(ctx, events, stream_num, None)
    extra = _attached_to_netoutput(ctx, events)
    namer = Namer(graph.root.name)
    tasks = place_after_graph(_phase_a_tasks(ctx, (maps, events), notify, namer, extra), made,
                              _graph_parents(graph))
    plan = _phase_b(graph, allocation, ctx, tasks,
                    (limits, events, namer, maps, notify, stream_num, switches))
    return replace(plan, sync=sync)


def _graph_parents(graph: Graph) -> dict[str, str | None]:
    """Each graph's enclosing graph (None for the root)."""
    return {c.name: graph.node(c.parent).graph if c.parent else None for c in graph.graphs()}


def _attached_to_netoutput(ctx: SyncContext, events: SyncMaps) -> list[tuple[int, str, int]]:
    """A13 (spec 2.7): the last user of each attached stream signals its graph's NetOutput."""
    last: dict[int, str] = {}
    for name in ctx.order:
        for a in ctx.attached.get(name, ()):
            if a != INVALID:
                last[a] = name
    extra = []
    for a in sorted(last):
        graph = ctx.graph.graph(ctx.node(last[a]).graph)
        out = next((n.name for n in graph.nodes if n.type == "NetOutput"), None)
        if out is not None:
            x = events.counter
            events.counter += 1
            events.recv[out].append(x)
            extra.append((x, last[a], a))
    return extra


def _phase_a_tasks(ctx: SyncContext, spaces: tuple[SyncMaps, SyncMaps], notify: bool,
                   namer: Namer, extra: list[tuple[int, str, int]]) -> list[Task]:
    """A14: every graph node as a task, its Recvs before it, its Sends after it."""
    maps, events = spaces
    kind = ("Send_Notify", "Recv_Notify") if notify else ("Send", "Recv")
    extra_sends: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for x, sender, stream in extra:
        extra_sends[sender].append((x, stream))
    ordered: list[Task] = []
    for name in ctx.order:
        node = ctx.node(name)
        task = Task(name, node.type, node.graph, ctx.stream[name], list(ctx.attached[name]))
        sends = [sync_task(namer, kind[0], x, task.stream, task) for x in maps.send.get(name, ())]
        sends += [sync_task(namer, "Send", x, task.stream, task)
                  for x in events.send.get(name, ())]
        sends += [sync_task(namer, "Send", x, s, task) for x, s in extra_sends[name]]
        recvs = [sync_task(namer, kind[1], x, task.stream, task) for x in maps.recv.get(name, ())]
        recvs += [sync_task(namer, "Recv", x, task.stream, task)
                  for x in events.recv.get(name, ())]
        ordered += [*recvs, task, *sends]
    return ordered


def _phase_b(graph: Graph, allocation: Allocation, ctx: SyncContext, tasks: list[Task],
             state: tuple[Limits, SyncMaps, Namer, SyncMaps, bool, int, SwitchState]
             ) -> SyncPlan:
    limits, events, namer, maps, notify, stream_num, switches = state
    max_task, huge = _capacity(graph, allocation, tasks, limits)
    if graph.option("streamalloc.unlimited_stream_depth") == "true":
        result = SplitResult(stream_num, [set() for _ in range(stream_num)],
                             {s: s for s in range(stream_num)}, event_num=events.counter)
    else:
        units_of = collect(graph, tasks, max_task, ctx.active_stream_list)
        result = split_streams(graph, tasks, units_of, (stream_num, max_task, events.counter))
        for task in tasks:
            if not task.is_sync:
                ctx.stream[task.name] = task.stream
        activation.after_split(ctx, result.split_streams, result.opened_by)
        made = handle_switches(ctx, switches, result.stream_num)  # B5 repeats 6.3
        result.stream_num += len(made)
        tasks = place_after_graph(tasks, made, _graph_parents(graph))
    counted = _units(graph, tasks)  # what the split counted; its own Send/Recv come after
    tasks = _with_split_events(tasks, result, namer)
    check_pairs(tasks)
    plan = _plan(allocation, ctx, tasks, result, (maps.counter if notify else 0, huge))
    _check_limits(plan, limits, (max_task, counted))
    return plan


def _units(graph: Graph, tasks: list[Task]) -> dict[int, int]:
    units: dict[int, int] = defaultdict(int)
    for task in tasks:
        for stream, used in task_units(graph, task).items():
            if stream != INVALID:
                units[stream] += used
    return units


def _capacity(graph: Graph, allocation: Allocation, tasks: list[Task],
              limits: Limits) -> tuple[int, tuple[int, ...]]:
    """B1 (spec 5.2): a single-stream model that overflows a stream gets the huge stream 0."""
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


def _plan(allocation: Allocation, ctx: SyncContext, tasks: list[Task], result: SplitResult,
          counts: tuple[int, tuple[int, ...]]) -> SyncPlan:
    notify_count, huge = counts
    streams: dict[int, list[str]] = {s: [] for s in range(result.stream_num)}
    units: dict[int, int] = defaultdict(int)
    senders: dict[tuple[str, int], Task] = {}
    receivers: dict[tuple[str, int], Task] = {}
    for task in tasks:
        if task.stream == INVALID:
            continue
        streams[task.stream].append(task.name)
        units[task.stream] += sum(task_units(ctx.graph, task).values())
        if task.is_sync and task.type != "StreamActive":
            side = senders if task.type.startswith("Send") else receivers
            side[(task.sync_kind, task.sync_id)] = task
    events = tuple(SyncEvent(x, kind, s.peer, receivers[(kind, x)].peer, s.stream,
                             receivers[(kind, x)].stream)
                   for (kind, x), s in sorted(senders.items(), key=lambda i: (i[0][0], i[0][1])))
    sync_nodes = tuple(SyncNode(t.name, t.type, t.stream, t.sync_id, t.peer)
                       for t in tasks if t.is_sync)
    return SyncPlan(
        allocation=allocation,
        physical=MappingProxyType({n: ctx.stream[n] for n in allocation.nodes}),
        streams=MappingProxyType({s: tuple(v) for s, v in streams.items()}),
        events=events, sync_nodes=sync_nodes,
        activations=MappingProxyType({n: tuple(s) for n, s in ctx.active_stream_list.items()}),
        split_to_logic=MappingProxyType(dict(result.split_to_logic)), huge_streams=huge,
        event_count=result.event_num, notify_count=notify_count,
        units=MappingProxyType(dict(units)))


def _check_limits(plan: SyncPlan, limits: Limits, capacity: tuple[int, dict[int, int]]) -> None:
    max_task, counted = capacity
    checks = [("streams", plan.physical_stream_count, limits.max_streams, "max_streams"),
              ("events", plan.event_count, limits.max_events, "max_events"),
              ("notifies", plan.notify_count, limits.max_notifies, "max_notifies")]
    for what, value, limit, option in checks:
        if value > limit:
            raise LimitExceeded(f"the plan needs {value} {what}, over the limit of {limit} "
                                f"(option streamalloc.{option})")
    for stream, used in sorted(counted.items()):
        if used + RESERVED_UNITS > max_task:
            raise LimitExceeded(f"physical stream {stream} needs {used} task units + "
                                f"{RESERVED_UNITS} reserved, "
                                f"over the capacity of {max_task} (a single node larger than "
                                "the capacity cannot be split)")
