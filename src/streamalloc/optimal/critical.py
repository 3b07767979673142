"""Local search on the emulated makespan: move the tasks that hold up the last one.

An emulated run explains itself. Walking back from the task that ends last, each task started
when the task before it on its stream ended (stream order, Sends and Recvs included), when its
Recv's event was recorded (a cross-stream dependency) or, waiting at its engine, when the units
it needs came free. `critical_chain` follows those causes back to time 0. `improve` then tries,
in a fixed order, moves at each link of the chain: a task away from a stream predecessor it
does not depend on, onto the stream of a producer it waits for; producers on several streams
gathered onto one (fewer Recvs before it), consumers of the task before it gathered likewise
(fewer Sends after that task); the tasks that held the engine while a chain task waited moved
onto its stream (which runs them after it when they come later in T-order) or a stream of
their own. It keeps the first move that shortens the run (or, as long, ends its tasks earlier
in sum) and walks the new run's chain. The budget is a number of evaluations, so the result
depends only on the input.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from streamalloc.runtime_emu.program import RECV, TASK
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.solver.dag import TaskDag

EPS = 1e-6
STREAM, UNITS = "stream", "units"  # why a chain task started when it did

Run = Callable[[Sequence[int]], EmulationResult | None]  # emulated run (None: over a limit)
Move = tuple[tuple[int, ...], int]  # (nodes, target stream)


@dataclass(frozen=True)
class Link:
    """A task of the critical chain (dag index), why it started when it did, and the tasks
    behind that cause: the graph task before it on its stream, or the tasks that held its
    engine's units."""

    node: int
    cause: str
    behind: tuple[int, ...]


def critical_chain(result: EmulationResult, index: dict[str, int]) -> list[Link]:
    """The chain of causes from the task that ends last back to time 0 (last task first)."""
    program, start, end = result.program, result.start, result.end
    prev = {b: a for tids in program.stream_tids.values()
            for a, b in itertools.pairwise(tids)}
    holders = _engine_holders(result)
    graph_tasks = [t for t in range(program.task_count()) if program.names[t] in index]
    tid = max(graph_tasks, key=lambda t: (end[t], -t), default=None)
    chain: list[Link] = []
    while tid is not None:
        before = prev.get(tid)
        arrival = end[before] if before is not None else 0.0
        if program.kinds[tid] == RECV and tid in result.matched \
                and result.matched[tid][1] > arrival + EPS:
            tid = result.matched[tid][0]  # waited for the Send, on the producer's stream
            continue
        node = index.get(program.names[tid])
        if program.kinds[tid] == TASK and start[tid] > arrival + EPS:
            held = holders(tid)
            if node is not None:
                chain.append(Link(node, UNITS, tuple(index[program.names[h]] for h in held
                                                     if program.names[h] in index)))
            tid = max(held, key=lambda h: (end[h], -h)) if held else before
            continue
        if node is not None:
            chain.append(Link(node, STREAM, _graph_task_before(tid, prev, program.names,
                                                               index)))
        tid = before
    return chain


def _graph_task_before(tid: int, prev: dict[int, int], names: Sequence[str],
                       index: dict[str, int]) -> tuple[int, ...]:
    """The graph task before `tid` on its stream (past Sends and Recvs), if any."""
    before = prev.get(tid)
    while before is not None and names[before] not in index:
        before = prev.get(before)
    return (index[names[before]],) if before is not None else ()


def _engine_holders(result: EmulationResult) -> Callable[[int], list[int]]:
    """Tasks of the same engine that started before `tid` and ran until its start (they held
    the units it waited for), in tid order."""
    program, start, end = result.program, result.start, result.end
    by_engine: dict[str, list[int]] = {}
    for t, engine in enumerate(program.engines):
        if engine is not None and program.kinds[t] == TASK:
            by_engine.setdefault(engine, []).append(t)

    def holders(tid: int) -> list[int]:
        begin = start[tid]
        return [t for t in by_engine.get(program.engines[tid] or "", [])
                if t != tid and start[t] < begin - EPS and end[t] >= begin - EPS]

    return holders


def _moves(link: Link, streams: Sequence[int], dag: TaskDag, succs: Sequence[Sequence[int]],
           fresh: int) -> Iterator[Move]:
    """Moves that may shorten the chain at `link`, in a fixed order."""
    v = link.node
    if link.cause == UNITS:
        for w in sorted(link.behind, reverse=True):
            if w > v:
                yield (w,), streams[v]  # runs after v
            yield (w,), fresh
        return
    if link.behind and link.behind[0] not in dag.preds[v]:
        yield (v,), fresh  # a stream predecessor it does not depend on
    producers = sorted({streams[p] for p in dag.preds[v]} - {streams[v]})
    for p in sorted(dag.preds[v], reverse=True):
        if streams[p] != streams[v]:
            yield (v,), streams[p]
            yield from _gather(p, producers, streams)  # fewer Recvs before v
    if link.behind:  # fewer Sends after the task before v
        u = link.behind[0]
        consumers = sorted({streams[c] for c in succs[u]} - {streams[u]})
        for c in succs[u]:
            if streams[c] != streams[u]:
                yield from _gather(c, consumers, streams)


def _gather(w: int, targets: Sequence[int], streams: Sequence[int]) -> Iterator[Move]:
    """Move w, then its whole stream, onto each other stream of `targets`."""
    members = tuple(x for x, s in enumerate(streams) if s == streams[w])
    for target in targets:
        if target != streams[w]:
            yield (w,), target
            yield members, target


def _score(result: EmulationResult) -> tuple[float, float]:
    """The makespan, then the sum of task ends (progress along near-critical paths)."""
    return (round(result.makespan_us, 6),
            round(sum(e for e in result.end if e != math.inf), 6))


@dataclass
class Search:
    """The current assignment, its score and the remaining evaluations."""

    dag: TaskDag
    run: Run
    budget: int
    streams: list[int]
    score: tuple[float, float] = (math.inf, math.inf)
    succs: list[list[int]] = field(default_factory=list)

    def improve(self) -> list[int]:
        """Moves along the critical chain until none helps or the budget is spent."""
        self.succs = [[] for _ in range(self.dag.size)]
        for u, v in self.dag.edges:
            self.succs[u].append(v)
        result = self.run(self.streams)
        if result is None:
            return self.streams
        self.score = _score(result)
        index = {n: i for i, n in enumerate(self.dag.names)}
        found: EmulationResult | None = result
        while found is not None and self.budget > 0:
            found = self._step(critical_chain(found, index))
        return self.streams

    def _step(self, chain: list[Link]) -> EmulationResult | None:
        fresh = max(self.streams, default=-1) + 1
        tried: set[Move] = set()
        for link in chain:
            for move in _moves(link, self.streams, self.dag, self.succs, fresh):
                if move in tried or all(self.streams[w] == move[1] for w in move[0]):
                    continue
                tried.add(move)
                if self.budget <= 0:
                    return None
                self.budget -= 1
                trial = list(self.streams)
                for w in move[0]:
                    trial[w] = move[1]
                result = self.run(trial)
                if result is not None and result.status == "ok" \
                        and _score(result) < self.score:
                    self.streams, self.score = trial, _score(result)
                    return result
        return None


def improve(dag: TaskDag, streams: Sequence[int], run: Run, budget: int) -> list[int]:
    """A stream assignment whose emulated makespan is at most that of `streams`."""
    return Search(dag, run, budget, list(streams)).improve()
