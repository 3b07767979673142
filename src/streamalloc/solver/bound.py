"""A lower bound of the chain model's events objective: the same problem on stream slots.

The chain model (`solver.model`) couples its schedule to the streams only through successor
arcs, so "these nodes cannot all share one stream within the makespan limit" is found by
search, not by propagation: on llama_tiny under the parallel options its bound stayed at 2
against an objective of 1075 after a 10 s limit. This relaxation states each stream as a slot
whose tasks are optional intervals under one NoOverlap (CP-SAT's disjunctive reasoning does the
counting), with the limit's time windows, the dependencies of the transitive reduction, and
T-order inside a slot for the pairs whose windows would let them run the other way round. It
leaves out what only restricts: rules, capacity, the candidate window, graphs. So every
solution of the chain model is one of its solutions, given slots for all its streams: a stream
that no split edge touches holds whole components of the reduction, each other stream is
touched by an end of a split edge, so a solution with at most `s` splits has at most
`2 s + components` streams, and that many slots cover every solution as good as one with `s`.
The bound it proves (CP-SAT's `best_objective_bound`, valid when the search stops early too)
is then a bound of the chain model's objective.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import networkx as nx
from ortools.sat.python import cp_model

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.run import PRESOLVE_MIN_TIME, interruptible_solve

MAX_NODES = 320  # the T-order pairs are quadratic: the bound runs on models up to this size


@dataclass(frozen=True)
class Bound:
    """The proven bound, the relaxation's best streams (chains in T-order, by first node) and
    the deterministic time spent."""

    bound: float
    chains: tuple[tuple[int, ...], ...]
    deterministic_time: float


def slot_count(dag: TaskDag, splits: int) -> int:
    """Slots enough for every solution with at most `splits` split edges."""
    reduction = nx.Graph()
    reduction.add_nodes_from(range(dag.size))
    reduction.add_edges_from(dag.reduction)
    return 2 * splits + nx.number_connected_components(reduction)


def relaxation_size(dag: TaskDag, durations: Sequence[int], limit: int, slots: int) -> int:
    """The clauses that keep T-order inside a slot, most of the relaxation's size: a pair
    of unordered nodes whose windows overlap costs one per slot both may use. Stating and
    solving grows with it far faster than the deterministic time says (a SqueezeNet training
    step under the parallel options: 1.8 million clauses on 267 slots, 11 s of wall time at a
    limit of 0.6 s)."""
    earliest, latest = _windows(dag, durations, limit)
    return sum(min(slots, u + 1) for u, _ in _overlapping(dag, durations, earliest, latest))


def relaxed_bound(dag: TaskDag, durations: Sequence[int], limit: int, slots: int, *,
                  time_limit: float, seed: int) -> Bound:
    """The relaxation's bound of `splits x (n + 1) + streams` (the chain model's events
    objective) for schedules within `limit`, on `slots` slots."""
    model = _Relaxation(dag, durations, limit, slots)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.random_seed = seed
    # one core-based worker, whatever --workers says: it raises the bound split by split
    # (unsatisfiable cores of the split literals), which is what this model is for; CP-SAT's
    # interleaved portfolio did not (llama_tiny, 2 workers: gap 0.2 at the same limit)
    solver.parameters.num_workers = 1
    solver.parameters.optimize_with_core = True
    if time_limit < PRESOLVE_MIN_TIME:  # as for the chain model: presolve overruns the limit
        solver.parameters.cp_model_presolve = False
    status = interruptible_solve(solver, model.cp)
    deterministic = round(solver.response_proto.deterministic_time, 3)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Bound(0.0, (), deterministic)
    chains = tuple(tuple(v for v in range(dag.size) if k < len(model.slot[v])
                         and solver.value(model.slot[v][k]))
                   for k in range(slots))
    # the objective is integral: CP-SAT's float bound rounds up to it
    proven = math.ceil(solver.best_objective_bound - 1e-6)
    return Bound(float(proven), tuple(c for c in chains if c), deterministic)


class _Relaxation:
    """Variables: `slot[v][k]` (v on slot k; node v may use slots 0..v, numbering slots by
    their first node), `start[v]` within its window, `split` per reduction edge, `used[k]`."""

    def __init__(self, dag: TaskDag, durations: Sequence[int], limit: int, slots: int) -> None:
        self.cp = cp_model.CpModel()
        n = dag.size
        # the chain model's solution within `limit` gives every node a window
        earliest, latest = _windows(dag, durations, limit)
        self.start = [self.cp.new_int_var(earliest[v], latest[v], f"start_{v}") for v in range(n)]
        self.slot = [[self.cp.new_bool_var(f"slot_{v}_{k}") for k in range(min(slots, v + 1))]
                     for v in range(n)]
        for v in range(n):
            self.cp.add_exactly_one(self.slot[v])
        for k in range(slots):
            self.cp.add_no_overlap([
                self.cp.new_optional_fixed_size_interval_var(
                    self.start[v], durations[v], self.slot[v][k], f"task_{v}_{k}")
                for v in range(n) if k < len(self.slot[v])])
        for u, v in dag.reduction:
            self.cp.add(self.start[v] >= self.start[u] + durations[u])
        self._program_order(dag, durations, earliest, latest)
        splits = [self._split(u, v) for u, v in dag.reduction]
        used = [self.cp.new_bool_var(f"used_{k}") for k in range(slots)]
        for v in range(n):
            for k, var in enumerate(self.slot[v]):
                self.cp.add_implication(var, used[k])
        for k in range(1, slots):
            self.cp.add_implication(used[k], used[k - 1])
        self.cp.minimize(sum(splits) * (n + 1) + sum(used))

    def _program_order(self, dag: TaskDag, durations: Sequence[int], earliest: list[int],
                       latest: list[int]) -> None:
        """Two nodes on one slot run in T-order, stated for the unordered pairs whose windows
        would let the later one start before the earlier one ends."""
        for u, v in _overlapping(dag, durations, earliest, latest):
            same = self.cp.new_bool_var(f"same_{u}_{v}")
            for a, b in zip(self.slot[u], self.slot[v], strict=False):
                self.cp.add_bool_or([same, a.negated(), b.negated()])
            self.cp.add(self.start[v] >= self.start[u] + durations[u]).only_enforce_if(same)

    def _split(self, u: int, v: int) -> cp_model.IntVar:
        """1 when u and v (u first in T-order: v has every slot u has) are on different slots;
        stated one way only, as the objective minimizes it."""
        split = self.cp.new_bool_var(f"split_{u}_{v}")
        for here, there in zip(self.slot[u], self.slot[v], strict=False):
            self.cp.add_bool_or([split, here.negated(), there])
        return split


def _windows(dag: TaskDag, durations: Sequence[int], limit: int) -> tuple[list[int], list[int]]:
    """Earliest and latest start of each node for a schedule within `limit`."""
    return _earliest_starts(dag, durations), \
        [limit - tail for tail in dag.bottom_levels(durations)]


def _overlapping(dag: TaskDag, durations: Sequence[int], earliest: list[int],
                 latest: list[int]) -> Iterator[tuple[int, int]]:
    """The pairs u < v (T-order) that do not reach each other and whose windows would let v
    start before u ends."""
    for v in range(dag.size):
        for u in range(v):
            if earliest[v] < latest[u] + durations[u] and not dag.reaches(u, v):
                yield u, v


def _earliest_starts(dag: TaskDag, durations: Sequence[int]) -> list[int]:
    """Earliest start of each node over the dependencies alone."""
    earliest = [0] * dag.size
    for v in range(dag.size):
        earliest[v] = max((earliest[u] + durations[u] for u in dag.preds[v]), default=0)
    return earliest
