"""A lower bound on the makespan of every plan of a graph that also counts sync and core
contention: `sync_aware_bound`.

The emulator's bounds (critical path, work over units; `runtime_emu.bounds`) leave out what
streams cost. This bound, from the same compiled task times, uses facts that hold for
every plan whose streams are ordered by events and notifies (no stream activation: the plans
of static graphs):

* **sync**: a dependency between tasks on two streams is ordered by a record (a Send or
  SendNotify task, `record_us`) after the producer on its stream and a wait (`wait_us`) on the
  consumer's, so the consumer starts >= 2 us after the producer ends. A task with several
  producers either has them all on its own stream, where they run one at a time, or waits for
  one of them across streams: its earliest start (head) is at least
  min(the producers run back to back, the earliest producer end + sync), and never before its
  last producer ends; likewise the time after a task with several consumers (tail);
* **fork-join**: between a fork f and a later task j, the tasks M that come after f and before
  j (longest path L) either all run on f's and j's stream, one at a time, or some path changes
  streams: with f and j on two streams every path does (+ sync); on one stream S, a task of M
  elsewhere needs a Send and a Recv on S between f and j, and a longest path either runs on S
  beside them or leaves S and comes back (+ 2 sync). So j starts >= end(f) + min(L + record
  + wait, the time of M) (`fork_join`): Inception's 4-branch modules pay 2 us each;
* **split-join**: a fork f that feeds two unordered tasks x and y, both producers of j, puts
  them on streams in one of a few ways, each with its Sends and Recvs: j starts >= end(f) +
  the least of them (`split_join.least_gap`, exhaustive): GPT-2's q and k transposes between
  their Split and MatMul pay a Send and two Recvs (or run one after the other);
* **series**: between two consecutive tasks ordered with every other task (cut tasks), the
  tasks between run after the first and before the second; a relaxation of every plan of
  them (streams one task at a time, engines within their units, a Send after a producer and
  a Recv before a consumer on another stream, on their streams) solved by CP-SAT gives the
  least time between the two (`optimal/series.py`): SqueezeNet's fire modules pay the Send
  their fork runs before its own branch;
* **contention**: two tasks that are ordered by the graph, or that need more units of one
  engine together than it has (block dims w1 + w2 > units: the engine admits a task only when
  all its units are free), never overlap. A set of such pairwise exclusive tasks (a clique) is
  a one-machine problem with the heads and tails above, whose preemptive relaxation (Jackson's
  schedule: always run the released task with the longest tail) bounds its makespan; and a
  clique within M runs between f and j: j starts >= end(f) + its time (GPT-2's GELU);
* **energy**: an engine's tasks whose heads are >= r run after r on its units, and end before
  the makespan minus the least of their tails: makespan >= r + their unit-time (block dim x
  time) / units + that tail (work over units is r = 0, no tail); likewise from the end.

The bound is the largest of: the head + time + tail of any task, Jackson's bound of a few
greedy cliques (the heaviest chain's timed tasks grown by the longest tasks exclusive with all
members; per engine, its tasks wider than half its units likewise; each then improved by swaps:
a task exclusive with all members but a few replaces those few, the clique grown again, when
that raises Jackson's bound) and the energy bound of each engine.
Each term bounds every plan, so the maximum does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal.cliques import Job, cliques, jackson, overlaps
from streamalloc.optimal.fork_join import Latency, closure, heads
from streamalloc.optimal.series import SegmentRun, series_floors
from streamalloc.recent import Recent
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.bounds import lower_bounds
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.plan import plan_from_dict
from streamalloc.runtime_emu.program import TASK, Program, compile_program
from streamalloc.sync.driver import synchronize
from streamalloc.sync.limits import without_device_limits
from streamalloc.sync.result import SyncPlan

_BOUNDS: Recent[tuple[float, tuple[SegmentRun[str], ...]]] = Recent(4)
SYNC_AWARE_MAX_TASKS = 2_000  # graph tasks: its cliques and fork-joins grow faster than linearly
# (a 2,000-node generated graph: 1.6-2.6 s, 10k: 45 s; the real models of bench/ about 1 s at
# most but Inception v1, 1.3 s: its series floors)


@dataclass(frozen=True, slots=True)
class SyncAwareBound:
    """The bound in microseconds and its parts (sync-aware path, clique, energy); and the runs
    its series floors' solves found, each task named by its node (`series.SegmentRun`)."""

    bound_us: float
    path_us: float
    clique_us: float
    energy_us: float
    segment_runs: tuple[SegmentRun[str], ...] = ()


def sync_aware_bound(program: Program, table: CostTable) -> SyncAwareBound:
    """The bound of the module docstring for the graph tasks of `program` (any plan's program
    of the graph: its task times and dependencies do not depend on the plan, and every tie
    goes to the task first in T-order, never to a tid, so neither does the bound)."""
    graph_tasks = list(program.topo)
    time = [program.durations[t] if program.kinds[t] == TASK else 0.0
            for t in range(program.task_count())]
    succs: dict[int, list[int]] = {t: [] for t in graph_tasks}
    for t in graph_tasks:
        for p in program.preds[t]:
            succs[p].append(t)
    sync = min(table.event_record_us + table.event_wait_us,
               table.notify_record_us + table.notify_wait_us)
    # the least record and wait, of either space (a fork-join's Send and Recv)
    record = min(table.event_record_us, table.notify_record_us)
    wait = min(table.event_wait_us, table.notify_wait_us)
    if program.activates:  # an activated stream starts when its activator ends: no latency
        sync = record = wait = 0.0
    real = [program.kinds[t] == TASK for t in range(program.task_count())]
    latency = Latency(sync, record, wait)
    timed = [t for t in graph_tasks if time[t] > 0]
    before, after = closure(graph_tasks, program.preds), closure(graph_tasks[::-1], succs)
    overlap = overlaps(program, table, timed, before, after)
    series = None if program.activates else series_floors(
        graph_tasks, program.preds, real,
        {t: (time[t], engine, program.widths[t], table.engine(engine).units if engine else 0)
         for t in graph_tasks if real[t] for engine in (program.engines[t],)},
        before=before, after=after, record=record, wait=wait)
    floors = {} if series is None else series.floors
    head = heads(graph_tasks, program.preds, succs, time, real=real, latency=latency,
                 overlap=overlap, before=before, after=after, floors=floors)
    tail = heads(graph_tasks[::-1], succs, program.preds, time, real=real, latency=latency,
                 overlap=overlap, before=after, after=before,
                 floors={a: (b, gap) for b, (a, gap) in floors.items()})
    path = max((head[t] + time[t] + tail[t] for t in graph_tasks), default=0.0)

    def clique_bound(members: Sequence[int]) -> float:
        return jackson([(head[t], time[t], tail[t]) for t in members])

    clique = max((clique_bound(c) for c in cliques(program, table, graph_tasks, time,
                                                   overlap=overlap, value=clique_bound)),
                 default=0.0)
    jobs: dict[str, list[Job]] = {}  # per engine: (head, unit-time, tail)
    for t in graph_tasks:
        engine = program.engines[t]
        if engine is not None and real[t]:
            jobs.setdefault(engine, []).append((head[t], program.widths[t] * time[t], tail[t]))
    energy = max((_energy(jobs[e], table.engine(e).units) for e in sorted(jobs)), default=0.0)
    runs = () if series is None else tuple(
        SegmentRun(tuple(program.names[t] for t in run.members), run.streams, run.starts,
                   run.kind) for run in series.runs)
    return SyncAwareBound(max(path, clique, energy), path, clique, energy, runs)


def _energy(jobs: Sequence[Job], units: int) -> float:
    """Work over units after a release (before a tail): the engine's tasks whose head is at
    least r run within [r, makespan - their least tail] on its units, so makespan >= r +
    their unit-time / units + that tail; and the mirror image for tails."""
    best = 0.0
    for key, other in ((0, 2), (2, 0)):
        work, least = 0.0, float("inf")
        for job in sorted(jobs, key=lambda j: -j[key]):
            work += job[1]
            least = min(least, job[other])
            best = max(best, job[key] + work / units + least)
    return best


def graph_sync_aware_bound(graph: Graph, table: CostTable) -> SyncAwareBound:
    """The bound for a graph, from the program of its ge-mode plan (any plan would do: only
    the task times and dependencies are read)."""
    rules = default_rule_set(graph)
    plan = synchronize(graph, allocate_ge(graph, rules), sync="minimal")
    return sync_aware_bound(_program(graph, plan, table), table)


def makespan_bound(graph: Graph, plan: SyncPlan, table: CostTable) -> float:
    """The best lower bound this module knows on the emulated makespan of every plan of
    `graph` (`plan`: any of its plans), see `_program_bound`."""
    return graph_makespan_bound(graph, table, lambda: _program(graph, plan, table))


def graph_makespan_bound(graph: Graph, table: CostTable, program: Callable[[], Program]
                         ) -> float:
    """The same, from `program()`, the program of any plan of the graph, made only when the
    bound is not known yet: it is kept per node table (the graph in another order or with
    other device limits has the same tasks) and cost table, since the makespan search's
    floor, the driver's status and compare's row ask for the same bound (seconds on
    Inception v1, its series floors)."""
    return _graph_bound(graph, table, program)[0]


def segment_runs(graph: Graph, plan: SyncPlan, table: CostTable) -> tuple[SegmentRun[str], ...]:
    """The runs of the segments the bound of `makespan_bound` solved (none above
    `SYNC_AWARE_MAX_TASKS` graph tasks), their tasks named by node: one computation for
    both."""
    return _graph_bound(graph, table, lambda: _program(graph, plan, table))[1]


def _graph_bound(graph: Graph, table: CostTable, program: Callable[[], Program]
                 ) -> tuple[float, tuple[SegmentRun[str], ...]]:
    return _BOUNDS.get_or_make(("makespan bound", id(graph.by_name), id(table)),
                               (graph.by_name, table),
                               lambda: _program_bound(program(), table))


def _program_bound(program: Program, table: CostTable) -> tuple[float, tuple[SegmentRun[str], ...]]:
    """From the program of any plan of the graph: the sync-aware bound and its segment runs up
    to `SYNC_AWARE_MAX_TASKS` graph tasks, above that the emulator's bound (critical path,
    work over units) and none."""
    if len(program.topo) <= SYNC_AWARE_MAX_TASKS:
        bound = sync_aware_bound(program, table)
        return bound.bound_us, bound.segment_runs
    lower = lower_bounds(program, table)
    return max(lower.critical_path_us, lower.work_over_units_us), ()


def _program(graph: Graph, plan: SyncPlan, table: CostTable) -> Program:
    """The program of `plan` with the device's limits lifted: the bound reads only its tasks,
    and the plan may be a ge-mode plan over a limit (the optimal mode's baseline)."""
    return compile_program(without_device_limits(graph), plan_from_dict(plan.to_json()), table)
