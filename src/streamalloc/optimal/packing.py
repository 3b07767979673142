"""Streams from a packing of the tasks on their engines' units: starts of the makespan
objective.

On the emulated device a task runs once its producers ended and its block dim of units of its
engine is free. The list schedule (`optimal/list_schedule.py`) starts each task as soon as the
device would, so a wide task waits behind narrow ones that took the units first. A packing
decides instead which tasks wait: CP-SAT solves the relaxation that keeps exactly those two
limits and leaves out streams and sync (each task an interval of its emulated time, after its
producers' ends plus any given delay; per engine, a Cumulative of block dims within its units;
the last end minimized), hinted with the serial schedule (`serial_schedule`), whose end is
also the horizon.

The packing is dealt to streams in order of start (`streams_of_packing`), and the plan runs the
nodes in that order (`optimal/order.py`). Sync makes the emulated run longer than the packing;
the critical-chain search starts from the fastest of all starts.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ortools.sat.python import cp_model

from streamalloc.optimal.found import Chains
from streamalloc.optimal.options import TIME_SCALE
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.node_tasks import NodeTask
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.run import PRESOLVE_MIN_TIME, configured_solver, interruptible_solve

LP_MAX_INTERVALS = 700  # above, CP-SAT packs without its LP relaxation, whose wall time its
# deterministic clock barely counts: the GPT-2 small training step's 1,257 intervals took 3.7 s
# for 0.75 deterministic s with it, 1.4 s without, for the same packing (the ResNet-50 step's 783
# the same packing too); below, the LP changes which of equal packings some models get


class Packing(NamedTuple):
    """Each node's start and end (TIME_SCALE units); CP-SAT's deterministic time."""

    starts: list[int]
    ends: list[int]
    deterministic_time: float


def packing(dag: TaskDag, tasks: Sequence[NodeTask], costs: CostTable, *, time_limit: float,
            seed: int, delays: Mapping[tuple[int, int], int] | None = None) -> Packing:
    """CP-SAT's best packing of the nodes' `tasks` (`graph_node_tasks`, in the DAG's order)
    within `time_limit` deterministic seconds (the serial schedule when it finds none, or for
    a limit of 0); `delays`: time added between the end of a producer and the start of its
    consumer, per edge of the transitive reduction."""
    durations = [math.ceil(time * TIME_SCALE) for _, time, _ in tasks]
    engines = [engine if engine is not None and width > 0 else None
               for engine, _, width in tasks]
    widths = [width for _, _, width in tasks]
    units = {e: costs.engine(e).units for e in sorted({e for e in engines if e is not None})}
    delay = dict(delays or {})
    hint = serial_schedule(dag, durations, engines, widths, units=units, delays=delay)
    if time_limit <= 0:
        return Packing(hint, [s + d for s, d in zip(hint, durations, strict=True)], 0.0)
    horizon = max((s + d for s, d in zip(hint, durations, strict=True)), default=0)
    cp = cp_model.CpModel()
    start = [cp.new_int_var(0, horizon - durations[v], f"start_{v}") for v in range(dag.size)]
    demands: dict[str, tuple[list[cp_model.IntervalVar], list[int]]] = {}
    for v, engine in enumerate(engines):
        if engine is not None:
            interval = cp.new_fixed_size_interval_var(start[v], durations[v], f"task_{v}")
            intervals, demand = demands.setdefault(engine, ([], []))
            intervals.append(interval)
            demand.append(widths[v])
    for u, v in dag.reduction:
        cp.add(start[v] >= start[u] + durations[u] + delay.get((u, v), 0))
    end = cp.new_int_var(0, horizon, "makespan")
    for v in range(dag.size):
        cp.add_hint(start[v], hint[v])
        if not dag.succs[v]:
            cp.add(end >= start[v] + durations[v])
    cp.add_hint(end, horizon)
    for engine, (intervals, demand) in sorted(demands.items()):
        cp.add_cumulative(intervals, demand, units[engine])
    cp.minimize(end)
    # one worker whatever --workers: interleaved (as several workers must be, to stay
    # deterministic), its deterministic clock ran 10x slower than the wall clock here (T5:
    # 15.9 s against 1.8 s for 0.5 deterministic s); the makespan objective spends more
    # workers on its searches instead (`makespan_search.searches`)
    solver = configured_solver(time_limit, seed, 1)
    solver.parameters.interleave_search = False
    # as for the streams' model (`solver.model`): presolve alone overruns short limits
    solver.parameters.cp_model_presolve = time_limit >= PRESOLVE_MIN_TIME
    if sum(len(intervals) for intervals, _ in demands.values()) > LP_MAX_INTERVALS:
        solver.parameters.linearization_level = 0
    status = interruptible_solve(solver, cp)
    starts = hint if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) else \
        [solver.value(s) for s in start]
    return Packing(starts, [s + d for s, d in zip(starts, durations, strict=True)],
                   round(solver.response_proto.deterministic_time, 3))


def serial_schedule(dag: TaskDag, durations: Sequence[int], engines: Sequence[str | None],
                    widths: Sequence[int], *, units: Mapping[str, int],
                    delays: Mapping[tuple[int, int], int]) -> list[int]:
    """The serial schedule: of the nodes whose producers are placed, the one with the longest
    path to the end goes next, at the earliest time its producers (plus delays) allow and its
    engine has its width free throughout (each engine's use as a step function)."""
    rank = dag.bottom_levels(durations)
    profiles = {engine: _Profile(cap) for engine, cap in units.items()}
    missing = [len(p) for p in dag.preds]
    ready = [(-rank[v], v) for v in range(dag.size) if not missing[v]]
    heapq.heapify(ready)
    starts = [0] * dag.size
    while ready:
        v = heapq.heappop(ready)[1]
        release = max((starts[u] + durations[u] + delays.get((u, v), 0) for u in dag.preds[v]),
                      default=0)
        engine = engines[v]
        starts[v] = release if engine is None else \
            profiles[engine].place(release, durations[v], widths[v])
        for w in dag.succs[v]:
            missing[w] -= 1
            if not missing[w]:
                heapq.heappush(ready, (-rank[w], w))
    return starts


class _Profile:
    """An engine's units in use over time: `used[i]` from `times[i]` to `times[i + 1]`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.times = [0]
        self.used = [0]

    def place(self, release: int, duration: int, width: int) -> int:
        """Occupy `width` units for `duration` from the earliest start >= `release` where
        they are free; that start."""
        times, used = self.times, self.used
        start = release
        j = bisect.bisect_right(times, release) - 1
        while True:  # over the segments the task would overlap from `start` on
            if used[j] + width > self.capacity:
                j += 1
                start = times[j]  # after the last breakpoint every unit is free
            elif j + 1 == len(times) or times[j + 1] >= start + duration:
                break
            else:
                j += 1
        self._split(start + duration)
        k = self._split(start)
        while k < len(times) and times[k] < start + duration:
            used[k] += width
            k += 1
        return start

    def _split(self, time: int) -> int:
        """Make `time` a breakpoint; its index."""
        i = bisect.bisect_right(self.times, time) - 1
        if self.times[i] == time:
            return i
        self.times.insert(i + 1, time)
        self.used.insert(i + 1, self.used[i])
        return i + 1


def streams_of_packing(dag: TaskDag, packed: Packing, max_streams: int, *, in_t_order: bool
                       ) -> tuple[Chains, tuple[int, ...]] | None:
    """The nodes dealt to streams in order of start (ties: T-order): each takes the stream
    whose last node is a producer of it that ended by its start (no event; the latest ended
    first), else the stream of its graph idle the latest by its start, else a new one, and at
    the stream limit the stream idle the earliest. Returns the streams (each in the order
    dealt) and that order; None when the limit leaves a node no stream. `in_t_order`: a stream
    takes only nodes later in T-order than its last (the plan then runs in T-order: models
    with subgraphs)."""
    starts, ends = packed.starts, packed.ends
    order = sorted(range(dag.size), key=lambda v: (starts[v], v))
    stream_of = [-1] * dag.size
    tails: list[int] = []
    free_at: list[int] = []

    def usable(k: int, v: int) -> bool:
        return dag.graphs[tails[k]] == dag.graphs[v] and (not in_t_order or tails[k] < v)

    for v in order:
        ready = [(free_at[stream_of[p]], stream_of[p]) for p in dag.preds[v]
                 if tails[stream_of[p]] == p and free_at[stream_of[p]] <= starts[v]
                 and usable(stream_of[p], v)]
        if not ready:
            ready = [(free_at[k], k) for k in range(len(tails))
                     if free_at[k] <= starts[v] and usable(k, v)]
        if ready:
            k = max(ready)[1]
        elif len(tails) < max_streams:
            k = len(tails)
            tails.append(v)
            free_at.append(0)
        else:
            at_limit = [(free_at[k], k) for k in range(len(tails)) if usable(k, v)]
            if not at_limit:
                return None
            k = min(at_limit)[1]
        stream_of[v] = k
        tails[k] = v
        free_at[k] = max(free_at[k], starts[v]) + ends[v] - starts[v]
    chains: dict[int, list[int]] = {}
    for v in order:
        chains.setdefault(stream_of[v], []).append(v)
    return tuple(tuple(c) for _, c in sorted(chains.items())), tuple(order)
