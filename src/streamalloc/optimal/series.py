"""Series floors of the sync-aware bound (`optimal/bounds.py`): the least time between two
consecutive cut tasks, over every plan, from a relaxation of the plan solved by CP-SAT.

A cut task is ordered with every other task (each one is before or after it). Between two
consecutive cut tasks a and b lie the segment's tasks: after a, before b. Every plan runs
them on some streams after a ends, and b starts after them. Whatever the plan, its run
satisfies, between a's end and b's start:

* tasks on one stream run one at a time; an engine's tasks together hold at most its units;
* a task starts after its producers end; with a producer u on another stream, the first Send
  after u on u's stream (record latency) ends before the last Recv before the task on the
  task's stream (wait latency) begins, and neither overlaps a task of its stream. Two such
  Sends (or Recvs) may be one task: they may overlap each other, never a task.

The least time from a's end to b's start under these facts (CP-SAT, with the streams as
variables: a segment's tasks use at most as many streams as it has tasks; times rounded down
to the model's unit, a's time up) is a floor every plan's run meets: b starts >= end(a) +
floor (`series_floors`). SqueezeNet's fire modules then count the Send a fork runs before
its own branch: its bound rises from 218.7 to 230.3 us, its best plan runs 230.5. A segment
whose solve stops at the time limit gives CP-SAT's bound.

Tasks without a stream's work (kind NOP) are left out: a dependency through them still
orders their producer and consumer, so it becomes a direct one.

A solve also gives a run of the segment that meets those facts: each task's stream and start
(`SegmentRun`). The makespan objective tries them as plans of their segments
(`optimal/segment_plans.py`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from ortools.sat.python import cp_model

from streamalloc.solver.run import interruptible_solve

SCALE = 100  # model time unit: 0.01 us; every time is rounded down, so the floor stays one
SEGMENT_MAX_TASKS = 16  # a segment's tasks (its two cut tasks included) solved; larger ones
# get no floor (Inception v2's 36-task modules: no higher bound, 1.8 s of wall time)
SEGMENT_TIME = 2.5  # deterministic seconds a segment's solve may take: Inception v1's 13-task
# modules are solved to optimality, the slowest in 0.05 (with the LP, 2.2; stopped at 0.2
# then, its floor stayed 19.8 us under its optimum, 26.5: the bound 280.2 us, not 286.9)
SERIES_TIME = 5.0  # deterministic seconds all segments' solves may take together (Inception
# v1: 0.16; 3.1 with the LP, for 2.5x the wall time)
SEGMENTS = 16  # distinct segments solved (equal ones are solved once: BERT's 11 layers)
ALL_SYNC_TASKS = 8  # segments up to this many tasks are solved with every Send and Recv on
# its stream at once; larger ones first with a fork's Sends and a join's Recvs only (from
# nothing, the full model took Inception v1's modules 0.14-0.49 deterministic s, 2-6 s of wall
# time each, for the same floors; from the smaller model's floor and run, 0.2-0.6 s)


Segment = tuple[tuple[tuple[int, str | None, int, int], ...], tuple[tuple[int, ...], ...], int]
# per task (time in model units rounded down, engine, block dim, the engine's units), per task
# its producers (indices into the segment, which is in a topological order: first a, last b),
# and a's time rounded up: the gap measured from a's start less it never exceeds the real one
Solution = tuple[tuple[int, ...], tuple[int, ...]]  # per task its stream (0: a's; numbered by
# first task) and start (model units, a at 0)


Member = TypeVar("Member", int, str)


class SegmentRun(NamedTuple, Generic[Member]):
    """A solved segment's run: its tasks (a first, b last), each one's stream and start as in
    `Solution`, and which distinct segment it is (equal segments share one solve: the same
    `kind`)."""

    members: tuple[Member, ...]  # task ids, or node names (`bounds` names them)
    streams: tuple[int, ...]
    starts: tuple[int, ...]
    kind: int


class Series(NamedTuple):
    """Per cut task b with a segment before it, (a, the floor in us between a's end and b's
    start); and the runs of the segments whose solve found one, in order."""

    floors: dict[int, tuple[int, float]]
    runs: tuple[SegmentRun[int], ...]


def series_floors(order: Sequence[int],
                  preds: Mapping[int, Sequence[int]] | Sequence[Sequence[int]],
                  real: Sequence[bool],
                  segment_of: Mapping[int, tuple[float, str | None, int, int]], *,
                  before: Mapping[int, int], after: Mapping[int, int], record: float,
                  wait: float) -> Series:
    """The floors and runs of `Series`. `order`: the graph's tasks in a topological order over
    `preds`; `real`: per task, whether it has a stream's work; `segment_of`: per such task its
    time in us, engine, block dim and the engine's units; `before` and `after`: per task the
    tasks before and after it (bitmasks over tasks, `fork_join.closure`)."""
    direct: dict[int, set[int]] = {}  # per task, its producers with work, over those without
    for t in order:
        direct[t] = set()
        for p in preds[t]:
            direct[t] |= {p} if real[p] else direct[p]
    tasks = [t for t in order if real[t]]
    position = {t: i for i, t in enumerate(tasks)}
    cuts = [position[t] for t in cut_tasks(tasks, before, after)]
    floors: dict[int, tuple[int, float]] = {}
    solved: dict[Segment, tuple[float, Solution | None, int]] = {}
    runs: list[SegmentRun[int]] = []
    left = SERIES_TIME
    for a, b in itertools.pairwise(cuts):
        if b - a < 2 or b - a + 1 > SEGMENT_MAX_TASKS:
            continue
        members = tasks[a:b + 1]  # between two consecutive cuts: after a and before b
        segment: Segment = (
            tuple((math.floor(segment_of[t][0] * SCALE + 1e-9), *segment_of[t][1:])
                  for t in members),
            tuple(tuple(sorted(position[p] - a for p in direct[t] if position[p] >= a))
                  for t in members),
            math.ceil(segment_of[members[0]][0] * SCALE - 1e-9))
        if segment not in solved:
            if len(solved) == SEGMENTS or left <= 0:
                continue
            gap, spent, solution = _solved(segment, math.floor(record * SCALE + 1e-9),
                                           math.floor(wait * SCALE + 1e-9),
                                           min(SEGMENT_TIME, left))
            solved[segment], left = (gap / SCALE, solution, len(solved)), left - spent
        floor, solution, kind = solved[segment]
        floors[tasks[b]] = (tasks[a], floor)
        if solution is not None:
            runs.append(SegmentRun(tuple(members), *solution, kind))
    return Series(floors, tuple(runs))


def cut_tasks(tasks: Sequence[int], before: Mapping[int, int], after: Mapping[int, int]
              ) -> list[int]:
    """The tasks of `tasks` ordered with each of the others (`before`, `after`: bitmasks of
    the tasks before and after each, over all tasks), in the order given."""
    mask = 0
    for t in tasks:
        mask |= 1 << t
    return [t for t in tasks if ((before[t] | after[t]) & mask).bit_count() == len(tasks) - 1]


def least_gap(segment: Segment, record: int, wait: int) -> float:
    """CP-SAT's lower bound, in model units, on the time from the first task's end to the
    last one's start under the module docstring's facts."""
    return _solved(segment, record, wait, SEGMENT_TIME)[0]


def _solved(segment: Segment, record: int, wait: int, time_limit: float
            ) -> tuple[float, float, Solution | None]:
    """`least_gap` within `time_limit` deterministic seconds, the time it took, and the best
    run the first solve found (None without one). A segment of more than ALL_SYNC_TASKS
    tasks is solved twice: with only a fork's Sends and a join's Recvs on their streams,
    then with every one, from the first solve's floor and run (the second model's runs are
    among the first's, so its floor is at least that one; hinted so, it is solved at once
    where the two floors are equal)."""
    n = len(segment[0])
    first = _Relaxation(segment, record, wait, every=n <= ALL_SYNC_TASKS)
    gap, spent, solution = _solve(first, time_limit, None)
    if n <= ALL_SYNC_TASKS or spent >= time_limit:
        return gap, spent, solution
    every = _Relaxation(segment, record, wait, every=True)
    every.model.add(every.start[n - 1] - segment[2] >= math.ceil(gap - 1e-9))
    more, extra, _ = _solve(every, time_limit - spent, solution)
    return max(gap, more), spent + extra, solution


def _solve(relaxation: _Relaxation, time_limit: float, hint: Solution | None
           ) -> tuple[float, float, Solution | None]:
    """CP-SAT's bound on `relaxation`'s objective within `time_limit` deterministic seconds,
    the time it took and its best run, hinted with `hint`'s streams and starts."""
    if hint is not None:
        for row, stream, start, chosen in zip(relaxation.stream, hint[0], relaxation.start,
                                              hint[1], strict=True):
            for k, on in enumerate(row):
                relaxation.model.add_hint(on, k == stream)
            relaxation.model.add_hint(start, chosen)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.num_workers = 1  # deterministic: the bound depends on the model only
    # (edge finding: Inception v1's module of four 4 us tasks in a row on 32 cores is solved
    # in 2.2 deterministic s; without it, its bound stayed 26% under the optimum after 5)
    solver.parameters.use_timetable_edge_finding_in_cumulative = True
    # Without the LP relaxation: the same optima on the 42 segments of the bench's inputs and
    # the GPT-2 small training step, for 0.3 deterministic s in all instead of 3.8 (4.3 s of
    # wall time instead of 12.5); Inception v1's module above in 0.05
    solver.parameters.linearization_level = 0
    status = interruptible_solve(solver, relaxation.model)
    if status == cp_model.INFEASIBLE:  # every one-stream run fits
        raise AssertionError("segment relaxation infeasible")
    solution = None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solution = (tuple(next(k for k, on in enumerate(row) if solver.boolean_value(on))
                          for row in relaxation.stream),
                    tuple(solver.value(start) for start in relaxation.start))
    return max(0.0, solver.best_objective_bound), solver.deterministic_time, solution


class _Relaxation:
    """The CP-SAT model of a segment's runs: per task its stream (k <= i for task i: streams
    numbered by their first task) and start; the first task starts at 0."""

    def __init__(self, segment: Segment, record: int, wait: int, *, every: bool) -> None:
        tasks, self.preds, first_up = segment
        self.every = every  # every Send and Recv takes its stream's time (else a fork's and
        # a join's only)
        self.n = n = len(tasks)
        self.model = model = cp_model.CpModel()
        self.time = [task[0] for task in tasks]
        self.horizon = sum(self.time) + 2 * n * (record + wait)
        self.stream = [[model.new_bool_var(f"s{i}_{k}") for k in range(i + 1)]
                       for i in range(n)]
        self.start = [model.new_int_var(0, self.horizon, f"t{i}") for i in range(n)]
        for i in range(n):
            model.add_exactly_one(self.stream[i])
        model.add(self.start[0] == 0)
        self.on: list[list[cp_model.IntervalVar]] = [[] for _ in range(n)]  # per stream
        for i in range(n):
            if self.time[i] > 0:
                for k in range(i + 1):
                    self.on[k].append(model.new_optional_fixed_size_interval_var(
                        self.start[i], self.time[i], self.stream[i][k], f"on{i}_{k}"))
        for intervals in self.on:
            if len(intervals) > 1:
                model.add_no_overlap(intervals)
        self._engines(tasks)
        self._sync(record, wait)
        model.minimize(self.start[n - 1] - first_up)

    def _engines(self, tasks: Sequence[tuple[int, str | None, int, int]]) -> None:
        """An engine's tasks hold at most its units together."""
        engines: dict[str, tuple[int, list[tuple[cp_model.IntervalVar, int]]]] = {}
        for i, (duration, engine, width, units) in enumerate(tasks):
            if duration > 0 and width > 0 and engine is not None:
                engines.setdefault(engine, (units, []))[1].append(
                    (self.model.new_fixed_size_interval_var(self.start[i], duration, f"e{i}"),
                     width))
        for engine in sorted(engines):
            units, held = engines[engine]
            if sum(width for _, width in held) > units:
                self.model.add_cumulative([iv for iv, _ in held], [w for _, w in held], units)

    def _sync(self, record: int, wait: int) -> None:
        """Producers before consumers; across streams the first Send after the producer and
        the last Recv before the consumer between them. A Send without a consumer elsewhere
        parks after the tasks of its stream, a Recv without a producer elsewhere before
        them. With `every`, every Send and Recv takes its stream's time; else only a fork's
        Sends and a join's Recvs."""
        model, start, time, every = self.model, self.start, self.time, self.every
        consumers = [0] * self.n
        for preds in self.preds:
            for u in preds:
                consumers[u] += 1
        sends: dict[int, cp_model.LinearExprT] = {}  # start of the first Send after u
        recvs: dict[int, cp_model.LinearExprT] = {}  # end of the last Recv before v
        for v, preds in enumerate(self.preds):
            for u in preds:
                model.add(start[v] >= start[u] + time[u])
                apart = model.new_bool_var(f"x{u}_{v}")
                for k in range(u + 1):
                    model.add(apart >= self.stream[u][k] - (self.stream[v][k] if k <= v else 0))
                if u not in sends:
                    sends[u] = self._sync_task(u, record, (0, 3 * self.horizon), f"send{u}",
                                               occupies=every or consumers[u] > 1)
                    model.add(sends[u] >= start[u] + time[u])
                if v not in recvs:
                    recvs[v] = wait + self._sync_task(v, wait, (-wait, self.horizon),
                                                      f"recv{v}",
                                                      occupies=every or len(preds) > 1)
                    model.add(start[v] >= recvs[v])
                model.add(recvs[v] >= sends[u] + record + wait).only_enforce_if(apart)

    def _sync_task(self, task: int, latency: int, span: tuple[int, int], name: str, *,
                   occupies: bool) -> cp_model.IntVar:
        """The start (within `span`) of a Send or Recv of `latency` on the stream of `task`:
        when it `occupies` the stream, it overlaps none of its tasks (other Sends and Recvs
        it may: they may be one task)."""
        begin = self.model.new_int_var(*span, name)
        for k, literal in enumerate(self.stream[task] if occupies else ()):
            mine = self.model.new_optional_fixed_size_interval_var(begin, latency, literal,
                                                                   f"{name}_{k}")
            self.model.add_no_overlap([*self.on[k], mine])
        return begin
