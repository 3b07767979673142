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
  + wait, the time of M) (`_Join`): Inception's 4-branch modules pay 2 us each;
* **split-join**: a fork f that feeds two unordered tasks x and y, both producers of j, puts
  them on streams in one of a few ways, each with its Sends and Recvs: j starts >= end(f) +
  the least of them (`split_join.least_gap`, exhaustive): GPT-2's q and k transposes between
  their Split and MatMul pay a Send and two Recvs (or run one after the other);
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

>>> jackson([(0.0, 2.0, 1.0), (0.0, 3.0, 0.0)])  # run the long-tailed task first
5.0
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal.split_join import least_gap
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.bounds import lower_bounds
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.plan import plan_from_dict
from streamalloc.runtime_emu.program import TASK, Program, compile_program
from streamalloc.sync.driver import synchronize
from streamalloc.sync.result import SyncPlan

Job = tuple[float, float, float]  # (head, time, tail)
SWAP_SIZE = 10  # members a task may replace in a clique's local search: T5's bound reaches
# 1924.1 us from 10 on (1916.1 with 1 to 8), in 0.3 s
SPLIT_PAIRS = 4  # a fork's longest producers of a join paired by `_split_join`
SYNC_AWARE_MAX_TASKS = 2_000  # graph tasks: its cliques and fork-joins grow faster than linearly
# (a 2,000-node generated graph: 4.8 s, 10k: 143 s; every real model <= 0.6 s)
SERIAL_SPAN = 64  # forks (in topological positions before a join) whose pairwise exclusive
# tasks between are counted one at a time


@dataclass(frozen=True, slots=True)
class SyncAwareBound:
    """The bound in microseconds and its parts (sync-aware path, clique, energy)."""

    bound_us: float
    path_us: float
    clique_us: float
    energy_us: float


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
    latency = _Latency(sync, record, wait)
    timed = [t for t in graph_tasks if time[t] > 0]
    overlap = _overlaps(program, table, timed, _closure(graph_tasks, program.preds),
                        _closure(graph_tasks[::-1], succs))
    head = _heads(graph_tasks, program.preds, succs, time, real=real, latency=latency,
                  overlap=overlap)
    tail = _heads(graph_tasks[::-1], succs, program.preds, time, real=real, latency=latency,
                  overlap=overlap)
    path = max((head[t] + time[t] + tail[t] for t in graph_tasks), default=0.0)

    def clique_bound(members: Sequence[int]) -> float:
        return jackson([(head[t], time[t], tail[t]) for t in members])

    clique = max((clique_bound(c) for c in _cliques(program, table, graph_tasks, time,
                                                    overlap=overlap, value=clique_bound)),
                 default=0.0)
    jobs: dict[str, list[Job]] = {}  # per engine: (head, unit-time, tail)
    for t in graph_tasks:
        engine = program.engines[t]
        if engine is not None and real[t]:
            jobs.setdefault(engine, []).append((head[t], program.widths[t] * time[t], tail[t]))
    energy = max((_energy(jobs[e], table.engine(e).units) for e in sorted(jobs)), default=0.0)
    return SyncAwareBound(max(path, clique, energy), path, clique, energy)


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


@dataclass(frozen=True, slots=True)
class _Latency:
    """What a cross-stream dependency adds (`sync`), and the least record (Send) and wait
    (Recv) a stream runs for one, in us."""

    sync: float
    record: float
    wait: float

    @property
    def window(self) -> float:
        """What a fork-join's Send and Recv take on the stream of its fork and join."""
        return self.record + self.wait


def _heads(order: Sequence[int], preds: Sequence[Sequence[int]] | dict[int, list[int]],
           succs: Sequence[Sequence[int]] | dict[int, list[int]], time: Sequence[float], *,
           real: Sequence[bool], latency: _Latency, overlap: dict[int, int]
           ) -> dict[int, float]:
    """Earliest start of each task in `order` (a topological order over `preds`; `succs` the
    reverse edges); run on the reversed order with successors, the least time after each
    task's end."""
    head: dict[int, float] = {}
    before = _closure(order, preds)
    after = _closure(order[::-1], succs)
    position = {t: i for i, t in enumerate(order)}
    related = {t: before[t] | after[t] for t in order}  # the tasks ordered with each
    for t in order:
        ends = [(head[p], time[p]) for p in preds[t]]
        start = max((h + d for h, d in ends), default=0.0)
        timed = [(head[p], time[p]) for p in preds[t] if real[p]]
        if len(timed) >= 2 and latency.sync > 0:
            one_stream = _back_to_back(timed)
            start = max(start, min(one_stream, min(h + d for h, d in timed) + latency.sync))
        if len(preds[t]) >= 2:
            join = _Join(t, head, time, succs, before, after, position, overlap)
            start = max(start, join.start(start, latency),
                        _split_join(t, preds, time, head, related=related, latency=latency,
                                    position=position))
        head[t] = start
    return head


def _split_join(j: int, preds: Sequence[Sequence[int]] | dict[int, list[int]],
                time: Sequence[float], head: dict[int, float], *, related: dict[int, int],
                latency: _Latency, position: dict[int, int]) -> float:
    """j >= end(f) + `least_gap` for two unordered producers x, y of j that f alone feeds
    (zero-time tasks between count as direct edges: a Reshape): the split of q, k and v
    before an attention block's first MatMul. Per fork, its SPLIT_PAIRS longest such
    producers are paired."""
    fed: dict[int, list[int]] = {}
    for x in _timed_nearest(j, preds, time):
        for f in _timed_nearest(x, preds, time):
            fed.setdefault(f, []).append(x)
    best = 0.0
    for f, branches in fed.items():
        longest = sorted(branches, key=lambda x: (-time[x], position[x]))[:SPLIT_PAIRS]
        for x, y in itertools.combinations(longest, 2):
            if not related[x] >> y & 1:
                gap = least_gap(time[x], time[y], latency.record, latency.wait)
                best = max(best, head[f] + time[f] + gap)
    return best


def _timed_nearest(t: int, preds: Sequence[Sequence[int]] | dict[int, list[int]],
                   time: Sequence[float]) -> list[int]:
    """The tasks with time before t, reached over zero-time tasks only (ascending tids)."""
    found: set[int] = set()
    stack = list(preds[t])
    seen = set(stack)
    while stack:
        p = stack.pop()
        if time[p] > 0:
            found.add(p)
            continue
        for q in preds[p]:
            if q not in seen:
                seen.add(q)
                stack.append(q)
    return sorted(found)


@dataclass
class _Join:
    """A task `j` with several producers and the forks before it: tasks with two or more
    successors that reach `j` (its own producers included)."""

    j: int
    head: dict[int, float]
    time: Sequence[float]
    succs: Sequence[Sequence[int]] | dict[int, list[int]]
    before: dict[int, int]  # tasks before each task, bitmasks over tids
    after: dict[int, int]   # tasks after each task
    position: dict[int, int]
    overlap: dict[int, int]  # per timed task, the tasks that may run beside it (`_overlaps`)

    def start(self, known: float, latency: _Latency) -> float:
        """Whatever the streams, the tasks between a fork f and j (M: after f, before j) and
        their longest path L give j >= end(f) + min(L + window, time of M), window <= sync:
        * f and j on two streams: every path from f to j changes streams (+ sync);
        * on one stream S with M: M runs one task at a time on S between them;
        * on S, some of M elsewhere: a Send and a Recv on S between f and j (`window`),
          besides M's tasks on S, and a path through a task off S leaves S and comes back
          (+ 2 sync): a longest path either runs on S or pays twice, so >= L + window.
        And j >= end(f) + the time of tasks of M that are pairwise exclusive (ordered, or
        contending for their engine's units): they run one at a time on any streams (GPT-2's
        GELU: x * 0.5 beside the x^3 ... tanh chain, all on the 32 cores). Counted for the
        forks at most SERIAL_SPAN tasks before j (far ones have large M, and a cost to match).
        The latest such start over the forks whose path could beat `known`."""
        dist = self._distances()
        best = known
        for f, length in dist.items():
            if self._branches(f, dist) < 2:
                continue
            end = self.head[f] + self.time[f]
            near = self.position[self.j] - self.position[f] <= SERIAL_SPAN
            if end + length + latency.window <= best and not near:
                continue
            tasks = _members(self.after[f] & self.before[self.j])
            gain = min(length + latency.window, sum(self.time[m] for m in tasks))
            if near:
                gain = max(gain, self._one_at_a_time(tasks))
            best = max(best, end + gain)
        return best

    def _one_at_a_time(self, tasks: list[int]) -> float:
        """The time of a greedy set of pairwise exclusive tasks, longest first."""
        chosen, total = 0, 0.0
        for t in sorted((t for t in tasks if self.time[t] > 0),
                        key=lambda t: (-self.time[t], self.position[t])):
            if not self.overlap[t] & chosen:
                chosen |= 1 << t
                total += self.time[t]
        return total

    def _distances(self) -> dict[int, float]:
        """Per task before j, the longest time from its end to j's start over the tasks
        between them."""
        dist: dict[int, float] = {}
        for x in sorted(_members(self.before[self.j]), key=lambda t: -self.position[t]):
            dist[x] = max((0.0 if s == self.j else self.time[s] + dist[s]
                           for s in self.succs[x] if s == self.j or s in dist), default=0.0)
        return dist

    def _branches(self, f: int, dist: dict[int, float]) -> int:
        return sum(1 for s in self.succs[f] if s == self.j or s in dist)


def _members(mask: int) -> list[int]:
    """The tids of a bitmask."""
    found = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found


def _closure(order: Sequence[int], preds: Sequence[Sequence[int]] | dict[int, list[int]]
             ) -> dict[int, int]:
    """Per task of `order` (topological over `preds`), the tasks before it (a bitmask over
    tids)."""
    before: dict[int, int] = {}
    for t in order:
        mask = 0
        for p in preds[t]:
            mask |= before[p] | (1 << p)
        before[t] = mask
    return before


def _back_to_back(jobs: Sequence[tuple[float, float]]) -> float:
    """When jobs (release, time) on one stream are all done at the earliest."""
    now = 0.0
    for release, duration in sorted(jobs):
        now = max(now, release) + duration
    return now


def jackson(jobs: Sequence[Job]) -> float:
    """Jackson's preemptive schedule of jobs (head, time, tail) on one machine: max over jobs
    of end + tail, a lower bound of every non-preemptive schedule (ties: input order)."""
    pending = sorted(range(len(jobs)), key=lambda j: (jobs[j][0], j))
    ready: list[tuple[float, int, float]] = []  # (-tail, job, time left)
    now, best, i = 0.0, 0.0, 0
    while i < len(pending) or ready:
        if not ready:
            now = max(now, jobs[pending[i]][0])
        while i < len(pending) and jobs[pending[i]][0] <= now:
            j = pending[i]
            heapq.heappush(ready, (-jobs[j][2], j, jobs[j][1]))
            i += 1
        neg_tail, j, left = heapq.heappop(ready)
        until = jobs[pending[i]][0] if i < len(pending) else float("inf")
        run = min(left, until - now)
        now += run
        if run < left:
            heapq.heappush(ready, (neg_tail, j, left - run))
        else:
            best = max(best, now - neg_tail)
    return best


def _cliques(program: Program, table: CostTable, graph_tasks: Sequence[int],
             time: Sequence[float], *, overlap: dict[int, int],
             value: Callable[[Sequence[int]], float]) -> list[list[int]]:
    """Sets of pairwise exclusive tasks: the heaviest chain, and per engine its tasks wider
    than half its units, each grown by the longest exclusive tasks, then improved by swaps
    while they raise `value` (`_swapped`)."""
    units = {e: table.engine(e).units for e in {program.engines[t] for t in graph_tasks}
             if e is not None}
    position = {t: i for i, t in enumerate(graph_tasks)}
    by_length = sorted(overlap, key=lambda t: (-time[t], position[t]))
    seeds = [_heaviest_chain(program, graph_tasks, time, position)]
    for engine in sorted(units):
        wide = [t for t in graph_tasks if program.engines[t] == engine
                and 2 * program.widths[t] > units[engine]]
        if wide:
            seeds.append(wide)
    cliques = []
    for seed in seeds:
        # a task without device work takes no units and excludes nothing: left in, it would
        # keep every task it is not ordered with out of the chain's clique
        members = _grown([t for t in seed if time[t] > 0], by_length, overlap)
        cliques.append(_swapped(members, by_length, overlap, value))
    return cliques


def _overlaps(program: Program, table: CostTable, timed: Sequence[int],
              before: dict[int, int], after: dict[int, int]) -> dict[int, int]:
    """Per timed task, the timed tasks that may run at the same time (a bitmask over tids):
    not ordered with it, and together no wider than their engine when they share one."""
    everything = sum(1 << t for t in timed)
    on_engine: dict[str | None, int] = {}
    for t in timed:
        on_engine[program.engines[t]] = on_engine.get(program.engines[t], 0) | 1 << t
    fitting: dict[tuple[str, int], int] = {}  # (engine, room): its tasks at most that wide

    def beside(engine: str | None, width: int) -> int:
        if engine is None:  # a task that takes no units contends with none
            return everything
        room = table.engine(engine).units - width
        if (engine, room) not in fitting:
            fitting[(engine, room)] = sum(1 << t for t in timed if program.engines[t] == engine
                                          and program.widths[t] <= room)
        return (everything & ~on_engine[engine]) | fitting[(engine, room)]

    return {t: beside(program.engines[t], program.widths[t])
            & ~(before[t] | after[t] | 1 << t) for t in timed}


def _grown(members: list[int], candidates: Sequence[int], overlap: dict[int, int]
           ) -> list[int]:
    """`members` with each candidate, in order, that is exclusive with all members so far
    (may overlap none of them)."""
    mask = sum(1 << m for m in members)
    for t in candidates:
        if not (mask >> t & 1 or overlap[t] & mask):
            members.append(t)
            mask |= 1 << t
    return members


def _swapped(members: list[int], candidates: Sequence[int], overlap: dict[int, int],
             value: Callable[[Sequence[int]], float]) -> list[int]:
    """A local search from a clique grown by `_grown`: a candidate that is exclusive with all
    members but at most SWAP_SIZE of them replaces those, and the clique is grown again, when
    that raises `value`; until no candidate does. The greedy growth keeps the first long tasks
    it meets, and one short task can block several long ones (T5: each layer's softmax is not
    exclusive with its v projection, which is exclusive with everything else of the chain's
    clique). A grown clique blocks every other candidate, so only the candidates that the
    replaced members blocked can join again."""
    rank = {t: i for i, t in enumerate(candidates)}
    mask = sum(1 << m for m in members)
    best = value(members)
    improved = True
    while improved:
        improved = False
        for t in candidates:
            blocking = overlap[t] & mask
            if mask >> t & 1 or blocking.bit_count() > SWAP_SIZE:
                continue
            trial_mask = (mask & ~blocking) | 1 << t
            trial = [m for m in members if not blocking >> m & 1] + [t]
            freed = 0
            for b in _members(blocking):
                freed |= overlap[b]
            for u in sorted(_members(freed & ~trial_mask), key=rank.__getitem__):
                if not overlap[u] & trial_mask:
                    trial.append(u)
                    trial_mask |= 1 << u
            found = value(trial)
            if found > best:
                members, mask, best, improved = trial, trial_mask, found, True
    return members


def _heaviest_chain(program: Program, graph_tasks: Sequence[int], time: Sequence[float],
                    position: dict[int, int]) -> list[int]:
    """A longest path over graph edges by task time (ties: first in T-order)."""
    longest: dict[int, float] = {}
    via: dict[int, int] = {}
    for t in graph_tasks:
        best = max(program.preds[t], key=lambda p: (longest[p], -position[p]), default=None)
        longest[t] = time[t] + (longest[best] if best is not None else 0.0)
        if best is not None:
            via[t] = best
    end = max(graph_tasks, key=lambda t: (longest[t], -position[t]), default=None)
    chain = []
    while end is not None:
        chain.append(end)
        end = via.get(end)
    return chain[::-1]


def graph_sync_aware_bound(graph: Graph, table: CostTable) -> SyncAwareBound:
    """The bound for a graph, from the program of its ge-mode plan (any plan would do: only
    the task times and dependencies are read)."""
    rules = default_rule_set(graph)
    plan = synchronize(graph, allocate_ge(graph, rules), sync="minimal")
    return sync_aware_bound(_program(graph, plan, table), table)


def makespan_bound(graph: Graph, plan: SyncPlan, table: CostTable) -> float:
    """The best lower bound this module knows on the emulated makespan of every plan of
    `graph` (`plan`: any of its plans), see `program_makespan_bound`."""
    return program_makespan_bound(_program(graph, plan, table), table)


def program_makespan_bound(program: Program, table: CostTable) -> float:
    """The same from the program of any plan of the graph: the sync-aware bound up to
    `SYNC_AWARE_MAX_TASKS` graph tasks, above that the emulator's (critical path, work over
    units)."""
    if len(program.topo) <= SYNC_AWARE_MAX_TASKS:
        return sync_aware_bound(program, table).bound_us
    lower = lower_bounds(program, table)
    return max(lower.critical_path_us, lower.work_over_units_us)


def _program(graph: Graph, plan: SyncPlan, table: CostTable) -> Program:
    return compile_program(graph, plan_from_dict(plan.to_json()), table)
