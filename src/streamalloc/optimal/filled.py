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
    many as fit and can run there."""
    sequence = list(order)
    fill: dict[int, int] = {}
    ran: set[str] = set()
    i = 0
    while i < len(sequence):
        name = sequence[i]
        stream = stream_of.get(name)
        if stream is not None:
            before = fill.get(stream, 0)
            if before and before + units[name] > capacity:
                if units[name] >= large:
                    pulled = _ready_smalls(orders, sequence, i, stream=stream,
                                           stream_of=stream_of, units=units,
                                           room=capacity - before, large=large, ran=ran)
                    if pulled:
                        moved = [sequence[j] for j in pulled]
                        for j in reversed(pulled):
                            del sequence[j]
                        sequence[i:i] = moved
                        continue  # walk on from the first task moved
                before = 0
            fill[stream] = before + units[name]
        ran.add(name)
        i += 1
    return tuple(sequence)


def _ready_smalls(orders: Orders, sequence: list[str], at: int, *, stream: int,
                  stream_of: Mapping[str, int], units: Mapping[str, int], room: int,
                  large: int, ran: set[str]) -> list[int]:
    """Positions after `at` of small tasks of `stream` whose producers ran (or are sources
    without a stream, which come along), as many as fit in `room`, with those sources."""
    position = {name: j for j, name in enumerate(sequence[at:], start=at)}
    pulled: list[int] = []
    for j in range(at + 1, len(sequence)):
        if room <= 0:
            break
        name = sequence[j]
        if stream_of.get(name) != stream or units[name] >= large or units[name] > room:
            continue
        missing = [p for p in orders.preds[name] if p not in ran]
        if all(p not in stream_of and not orders.preds[p] for p in missing):
            pulled += [position[p] for p in missing if position[p] not in pulled] + [j]
            room -= units[name]
    return sorted(pulled)


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
