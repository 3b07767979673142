"""Orders and streams that fill the physical streams GE's split makes.

The split walks a logical stream's tasks in order and opens a physical stream, with an event,
where the next task's units do not fit (`sync/split.py`). After `grouped` (each stream's large
tasks back to back), a run of AllReduces (245 of a physical stream's 997 units) fills one with
four, 980 units, and the fifth opens the next; the small tasks that could fill the 17 units
left, the updates behind those AllReduces, come after the whole run. `filled` walks each
stream as the split does and, where a large task does not fit, first runs the later small
tasks of its stream that could already run (their producers ran; a producer without a stream
and without producers, such as a weight, comes along) in the room left. Each logical stream
still ends in a physical stream it fills only in part: `rebalanced` moves the last large
tasks of the stream whose last physical stream holds least, with what follows them on it, to
another stream, where the walk then counts fewer physical streams in all. The plan's events
decide what is kept (the ResNet-50 training step under the parallel options: 43 -> 42 events,
7.1 -> 7.0 ms).

>>> from types import MappingProxyType
>>> from streamalloc.optimal.order import Orders
>>> preds = MappingProxyType({"a": (), "b": (), "c": (), "u": ("a",), "v": ("b",)})
>>> orders = Orders(None, preds, ("a", "b", "c", "u", "v"))  # type: ignore[arg-type]
>>> units = {"a": 4, "b": 4, "c": 4, "u": 1, "v": 1}
>>> filled(orders, orders.start, dict.fromkeys(units, 0), units, capacity=10, large=3)
('a', 'b', 'u', 'v', 'c')
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from streamalloc.optimal.order import Order, Orders
from streamalloc.solver.dag import TaskDag

REBALANCED_MOVES = 4  # the last large tasks of a stream moved together, from 1 up to this many


def split_walk(names: Sequence[str], stream_of: Mapping[str, int], units: Mapping[str, int],
               capacity: int) -> dict[int, tuple[int, int]]:
    """Per stream, the physical streams the split's walk of `names` (in order) opens and the
    units of its last one (node units only: the Sends and Recvs of events add a few)."""
    walk: dict[int, tuple[int, int]] = {}
    for name in names:
        stream = stream_of.get(name)
        if stream is None:
            continue
        count, fill = walk.get(stream, (1, 0))
        walk[stream] = (count + 1, units[name]) if fill and fill + units[name] > capacity \
            else (count, fill + units[name])
    return walk


def filled(orders: Orders, order: Order, stream_of: Mapping[str, int],
           units: Mapping[str, int], *, capacity: int, large: int) -> Order:
    """`order` with small tasks (fewer than `large` units) of a stream run, in their order,
    just before a large task that does not fit in the room its physical stream has left, as
    many as fit and can run there (`_Filling`)."""
    return _Filling(orders, order, stream_of=stream_of, units=units, capacity=capacity,
                    large=large).run()


class _Filling:
    """The walk of `filled`: the tasks in `order`, each run once; per stream the units of its
    physical stream so far, and its small tasks that could run now (their producers ran, or
    are sources without a stream, which come along), by position in `order` (a heap: a walk
    is O(n log n), where rescanning the order at each large task was quadratic)."""

    def __init__(self, orders: Orders, order: Order, *, stream_of: Mapping[str, int],
                 units: Mapping[str, int], capacity: int, large: int) -> None:
        self.orders, self.order, self.stream_of, self.units = orders, order, stream_of, units
        self.capacity, self.large = capacity, large
        self.position = {name: k for k, name in enumerate(order)}
        self.consumers: dict[str, list[str]] = {}
        self.waiting: dict[str, int] = {}  # per small task, producers that must run first
        self.ready: dict[int, list[int]] = {}  # per stream, positions of small tasks
        for name in order:
            for p in orders.preds[name]:
                self.consumers.setdefault(p, []).append(name)
            if self._small(name):
                self.waiting[name] = sum(1 for p in orders.preds[name] if self._blocks(p))
                if not self.waiting[name]:
                    heapq.heappush(self.ready.setdefault(stream_of[name], []),
                                   self.position[name])
        self.fill: dict[int, int] = {}
        self.ran: set[str] = set()
        self.out: list[str] = []

    def _small(self, name: str) -> bool:
        return name in self.stream_of and self.units[name] < self.large

    def _blocks(self, producer: str) -> bool:
        """Must `producer` run before a small task can be pulled forward (it does unless it
        is a source without a stream)?"""
        return producer in self.stream_of or bool(self.orders.preds[producer])

    def run(self) -> Order:
        for name in self.order:
            if name in self.ran:
                continue
            stream = self.stream_of.get(name)
            if stream is not None and self.units[name] >= self.large:
                while self._over(stream, name) and self._pull(stream):
                    pass
            self._place(name)
        return tuple(self.out)

    def _over(self, stream: int, name: str) -> bool:
        before = self.fill.get(stream, 0)
        return bool(before) and before + self.units[name] > self.capacity

    def _pull(self, stream: int) -> bool:
        """Run the ready small tasks of `stream` that fit in the room its physical stream has
        left, in their order, each after the sources it needs; False when none does."""
        room = self.capacity - self.fill.get(stream, 0)
        heap = self.ready.get(stream, [])
        taken: list[int] = []
        kept: list[int] = []
        while heap and room > 0:
            at = heapq.heappop(heap)
            name = self.order[at]
            if name in self.ran:
                continue
            if self.units[name] > room:
                kept.append(at)
                continue
            taken.append(at)
            room -= self.units[name]
        for at in kept:
            heapq.heappush(heap, at)
        sources = {self.position[p] for at in taken for p in self.orders.preds[self.order[at]]
                   if p not in self.ran}
        for at in sorted(sources | set(taken)):
            self._place(self.order[at])
        return bool(taken)

    def _place(self, name: str) -> None:
        """Run `name`: its stream's count as the split walks it; small tasks it was the last
        producer of become ready."""
        stream = self.stream_of.get(name)
        if stream is not None:
            before = self.fill.get(stream, 0)
            if before and before + self.units[name] > self.capacity:
                before = 0
            self.fill[stream] = before + self.units[name]
        self.ran.add(name)
        self.out.append(name)
        if not self._blocks(name):
            return
        for consumer in self.consumers.get(name, ()):
            if consumer in self.waiting:
                self.waiting[consumer] -= 1
                if not self.waiting[consumer] and consumer not in self.ran:
                    heapq.heappush(self.ready.setdefault(self.stream_of[consumer], []),
                                   self.position[consumer])


def rebalanced(dag: TaskDag, streams: Sequence[int], order: Order, units: Mapping[str, int],
               *, capacity: int, large: int) -> list[list[int]]:
    """Assignments that move the last 1..REBALANCED_MOVES large tasks of the stream whose
    last physical stream holds least, with every node of that stream they reach, to each
    other stream, where the split's walk of `order` then counts fewer physical streams."""
    index = {name: v for v, name in enumerate(dag.names)}
    names = [name for name in order if name in index]
    stream_of = {name: streams[index[name]] for name in names}
    walk = split_walk(names, stream_of, units, capacity)
    if len(walk) < 2:
        return []
    total = sum(count for count, _ in walk.values())
    source = min(walk, key=lambda s: (walk[s][1], s))
    mine = [name for name in names if stream_of[name] == source]
    heavy = [name for name in mine if units[name] >= large]
    found: list[list[int]] = []
    for k in range(1, min(REBALANCED_MOVES, len(heavy)) + 1):
        after = dag.reached_from([index[name] for name in heavy[-k:]])
        moving = [index[name] for name in mine if after[index[name]]]
        for target in sorted(walk):
            if target == source:
                continue
            moved = list(streams)
            for v in moving:
                moved[v] = target
            counts = split_walk(names, {n: moved[index[n]] for n in names}, units, capacity)
            if sum(count for count, _ in counts.values()) < total:
                found.append(moved)
    return found
