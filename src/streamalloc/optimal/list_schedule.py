"""Streams from a list schedule: the makespan objective's constructive start.

The emulated device runs each engine's tasks in arrival order, a task arriving once its stream
reached it and its producers on other streams recorded their events. So a plan is fast when
every task can arrive as soon as its producers finish: on a stream that is idle by then. This
simulates that device (the same FIFO admission of block-dim units per engine, launch and
event latencies from the cost table) with streams chosen as tasks become ready:

* the stream of the producer that finished last, when idle and the task follows its last task
  in T-order (the edge then needs no event and pays no latency);
* else the idle stream that finished last with an earlier T-order tail (fewest streams kept
  busy);
* else a new stream, while the stream limit allows; else, at the limit, the idle stream that
  finished last (it runs the task in T-order, maybe not where the simulation put it); else the
  task waits for the first stream that frees up.

With a patience (the patient variant, a second candidate), a task whose last producer's stream
is busy with a task expected to end within the patience waits for it once, instead of taking
another stream: a short wait costs less than an event and its Send and Recv.

Among tasks arriving at the same time the one with the longest path to the end goes first.
Each stream's tasks are then in T-order, so the streams are chains for the shared evaluation.
`list_schedule_in_order` lifts the T-order condition (a stream takes any idle task) and returns
the order the tasks were placed in, which the plan then runs them in (`optimal/order.py`).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.node_tasks import node_task
from streamalloc.solver.dag import TaskDag

_FINISH, _ARRIVE, _QUEUE = 0, 1, 2  # event kinds at equal times: releases before arrivals
Entry = tuple[float, int, float, int]  # (time, kind, -rank, node)


def list_schedule_chains(graph: Graph, dag: TaskDag, costs: CostTable, max_streams: int,
                         patience: float = 0.0) -> tuple[tuple[int, ...], ...]:
    """Streams (chains in T-order) of the greedy schedule described above. With `patience`,
    a task whose last producer's stream is busy but expected to be free within `patience` us
    waits for it (once) instead of taking another stream: a short wait beats an event."""
    return _simulation(graph, dag, costs, max_streams, patience, in_t_order=True).run()


def list_schedule_in_order(graph: Graph, dag: TaskDag, costs: CostTable, max_streams: int,
                           patience: float = 0.0
                           ) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The same schedule where a stream may take any idle task, not only one later in T-order
    than its last: the streams (each in the order placed) and the nodes in the order they were
    placed, a topological order that the plan must then run them in (`optimal/order.py`)."""
    sim = _simulation(graph, dag, costs, max_streams, patience, in_t_order=False)
    sim.run()
    chains: dict[int, list[int]] = {}
    for v in sim.placed:
        chains.setdefault(sim.stream_of[v], []).append(v)
    return tuple(tuple(c) for _, c in sorted(chains.items())), tuple(sim.placed)


def _simulation(graph: Graph, dag: TaskDag, costs: CostTable, max_streams: int,
                patience: float, *, in_t_order: bool) -> _Simulation:
    model = CostModel(graph, costs)
    tasks = [node_task(graph, model, graph.node(n)) for n in dag.names]
    units = {e: costs.engine(e).units for e in sorted({t[0] for t in tasks if t[0]})}
    return _Simulation(dag, tasks, units, costs.event_record_us + costs.event_wait_us,
                       max_streams, patience, in_t_order)


@dataclass
class _Simulation:
    """The device's clock, engines and streams while the list schedule places tasks."""

    dag: TaskDag
    tasks: Sequence[tuple[str | None, float, int]]  # (engine, time, block dim) per node
    free: dict[str, int]                            # free units per engine
    latency: float                                  # event record + wait
    max_streams: int
    patience: float
    in_t_order: bool  # does a stream take only tasks later in T-order than its last?
    queue: dict[str, deque[int]] = field(default_factory=dict)
    heap: list[Entry] = field(default_factory=list)
    waiting: list[tuple[float, int, int]] = field(default_factory=list)  # no stream free
    finish: list[float] = field(default_factory=list)
    stream_of: list[int] = field(default_factory=list)
    tail: list[int] = field(default_factory=list)   # last node of each stream
    idle_since: dict[int, float] = field(default_factory=dict)
    rank: list[float] = field(default_factory=list)  # longest path to the end: priority
    busy_until: dict[int, float] = field(default_factory=dict)  # expected end per stream
    deferred: set[int] = field(default_factory=set)
    placed: list[int] = field(default_factory=list)  # the nodes in the order they got a stream

    def run(self) -> tuple[tuple[int, ...], ...]:
        """Simulate to the end; the streams in order of their first node."""
        n = self.dag.size
        succs = self.dag.succs
        rank = self.rank = self.dag.bottom_levels([t[1] for t in self.tasks])
        self.queue = {e: deque() for e in self.free}
        self.finish, self.stream_of = [0.0] * n, [-1] * n
        missing = [len(p) for p in self.dag.preds]
        for v in range(n):
            if not missing[v]:
                heapq.heappush(self.heap, (0.0, _ARRIVE, -rank[v], v))
        while self.heap:
            now, kind, _, v = heapq.heappop(self.heap)
            if kind == _FINISH:
                self._finished(v, now)
                for w in succs[v]:
                    missing[w] -= 1
                    if not missing[w]:
                        heapq.heappush(self.heap, (now, _ARRIVE, -rank[w], w))
            elif kind == _ARRIVE:
                self._place(v, now)
            else:
                self._queued(v, now)
        chains: dict[int, list[int]] = {}
        for v in range(n):
            chains.setdefault(self.stream_of[v], []).append(v)
        return tuple(tuple(c) for _, c in sorted(chains.items()))

    def _finished(self, v: int, now: float) -> None:
        self.finish[v] = now
        self.idle_since[self.stream_of[v]] = now
        engine = self.tasks[v][0]
        if engine is not None:
            self.free[engine] += self.tasks[v][2]
            self._admit(engine, now)
        while self.waiting and self.idle_since:
            _, u, _ = heapq.heappop(self.waiting)
            self._place(u, now)

    def _queued(self, v: int, now: float) -> None:
        engine = self.tasks[v][0]
        if engine is None:  # no device work: done on arrival
            heapq.heappush(self.heap, (now, _FINISH, 0.0, v))
            return
        self.queue[engine].append(v)
        self._admit(engine, now)

    def _place(self, v: int, now: float) -> None:
        if self._defer(v, now):
            return
        stream = self._choose(v)
        if stream is None:
            heapq.heappush(self.waiting, (now, v, 0))
            return
        self.idle_since.pop(stream, None)
        self.placed.append(v)
        self.stream_of[v] = stream
        self.tail[stream] = v
        arrive = max((self.finish[p] + (0.0 if self.stream_of[p] == stream else self.latency)
                      for p in self.dag.preds[v]), default=0.0)
        self.busy_until[stream] = max(now, arrive) + self.tasks[v][1]
        heapq.heappush(self.heap, (max(now, arrive), _QUEUE, -self.rank[v], v))

    def _defer(self, v: int, now: float) -> bool:
        """Wait (once) for the busy stream of the producer that finished last, when it is
        expected to be free within the patience."""
        if self.patience <= 0 or v in self.deferred or not self.dag.preds[v]:
            return False
        p = max(self.dag.preds[v], key=lambda p: (self.finish[p], -p))
        s = self.stream_of[p]
        free_at = self.busy_until.get(s, now)
        if s in self.idle_since or not self._follows(s, v) \
                or not now < free_at <= now + self.patience:
            return False
        self.deferred.add(v)
        heapq.heappush(self.heap, (free_at, _ARRIVE, -self.rank[v], v))
        return True

    def _choose(self, v: int) -> int | None:
        for p in sorted(self.dag.preds[v], key=lambda p: (-self.finish[p], p)):
            s = self.stream_of[p]
            if s in self.idle_since and self._follows(s, v):
                return s
        usable = [(t, s) for s, t in self.idle_since.items() if self._follows(s, v)]
        if usable:
            return max(usable)[1]
        if len(self.tail) < self.max_streams:
            self.tail.append(-1)
            return len(self.tail) - 1
        if self.idle_since:  # at the limit: the stream runs its tasks in T-order anyway
            return max((t, s) for s, t in self.idle_since.items())[1]
        return None

    def _follows(self, stream: int, v: int) -> bool:
        """May `v` run next on `stream`?"""
        return not self.in_t_order or self.tail[stream] < v

    def _admit(self, engine: str, now: float) -> None:
        """Start the engine's waiting tasks in arrival order while the first one fits."""
        waiting = self.queue[engine]
        while waiting and self.tasks[waiting[0]][2] <= self.free[engine]:
            v = waiting.popleft()
            self.free[engine] -= self.tasks[v][2]
            self.busy_until[self.stream_of[v]] = now + self.tasks[v][1]
            heapq.heappush(self.heap, (now + self.tasks[v][1], _FINISH, 0.0, v))

