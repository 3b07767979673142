"""Happens-before over stream tasks without an all-pairs closure: a Kahn sweep with clocks.

Vertices are the tasks (stream k, position i), numbered globally (gid). Edges: program order
on each stream (i -> i+1) and cross edges given as `waits`: task -> the tasks it waits for
(a Recv waits for its Send); and `first_of`: task -> the tasks the first of which lets it run
(a stream's first task and its activators), whose clocks meet instead of joining.

The sweep runs the streams like a scheduler that never guesses: a stream advances while its
head task has every awaited task done; a blocked stream parks on the task it waits for and
is woken when that task is done. That is Kahn's topological sort with the chains kept
implicit. Only the tasks that wait split a stream: between two of them a stream runs without
looking at its tasks, so the sweep costs O(S + W) steps (S streams, W waiting tasks and cross
edges), whatever the number of tasks. Tasks left over lie on or behind a
cycle of waits (a deadlock): each blocked stream waits for exactly one task on another
blocked stream (or on itself), so following "waits for" from any blocked stream ends in a
cycle, which is what gets reported.

Reachability uses vector clocks. A stream's clock changes only where it waits, so each
segment (a waiting task up to the next one, or a stream's start) has one clock row: entry j
is the last position of stream j known to happen before the segment's tasks. A task u = (j, p)
happens before a task v on another stream iff that row of v's segment has entry j >= p; on
one stream iff u comes first. A segment's queries are answered, with numpy, as soon as its
row is known; a row is kept only while a task of its segment is still awaited. Cost: O(S)
numpy work per segment and per cross edge; memory O(S^2) for the running rows plus O(S) per
segment whose records are not yet waited for.

>>> r = sweep([2, 2], {2: [1]}, [(0, 3), (3, 0)])   # stream 1 waits for task 1 of stream 0
>>> r.answers.tolist(), r.cycles
([True, False], ())
>>> # task 3 starts after task 1 or task 2, whichever ends first; task 2 waits for task 0
>>> sweep([2, 1, 1], {2: [0]}, [(0, 3), (1, 3), (2, 3)], first_of={3: [1, 2]}).answers.tolist()
[True, False, False]
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Mapping, Sequence

import msgspec
import numpy as np


class Blocked(msgspec.Struct, frozen=True):
    """A stream that can never advance: its head task waits for a task that never runs."""

    stream: int
    head: int
    waits_for: int


class SweepResult(msgspec.Struct, frozen=True):
    """Answers to the queries (u happens before v?), deadlock cycles, tasks that ran."""

    answers: np.ndarray
    cycles: tuple[tuple[Blocked, ...], ...]
    done: np.ndarray
    blocked_tasks: int


def sweep(lengths: Sequence[int], waits: Mapping[int, Sequence[int]],
          queries: Sequence[tuple[int, int]] | np.ndarray,
          first_of: Mapping[int, Sequence[int]] | None = None) -> SweepResult:
    """Run the sweep over streams of `lengths` tasks; `queries` are (u, v) gid pairs.
    `first_of`: task -> tasks of which the first to end lets it run (a stream's activators):
    it runs after all of them in the sweep's order, but only what happens before each of
    them happens before it (the meet of their clocks)."""
    pairs = np.asarray(queries, dtype=np.int64).reshape(-1, 2)
    u, v = pairs[:, 0], pairs[:, 1]
    owner = np.repeat(np.arange(len(lengths)), lengths)
    # on one stream, u happens before v when it is listed first: only the others need clocks
    # (most dependencies of a plan join two tasks of one stream)
    across = np.flatnonzero(owner[u] != owner[v]) if len(u) else np.zeros(0, np.int64)
    result = _Sweep(lengths, waits, first_of or {}, u[across], v[across]).run()
    answers = u <= v
    answers[across] = result.answers
    return SweepResult(answers, result.cycles, result.done, result.blocked_tasks)


class _Sweep:
    def __init__(self, lengths: Sequence[int], waits: Mapping[int, Sequence[int]],
                 first_of: Mapping[int, Sequence[int]], u: np.ndarray, v: np.ndarray) -> None:
        self.lengths = list(lengths)
        self.base = [0]
        for n in self.lengths:
            self.base.append(self.base[-1] + n)
        self.owner = np.repeat(np.arange(len(self.lengths)), self.lengths)
        self.waits, self.first_of = waits, first_of
        # the waiting tasks of each stream, as positions in ascending order
        self.stops: list[list[int]] = [[] for _ in self.lengths]
        for gid in sorted({*waits, *first_of}):
            k = int(self.owner[gid])
            self.stops[k].append(gid - self.base[k])
        self.next_stop = [0] * len(self.lengths)
        self.pos = [0] * len(self.lengths)
        self.rows = [np.full(len(self.lengths), -1, dtype=np.int32) for _ in self.lengths]
        self.segments = _Segments(self.base, self.stops, self.owner,
                                  [*waits.values(), *first_of.values()], u=u, v=v)
        self.parked: list[list[tuple[int, int]]] = [[] for _ in self.lengths]
        self.blocked_on: dict[int, int] = {}

    def run(self) -> SweepResult:
        ready = deque(range(len(self.lengths)))
        while ready:
            ready.extend(self._advance(ready.popleft()))
        blocked = sum(n - p for n, p in zip(self.lengths, self.pos, strict=True))
        done = np.arange(len(self.owner)) < (np.array(self.base[:-1]) + self.pos)[self.owner] \
            if len(self.owner) else np.zeros(0, bool)
        return SweepResult(self.segments.answers, self._cycles(), done, blocked)

    def _advance(self, k: int) -> list[int]:
        """Run stream k as far as it goes; return the streams it woke."""
        stops, n = self.stops[k], self.lengths[k]
        if self.pos[k] == 0 and n and (not stops or stops[0] > 0):
            self.segments.close(self.base[k], self.rows[k])  # the stream's start
        while True:
            j = self.next_stop[k]
            stop = stops[j] if j < len(stops) else n
            self.pos[k] = stop
            if stop == n or not self._join(k, self.base[k] + stop):
                return self._wake(k)
            self.pos[k], self.next_stop[k] = stop + 1, j + 1

    def _join(self, k: int, gid: int) -> bool:
        """Merge the clocks of the tasks `gid` waits for into stream k's row, or park the
        stream on the first one not done."""
        srcs, firsts = self.waits.get(gid, ()), self.first_of.get(gid, ())
        for src in (*srcs, *firsts):
            j = int(self.owner[src])
            if src - self.base[j] >= self.pos[j]:
                heapq.heappush(self.parked[j], (src - self.base[j], k))
                self.blocked_on[k] = src
                return False
        row = self.rows[k].copy()  # rows are never changed once made: snapshots share them
        for src in srcs:  # a join: the row itself takes the source's position
            j = int(self.owner[src])
            np.maximum(row, self.segments.row_of(src), out=row)
            row[j] = max(row[j], src - self.base[j])
        if firsts:  # a meet: each source's own row first (a copy), then their minimum
            np.maximum(row, np.minimum.reduce([self._known(src) for src in firsts]), out=row)
        self.rows[k] = row
        self.segments.close(gid, row)
        return True

    def _known(self, src: int) -> np.ndarray:
        """What happens before a task that waits for `src`: its segment's row and `src`, in
        a row of its own (the segment's is shared)."""
        j = int(self.owner[src])
        row = self.segments.row_of(src).copy()
        row[j] = max(row[j], src - self.base[j])
        return row

    def _wake(self, k: int) -> list[int]:
        """The streams parked on tasks of stream k that are now done."""
        parked, pos, woken = self.parked[k], self.pos[k], []
        while parked and parked[0][0] < pos:
            woken.append(heapq.heappop(parked)[1])
        return woken

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
                k = int(self.owner[blocked[k]])
            if k in path:  # the walk closed a new cycle (not one found from an earlier start)
                cycle = path[path.index(k):]
                cycles.append(tuple(Blocked(j, self.base[j] + self.pos[j], blocked[j])
                                    for j in cycle))
        return tuple(cycles)


class _Segments:
    """The clock row of each segment: answers its queries when it is known, and lends it to
    the tasks that wait for one of its tasks until the last of them has read it."""

    def __init__(self, base: list[int], stops: list[list[int]], owner: np.ndarray,
                 waits: Sequence[Sequence[int]], *, u: np.ndarray, v: np.ndarray) -> None:
        firsts = {b for b, n in zip(base[:-1], np.diff(base).tolist(), strict=True) if n}
        starts = sorted({b + p for b, s in zip(base[:-1], stops, strict=True) for p in s} | firsts)
        self.starts = np.array(starts, dtype=np.int64)
        self.first = {gid: i for i, gid in enumerate(starts)}
        self.u_stream, self.u_pos = owner[u], u - np.array(base, dtype=np.int64)[owner[u]]
        self.same = self.u_stream == owner[v]
        self.earlier = u <= v
        of_v = self._segment(v)
        self.by_segment = np.argsort(of_v, kind="stable")
        self.bounds = np.searchsorted(of_v[self.by_segment], np.arange(len(starts) + 1))
        self.readers = Counter(int(s) for s in self._segment(
            np.fromiter((src for srcs in waits for src in srcs), np.int64)))
        self.kept: dict[int, np.ndarray] = {}
        self.answers = np.zeros(len(u), bool)

    def _segment(self, gids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, gids, side="right") - 1

    def close(self, start: int, row: np.ndarray) -> None:
        """The segment starting at task `start` has clock row `row`: answer its queries."""
        s = self.first[start]
        if self.readers[s]:
            self.kept[s] = row
        qs = self.by_segment[self.bounds[s]:self.bounds[s + 1]]
        if len(qs):
            self.answers[qs] = np.where(self.same[qs], self.earlier[qs],
                                        row[self.u_stream[qs]] >= self.u_pos[qs])

    def row_of(self, src: int) -> np.ndarray:
        """The clock row of an awaited task's segment (its own entry is the caller's)."""
        s = int(np.searchsorted(self.starts, src, side="right")) - 1
        row = self.kept[s]
        self.readers[s] -= 1
        if not self.readers[s]:
            del self.kept[s]
        return row
