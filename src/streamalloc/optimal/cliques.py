"""Sets of pairwise exclusive tasks (ordered by the graph, or together wider than their
engine: they never overlap) and the one-machine bound over one: Jackson's preemptive schedule
(`jackson`) of its tasks with their heads and tails. Part of the sync-aware bound
(`optimal/bounds.py`).

>>> jackson([(0.0, 2.0, 1.0), (0.0, 3.0, 0.0)])  # run the long-tailed task first
5.0
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.program import Program

SWAP_SIZE = 10  # members a task may replace in a clique's local search: T5's bound reaches
# 1924.1 us from 10 on (1916.1 with 1 to 8), in 0.3 s
Job = tuple[float, float, float]  # (head, time, tail)

DENSE_BITS = 32  # set bits above which `bits_of` reads a mask through numpy


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


def cliques(program: Program, table: CostTable, graph_tasks: Sequence[int],
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


def overlaps(program: Program, table: CostTable, timed: Sequence[int],
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
            for b in bits_of(blocking):
                freed |= overlap[b]
            for u in sorted(bits_of(freed & ~trial_mask), key=rank.__getitem__):
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


def bits_of(mask: int) -> list[int]:
    """The tids of a bitmask, ascending. Many bits are read through numpy at once (a
    2,000-task mask with 1,000 bits: 27 us against 314 us bit by bit); a few one by one."""
    if mask.bit_count() > DENSE_BITS:
        raw = np.frombuffer(mask.to_bytes((mask.bit_length() + 7) // 8, "little"), np.uint8)
        return np.flatnonzero(np.unpackbits(raw, bitorder="little")).tolist()
    found = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found
