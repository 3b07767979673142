"""Execution orders that batch each stream's waits: fewer events for the same streams.

Minimal sync keeps an event for a dependency between two streams only where no other ordering
implies it: once stream B has waited for node x of stream A, every node A ran before x is done
for B too. In T-order a stream that lags behind its producers (AllReduces behind the backward
pass) still waits for them one at a time, and a stream ahead of its producer (the updates
behind the AllReduces) waits for each. In another order the same streams need far fewer events:
the lagging stream waits only when nothing else is left to run, and then for the producer that
finished last; the leading one waits as late as its slack allows, for all that finished by
then.

`waits_batched` simulates the plan of a fixed assignment (the emulator's task times, an event's
record and wait latency, no contention for cores) and returns the order it ran the nodes in. A
stream that is free runs:

* a node whose producers on other streams it already knows done (no new event): the one with
  the longest path to the end (`urgent_first`) or the first in T-order;
* else, from the latest start of its most urgent node on (at once without `latest`), the node
  whose producers finished last among those finished by then: its event covers the others.

What a stream knows done is a vector clock: per stream, the last node known to run before.
`latest_starts` schedules a run back from a target makespan: its nodes in the order each stream
ran them, and their dependencies. The search's emulated checks decide which order is kept; the
simulation only proposes. The nodes a stream can run without a wait come from a heap, and so
do the earliest latest start and ready time of those that wait; a step that waits scans the
waiting ones, so a run costs up to O(nodes x width): the search runs it up to
`fewest_events.WAITS_NODES` streamed nodes.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from streamalloc.solver.dag import TaskDag

_EPS = 1e-9


@dataclass(frozen=True)
class Assignment:
    """What the simulation runs: the streamed nodes' streams, their task times, and an event's
    record and wait latency."""

    dag: TaskDag
    streams: Sequence[int]
    times: Sequence[float]
    latency: float


@dataclass(frozen=True)
class WaitsRun:
    """The nodes in the order the simulation ran them (a topological order) and their
    simulated finish times."""

    placed: tuple[int, ...]
    finish: tuple[float, ...]

    @property
    def makespan(self) -> float:
        return max(self.finish, default=0.0)


def waits_batched(assignment: Assignment, *, urgent_first: bool,
                  latest: Sequence[float] | None = None) -> WaitsRun:
    """The simulated run described above; `latest`: the latest start of each node (None: wait
    for nothing)."""
    return _Simulation(assignment, urgent_first, latest).run()


def latest_starts(assignment: Assignment, run: WaitsRun, target: float) -> list[float]:
    """The latest start of every node for the run to end by `target`: before its stream's next
    node in the run and its consumers (an event's latency before one on another stream)."""
    dag, streams, times = assignment.dag, assignment.streams, assignment.times
    latest = [0.0] * dag.size
    following: dict[int, int] = {}
    for v in reversed(run.placed):
        finish = target
        for w in dag.succs[v]:
            finish = min(finish, latest[w] - (assignment.latency
                                              if streams[w] != streams[v] else 0.0))
        if streams[v] in following:
            finish = min(finish, latest[following[streams[v]]])
        following[streams[v]] = v
        latest[v] = finish - times[v]
    return latest


class _Simulation:
    """The streams' state: ready nodes, when each is free, what each knows done, and a heap
    of the times each stream is looked at next."""

    def __init__(self, assignment: Assignment, urgent_first: bool,
                 latest: Sequence[float] | None) -> None:
        self.dag, self.streams = assignment.dag, assignment.streams
        self.times, self.latency = assignment.times, assignment.latency
        self.urgent_first, self.latest = urgent_first, latest
        dag = self.dag
        self.rank = dag.bottom_levels(self.times)
        self.missing = [len(p) for p in dag.preds]
        ids = set(self.streams)
        # a stream's ready nodes: those whose producers on other streams it knows done (a
        # heap, the next to run first), and the others with those producers (which only
        # shrink: a stream's knowledge only grows)
        self.free: dict[int, list[tuple[float, int]]] = {s: [] for s in ids}
        self.waiting: dict[int, dict[int, list[int]]] = {s: {} for s in ids}
        # the waiting nodes' latest starts and ready times, as heaps whose entries go stale
        # (the node ran, or its ready time fell) and are dropped when on top: a stream that
        # runs a free node then need not scan what waits
        self.latest_heap: dict[int, list[tuple[float, int]]] = {s: [] for s in ids}
        self.ready_heap: dict[int, list[tuple[float, int]]] = {s: [] for s in ids}
        self.ready_at = [0.0] * dag.size  # a waiting node's: its unknown producers' last end
        self.free_at = dict.fromkeys(ids, 0.0)
        self.known: dict[int, dict[int, int]] = {s: {} for s in ids}
        self.count = dict.fromkeys(ids, 0)
        self.position = [-1] * dag.size  # on its stream, once run
        self.clock: list[dict[int, int]] = [{} for _ in range(dag.size)]
        self.finish = [0.0] * dag.size
        self.heap: list[tuple[float, int]] = []
        self.due: dict[int, float] = {}  # the time each stream is next looked at

    def wake(self, stream: int, at: float) -> None:
        if at < self.due.get(stream, float("inf")):
            self.due[stream] = at
            heapq.heappush(self.heap, (at, stream))

    def run(self) -> WaitsRun:
        for v, count in enumerate(self.missing):
            if not count:
                self.make_ready(v)
        for s in sorted(self.free):
            if self.has_ready(s):
                self.wake(s, 0.0)
        placed: list[int] = []
        while self.heap:
            now, s = heapq.heappop(self.heap)
            if self.due.get(s) != now:
                continue
            del self.due[s]
            ran = self.visit(s, now)
            if ran is not None:
                placed.append(ran)
                self.release(ran, now)
        return WaitsRun(tuple(placed), tuple(self.finish))

    def visit(self, s: int, now: float) -> int | None:
        """The node stream `s` runs when looked at `now`, or None (nothing yet)."""
        if not self.has_ready(s):
            return None
        if self.free_at[s] > now + _EPS:
            self.wake(s, self.free_at[s])
            return None
        return self.step(s, now)

    def release(self, v: int, now: float) -> None:
        """After `v` ran: its consumers whose producers all ran are ready."""
        s = self.streams[v]
        for w in self.dag.succs[v]:
            self.missing[w] -= 1
            if not self.missing[w]:
                self.make_ready(w)
                self.wake(self.streams[w], now)
        if self.has_ready(s):
            self.wake(s, self.free_at[s])

    def has_ready(self, s: int) -> bool:
        return bool(self.free[s] or self.waiting[s])

    def make_ready(self, v: int) -> None:
        """`v`'s producers all ran: free, or waiting for those its stream does not know."""
        s = self.streams[v]
        unknown = self.unknown(s, self.dag.preds[v])
        if unknown:
            self.waiting[s][v] = unknown
            self.ready_at[v] = max(self.finish[p] for p in unknown)
            heapq.heappush(self.ready_heap[s], (self.ready_at[v], v))
            if self.latest is not None:
                heapq.heappush(self.latest_heap[s], (self.latest[v], v))
        else:
            heapq.heappush(self.free[s], self.key(v))

    def key(self, v: int) -> tuple[float, int]:
        """Free nodes run in this order: the most urgent (ties: first in T-order), or T-order."""
        return (-self.rank[v], v) if self.urgent_first else (0.0, v)

    def unknown(self, s: int, producers: Sequence[int]) -> list[int]:
        """Those of `producers` on other streams that stream `s` does not know done."""
        known, streams, position = self.known[s], self.streams, self.position
        return [p for p in producers
                if streams[p] != s and position[p] > known.get(streams[p], -1)]

    def step(self, s: int, now: float) -> int | None:
        """Run a node of stream `s` at `now`, or look again later (None)."""
        unknown, ready_at = self.waiting[s], self.ready_at
        due = self.earliest(self.latest_heap[s], s, stale_at=None) \
            if self.latest is not None else None
        urgent = due is not None and due <= now + _EPS
        if self.free[s] and not urgent:  # a free node runs unless a done wait is urgent
            return self.start(s, heapq.heappop(self.free[s])[1], now, [])
        first = self.earliest(self.ready_heap[s], s, stale_at=ready_at)
        if self.free[s] and first > now + _EPS:
            return self.start(s, heapq.heappop(self.free[s])[1], now, [])
        if first > now + _EPS:
            self.wake(s, first)
            return None
        done = [v for v in unknown if ready_at[v] <= now + _EPS]
        if due is not None and not urgent:  # wait for more producers while the slack lasts
            self.wake(s, min([due, *(ready_at[v] for v in unknown if ready_at[v] > now)]))
            return None
        v = max(done, key=lambda u: (ready_at[u], self.rank[u], -u))
        return self.start(s, v, now + self.latency, unknown.pop(v))

    def earliest(self, heap: list[tuple[float, int]], s: int,
                 stale_at: Sequence[float] | None) -> float:
        """The least key of `heap` among stream `s`'s waiting nodes (inf: none), its stale
        entries popped: a node no longer waiting, or (`stale_at`: the nodes' current keys)
        whose key changed."""
        waiting = self.waiting[s]
        while heap:
            key, v = heap[0]
            if v in waiting and (stale_at is None or stale_at[v] == key):
                return key
            heapq.heappop(heap)
        return float("inf")

    def start(self, s: int, v: int, at: float, waited: list[int]) -> int:
        known = self.known[s]
        for p in waited:  # what the producers knew, the stream now knows
            for stream, position in self.clock[p].items():
                if position > known.get(stream, -1):
                    known[stream] = position
        if waited:  # the waiting nodes' unknown producers shrink, some to none
            waiting = self.waiting[s]
            for w, producers in list(waiting.items()):
                left = self.unknown(s, producers)
                if not left:
                    del waiting[w]
                    heapq.heappush(self.free[s], self.key(w))
                elif len(left) < len(producers):
                    waiting[w] = left
                    ready = max(self.finish[p] for p in left)
                    if ready != self.ready_at[w]:
                        self.ready_at[w] = ready
                        heapq.heappush(self.ready_heap[s], (ready, w))
        self.position[v] = self.count[s]
        self.count[s] += 1
        self.clock[v] = {**known, s: self.position[v]}
        self.finish[v] = at + self.times[v]
        self.free_at[s] = self.finish[v]
        return v
