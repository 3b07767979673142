"""Local search on the emulated makespan: move the tasks that hold up the last one.

An emulated run explains itself. Walking back from the task that ends last, each task started
when the task before it on its stream ended (stream order, Sends and Recvs included), when its
Recv's event was recorded (a cross-stream dependency) or, waiting at its engine, when the units
it needs came free. `critical_chain` follows those causes back to time 0. `improvements` tries,
in a fixed order, the changes at each link of the chain: for a task behind one it does not
depend on on its stream, running it first (a new execution order, `optimal/order.py`, when the
caller lets the search order; whether it waited on its stream or at its engine, where run
first it may take the units sooner), then the moves `optimal/moves.py` lists (single tasks,
whole branches between a fork and a join, whole streams); it keeps the first that shortens the
run (or, as long, ends its tasks earlier in sum), then walks the new run's chain; a move that
did not help is not tried again until a pass over the chain finds nothing new, and an
assignment evaluated before is not evaluated again unless it beats the current one (so the pass
confirming a local optimum costs nothing). At a local optimum it kicks the best assignment
found (a few random moves that change it, at random links of its chain where one can, from a
generator with a fixed seed) and descends again, while evaluations remain and a kick can change
the best, and until a run reaches the caller's floor (no run is shorter). The budget is a number
of evaluations, so the result depends only on the input and the seed.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from streamalloc.optimal.moves import Branches, Link, Move
from streamalloc.optimal.order import Order, Orders
from streamalloc.runtime_emu.critical_chain import (
    EPS,
    EVENT,
    UNITS,
    critical_steps,
    engine_tasks,
    last_task,
)
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.solver.dag import TaskDag

KICK_MOVES = 2     # random moves per kick of the search
KICK_CHOICES = 12  # drawn among the first moves of a link that change the assignment

Run = Callable[[Sequence[int], Order | None], EmulationResult | None]  # emulated run of an
# assignment in an execution order (None: over a limit)


def critical_chain(result: EmulationResult, index: dict[str, int]) -> list[Link]:
    """The chain of causes (`runtime_emu.critical_chain`) from the graph task that ends last
    back to time 0, as links of its graph tasks (last task first): the graph task before each
    on its stream, or the tasks that held the units it waited for."""
    program, names = result.program, result.program.names
    holders = _engine_holders(result)
    last = last_task(result, [t for t in range(program.task_count()) if names[t] in index])
    chain: list[Link] = []
    for tid, cause in critical_steps(result, last):
        node = index.get(names[tid])
        if node is None or cause == EVENT:
            continue
        before = _graph_task_before(tid, result, index)
        behind = tuple(index[names[h]] for h in holders(tid) if names[h] in index) \
            if cause == UNITS else () if before is None else (before,)
        chain.append(Link(node, cause, behind, before))
    return chain


def _graph_task_before(tid: int, result: EmulationResult, index: dict[str, int]
                       ) -> int | None:
    """The graph task before `tid` on its stream (past Sends and Recvs), if any: a stream's
    tids are a range."""
    program = result.program
    first = program.stream_tids[program.streams[tid]].start
    before = next((t for t in range(tid - 1, first - 1, -1) if program.names[t] in index),
                  None)
    return index[program.names[before]] if before is not None else None


def _engine_holders(result: EmulationResult) -> Callable[[int], list[int]]:
    """Tasks of the same engine that started before `tid` and ran until its start (they held
    the units it waited for), in tid order."""
    program, start, end = result.program, result.start, result.end
    by_engine = engine_tasks(result)

    def holders(tid: int) -> list[int]:
        begin = start[tid]
        return [t for t in by_engine.get(program.engines[tid] or "", [])
                if t != tid and start[t] < begin - EPS and end[t] >= begin - EPS]

    return holders


def _score(result: EmulationResult) -> tuple[float, float]:
    """The makespan, then the sum of task ends (progress along near-critical paths)."""
    return (round(result.makespan_us, 6),
            round(sum(e for e in result.end if e != math.inf), 6))


class Solution(NamedTuple):
    """A stream assignment and the execution order its plan is synchronized in (None: the
    graph's T-order, for a model whose order the search does not change)."""

    streams: list[int]
    order: Order | None


class Reorder(NamedTuple):
    """The move that runs `node` before `blocker`, the unrelated task before it on its stream
    (dag indices)."""

    node: int
    blocker: int


@dataclass
class Search:
    """The current solution and its run, the best one found, the remaining evaluations and
    the seeded generator of the kicks."""

    dag: TaskDag
    run: Run
    budget: int
    streams: list[int]
    order: Order | None
    orders: Orders | None
    rng: random.Random
    branches: Branches
    result: EmulationResult | None = None
    score: tuple[float, float] = (math.inf, math.inf)
    best: tuple[tuple[float, float], Solution, EmulationResult | None] = \
        ((math.inf, math.inf), Solution([], None), None)
    index: dict[str, int] = field(default_factory=dict)
    tried: dict[tuple[tuple[int, ...], Order | None], tuple[float, float]] = \
        field(default_factory=dict)
    bests: list[Solution] = field(default_factory=list)  # each better than the one before
    floor_us: float = 0.0  # a lower bound on every run's makespan: the search stops there
    _movable: tuple[EmulationResult, list[Link]] | None = None  # the kicks' links, per best

    def improve(self) -> list[Solution]:
        """Descend along the critical chain until no move helps; then, while the budget
        lasts, kick the best solution and descend again. The solutions that were the best
        seen when found, in that order (the start first)."""
        self.index = {n: i for i, n in enumerate(self.dag.names)}
        self.result = self.run(self.streams, self.order)
        start = Solution(self.streams, self.order)
        if self.result is None:
            return [start]
        self.score = _score(self.result)
        self.best = (self.score, start, self.result)
        self.bests = [start]
        self._stop_at_floor()
        while self.budget > 0:
            self._descend()
            if self.budget <= 0:
                break
            self._kick()
        return self.bests

    def _descend(self) -> None:
        """First-improvement descent. A move that did not help is not tried again until a
        pass over the whole chain finds nothing new; then the pass is repeated once with
        every move (only then is this a local optimum)."""
        failed: set[Move | Reorder] = set()
        while self.budget > 0 and self.result is not None:
            if self._step(critical_chain(self.result, self.index), failed) is None:
                if not failed:
                    return
                failed.clear()
                if self._step(critical_chain(self.result, self.index), failed) is None:
                    return

    def _kick(self) -> None:
        """From the best solution, KICK_MOVES random moves of streams at links of its chain
        where a move changes the assignment (the budget shrinks by one even when the moves
        cancel out, so the search ends; with no such link the search ends: no kick can leave
        the best, a chain on one stream throughout, say)."""
        _, (streams, order), result = self.best
        assert result is not None
        chain = self._movable_links(result, streams)
        if not chain:
            self.budget = 0
            return
        trial, fresh = list(streams), max(streams, default=-1) + 1
        for _ in range(KICK_MOVES):
            link = chain[self.rng.randrange(len(chain))]
            changing = (m for m in self.branches.moves(link, trial, fresh)
                        if any(trial[w] != target for w, target in m))
            moves = list(itertools.islice(changing, KICK_CHOICES))
            if moves:
                for w, target in moves[self.rng.randrange(len(moves))]:
                    trial[w] = target
                fresh = max(trial) + 1
        self.budget -= 1
        kicked = self.run(trial, order) if trial != streams else None
        if kicked is not None and kicked.status == "ok":
            self._accept(Solution(trial, order), kicked)

    def _movable_links(self, result: EmulationResult, streams: list[int]) -> list[Link]:
        """The links of `result`'s chain with a move that changes `streams`: found once per
        best solution (the kicks start from it until a better one is found)."""
        if self._movable is None or self._movable[0] is not result:
            fresh = max(streams, default=-1) + 1
            links = [link for link in critical_chain(result, self.index)
                     if any(any(streams[w] != s for w, s in m)
                            for m in self.branches.moves(link, streams, fresh))]
            self._movable = (result, links)
        return self._movable[1]

    def _accept(self, solution: Solution, result: EmulationResult) -> None:
        """Make `solution` the current one, and the best when it scores better."""
        self.streams, self.order = solution
        self.result, self.score = result, _score(result)
        if self.score < self.best[0]:
            self.best = (self.score, solution, result)
            self.bests.append(solution)
            self._stop_at_floor()

    def _stop_at_floor(self) -> None:
        """No run is shorter than the floor: once the best reaches it (to the ns, as the
        driver calls a plan optimal), the rest of the budget could only tie."""
        if round(self.best[0][0], 3) <= self.floor_us:
            self.budget = 0

    def _step(self, chain: list[Link], failed: set[Move | Reorder]) -> EmulationResult | None:
        """The first move along `chain` (not in `failed`) that improves the score, applied:
        at each link, running the task before its unrelated blocker, then moving streams."""
        fresh = max(self.streams, default=-1) + 1
        for link in chain:
            for change in self._changes(link, fresh):
                if change in failed:
                    continue
                if self.budget <= 0:
                    return None
                trial = self._applied(change)
                if trial is None:
                    failed.add(change)
                    continue
                result = self._better(trial)
                if result is not None:
                    self._accept(trial, result)
                    return result
                failed.add(change)
        return None

    def _changes(self, link: Link, fresh: int) -> Iterator[Move | Reorder]:
        """The reorder of the link's task before the graph task before it on its stream, when
        unrelated (when the search orders; at a link of either cause: GE dump 00026's tasks
        that wait for its weight Casts' 32 cores, 818.4 -> 813.8 us at --time-limit 10), then
        the stream moves that change the assignment."""
        if self.orders is not None and link.before is not None \
                and not self.dag.reaches(link.before, link.node):
            yield Reorder(link.node, link.before)
        for move in self.branches.moves(link, self.streams, fresh):
            if any(self.streams[w] != s for w, s in move):
                yield move

    def _applied(self, change: Move | Reorder) -> Solution | None:
        """The current solution changed so (None when the order cannot change so)."""
        if isinstance(change, Reorder):
            assert self.orders is not None and self.order is not None
            names = self.dag.names
            order = self.orders.before(self.order, names[change.node], names[change.blocker])
            return Solution(self.streams, order) if order is not None else None
        trial = list(self.streams)
        for w, s in change:
            trial[w] = s
        return Solution(trial, self.order)

    def _better(self, trial: Solution) -> EmulationResult | None:
        """The run of `trial` when it scores better than the current solution. A solution
        evaluated before is not run again (nor charged) unless its score beats the current
        one: the pass that confirms a local optimum retries the moves of the pass before it."""
        key = (tuple(trial.streams), trial.order)
        known = self.tried.get(key)
        if known is not None and known >= self.score:
            return None
        self.budget -= 1
        result = self.run(*trial)
        ok = result is not None and result.status == "ok"
        self.tried[key] = _score(result) if result is not None and ok else (math.inf, math.inf)
        return result if ok and self.tried[key] < self.score else None


def improvements(dag: TaskDag, streams: Sequence[int], run: Run, budget: int, *,
                 seed: int = 0, orders: Orders | None = None, order: Order | None = None,
                 floor_us: float = 0.0) -> list[Solution]:
    """The search's successive best solutions, from `streams` in `order` (None: the graph's)
    on, each scoring better than the one before (a caller that numbers streams otherwise
    picks among them). With `orders` the search also changes the execution order
    (`optimal/order.py`). It stops early at `floor_us`, a lower bound on every run's
    makespan."""
    start = order if order is not None or orders is None else orders.start
    return Search(dag, run, budget, list(streams), start, orders, random.Random(seed),
                  Branches(dag), floor_us=floor_us).improve()
