"""Heads and tails of the sync-aware bound (`optimal/bounds.py`): each task's earliest start
(and least time after its end) over every plan, with what sync adds between streams at a join,
between a fork and a join, and at a split before a join (`split_join.least_gap`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamalloc.optimal.cliques import bits_of
from streamalloc.optimal.split_join import least_gap

SPLIT_PAIRS = 4  # a fork's longest producers of a join paired by `_split_join`
SERIAL_SPAN = 64  # forks (in topological positions before a join) whose pairwise exclusive
# tasks between are counted one at a time


@dataclass(frozen=True, slots=True)
class Latency:
    """What a cross-stream dependency adds (`sync`), and the least record (Send) and wait
    (Recv) a stream runs for one, in us."""

    sync: float
    record: float
    wait: float

    @property
    def window(self) -> float:
        """What a fork-join's Send and Recv take on the stream of its fork and join."""
        return self.record + self.wait


def heads(order: Sequence[int], preds: Sequence[Sequence[int]] | dict[int, list[int]],
          succs: Sequence[Sequence[int]] | dict[int, list[int]], time: Sequence[float], *,
          real: Sequence[bool], latency: Latency, overlap: dict[int, int],
          before: dict[int, int], after: dict[int, int],
          floors: Mapping[int, tuple[int, float]] | None = None) -> dict[int, float]:
    """Earliest start of each task in `order` (a topological order over `preds`; `succs` the
    reverse edges); run on the reversed order with successors, the least time after each
    task's end. `before`, `after`: the tasks before and after each in that direction
    (`closure` over `preds` and over `succs`). `floors`: per task b, a task a before it and a
    least time from a's end to b's start (`optimal/series.py`; reversed: from b's end to a's
    start)."""
    head: dict[int, float] = {}
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
        if floors and t in floors:
            before_t, gap = floors[t]
            start = max(start, head[before_t] + time[before_t] + gap)
        head[t] = start
    return head


def _split_join(j: int, preds: Sequence[Sequence[int]] | dict[int, list[int]],
                time: Sequence[float], head: dict[int, float], *, related: dict[int, int],
                latency: Latency, position: dict[int, int]) -> float:
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
    overlap: dict[int, int]  # per timed task, the tasks that may run beside it (`overlaps`)

    def start(self, known: float, latency: Latency) -> float:
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
        best = known
        for f, (length, branches) in self._distances().items():
            if branches < 2:
                continue
            end = self.head[f] + self.time[f]
            near = self.position[self.j] - self.position[f] <= SERIAL_SPAN
            if end + length + latency.window <= best and not near:
                continue
            tasks = bits_of(self.after[f] & self.before[self.j])
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

    def _distances(self) -> dict[int, tuple[float, int]]:
        """Per task before j (latest first), the longest time from its end to j's start over
        the tasks between them, and how many of its successors reach j (or are j): one walk
        over j's ancestors gives both."""
        j, time, position = self.j, self.time, self.position
        dist: dict[int, tuple[float, int]] = {}
        for x in sorted(bits_of(self.before[j]), key=lambda t: -position[t]):
            longest, branches = 0.0, 0
            for s in self.succs[x]:
                if s == j:
                    branches += 1
                elif s in dist:
                    branches += 1
                    longest = max(longest, time[s] + dist[s][0])
            dist[x] = (longest, branches)
        return dist


def closure(order: Sequence[int], preds: Sequence[Sequence[int]] | dict[int, list[int]]
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
