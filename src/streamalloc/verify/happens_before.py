"""Happens-before over stream tasks without an all-pairs closure: a Kahn sweep with clocks.

Vertices are the tasks (stream k, position i), numbered globally (gid). Edges: program order
on each stream (i -> i+1) and cross edges given as `waits`: task -> the tasks it waits for
(a Recv waits for its Send, a stream's first task for its activators).

The sweep runs the streams like a scheduler that never guesses: a stream advances while its
head task has every awaited task done; a blocked stream parks on the task it waits for and
is woken when that task is done. That is Kahn's topological sort with the chains kept
implicit, so it is linear in tasks plus cross edges. Tasks left over lie on or behind a
cycle of waits (a deadlock): each blocked stream waits for exactly one task on another
blocked stream (or on itself), so following "waits for" from any blocked stream ends in a
cycle, which is what gets reported.

Reachability uses vector clocks: `clock[k][j]` is the last position of stream j known to
happen before (or be) the current head of stream k. A task u = (j, p) happens before a task
v on stream k iff `clock[k][j] >= p` when v runs. Clocks are copied only at tasks that are
awaited (Sends, activators) and dropped once their last waiter has read them; queries are
answered as their later task runs. Cost: O(T + W) steps plus O(S) numpy work per cross edge
and per awaited task (T tasks, W cross edges, S streams); memory O(S^2) for the running
clocks plus O(S) per record not yet waited for.

>>> r = sweep([2, 2], {2: [1]}, [(0, 3), (3, 0)])   # stream 1 waits for task 1 of stream 0
>>> r.answers, r.cycles
((True, False), ())
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Blocked:
    """A stream that can never advance: its head task waits for a task that never runs."""

    stream: int
    head: int
    waits_for: int


@dataclass(frozen=True)
class SweepResult:
    """Answers to the queries (u happens before v?), deadlock cycles, tasks that ran."""

    answers: tuple[bool, ...]
    cycles: tuple[tuple[Blocked, ...], ...]
    done: bytes
    blocked_tasks: int


def sweep(lengths: Sequence[int], waits: Mapping[int, Sequence[int]],
          queries: Sequence[tuple[int, int]]) -> SweepResult:
    """Run the sweep over streams of `lengths` tasks; `queries` are (u, v) gid pairs."""
    return _Sweep(lengths, waits, queries).run()


class _Sweep:
    def __init__(self, lengths: Sequence[int], waits: Mapping[int, Sequence[int]],
                 queries: Sequence[tuple[int, int]]) -> None:
        self.lengths = list(lengths)
        self.base = [0]
        self.owner: list[int] = []
        for k, n in enumerate(self.lengths):
            self.base.append(self.base[-1] + n)
            self.owner.extend([k] * n)
        self.waits = waits
        self.readers = Counter(src for srcs in waits.values() for src in srcs)
        self.clock = np.full((len(self.lengths), len(self.lengths)), -1, dtype=np.int32)
        self.pos = [0] * len(self.lengths)
        self.done = bytearray(self.base[-1])
        self.snapshots: dict[int, np.ndarray] = {}
        self.parked: dict[int, list[int]] = defaultdict(list)
        self.blocked_on: dict[int, int] = {}
        self.answers = [False] * len(queries)
        self.by_target: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for qi, (u, v) in enumerate(queries):
            ku = self.owner[u]
            self.by_target[v].append((qi, ku, u - self.base[ku]))

    def run(self) -> SweepResult:
        ready = deque(range(len(self.lengths)))
        while ready:
            ready.extend(self._advance(ready.popleft()))
        blocked = sum(n - p for n, p in zip(self.lengths, self.pos, strict=True))
        return SweepResult(tuple(self.answers), self._cycles(), bytes(self.done), blocked)

    def _advance(self, k: int) -> list[int]:
        """Run stream k as far as it goes; return the streams its tasks woke."""
        row, n, i = self.clock[k], self.lengths[k], self.pos[k]
        gid = self.base[k] + i
        woken: list[int] = []
        # Hot loop: attributes bound to locals.
        waits, done, readers, targets_of = self.waits, self.done, self.readers, self.by_target
        while i < n:
            srcs = waits.get(gid)
            if srcs and not self._join(k, row, srcs):
                break
            done[gid] = 1
            if gid in readers:
                row[k] = i  # the own entry is only read through snapshots and queries
                self.snapshots[gid] = row.copy()
                woken.extend(self.parked.pop(gid, ()))
            targets = targets_of.get(gid)
            if targets:
                row[k] = i
                for qi, ku, iu in targets:
                    self.answers[qi] = bool(row[ku] >= iu)
            i, gid = i + 1, gid + 1
        self.pos[k] = i
        return woken

    def _join(self, k: int, row: np.ndarray, srcs: Sequence[int]) -> bool:
        """Merge the clocks of the awaited tasks, or park stream k on the first one not done."""
        for src in srcs:
            if not self.done[src]:
                self.parked[src].append(k)
                self.blocked_on[k] = src
                return False
        for src in srcs:
            np.maximum(row, self.snapshots[src], out=row)
            self.readers[src] -= 1
            if not self.readers[src]:
                del self.snapshots[src]
        return True

    def _cycles(self) -> tuple[tuple[Blocked, ...], ...]:
        blocked = {k: self.blocked_on[k] for k, n in enumerate(self.lengths) if self.pos[k] < n}
        seen: set[int] = set()
        cycles = []
        for start in sorted(blocked):
            path: list[int] = []
            k = start
            while k in blocked and k not in seen:
                seen.add(k)
                path.append(k)
                k = self.owner[blocked[k]]
            if k in path:  # the walk closed a new cycle (not one found from an earlier start)
                cycle = path[path.index(k):]
                cycles.append(tuple(Blocked(j, self.base[j] + self.pos[j], blocked[j])
                                    for j in cycle))
        return tuple(cycles)
