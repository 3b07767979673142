"""The least time between a fork's end and a join's start when the fork f feeds two unordered
tasks x and y that both feed the join j (q and k of an attention block between their Split and
the MatMul), over every plan: `least_gap`.

Every plan places f, x, y and j on streams and orders each cross-stream dependency by a record
(Send) on the producer's stream after the producer and a wait (Recv) on the consumer's stream
before the consumer. The search below tries every assignment of the four tasks to streams,
every order of x and y on a shared stream, a Send after any subset of the tasks, and for each
cross-stream dependency every Send that may serve it and every place for its Recv on the
consumer's stream, in every order where Recvs share a place. It is a relaxation of real plans,
which can only add to it: a Send may serve any number of Recvs, other tasks and other
dependencies only delay these four, a dependency ordered through a third stream pays two
records and two waits, and a zero-time task between f and x (a Reshape) adds no time on any
stream. So the least start of j it finds, with f ending at 0, bounds every plan: head(j) >=
end(f) + least_gap(time x, time y, record, wait).

>>> least_gap(3.91, 3.91, 1.0, 1.0)  # one branch beside the fork, the other with the join
6.91
>>> least_gap(3.91, 3.91, 0.0, 0.0)  # no sync cost: the branches side by side
3.91
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cache

F, X, Y, J = range(4)
DEPENDENCIES = ((F, X), (F, Y), (X, J), (Y, J))
INF = float("inf")

Op = tuple[str, int]  # ("task", t), ("send", t: the Send right after task t), ("recv", t)


@cache
def least_gap(x_time: float, y_time: float, record: float, wait: float) -> float:
    """The least start of j over all plans of the pattern, f ending at time 0."""
    durations = (0.0, x_time, y_time, 0.0)
    best = INF
    for streams in _assignments():
        for orders in _task_orders(streams):
            for sends in _send_sets():
                for lists in _placements(streams, orders, sends):
                    best = min(best, _start_of_join(lists, durations, record, wait))
    return round(best, 9)


def _assignments() -> list[tuple[int, ...]]:
    """Every partition of f, x, y, j into streams (stream labels in first-use order)."""
    found: list[tuple[int, ...]] = []

    def grow(prefix: tuple[int, ...], top: int) -> None:
        if len(prefix) == 4:
            found.append(prefix)
            return
        for label in range(top + 2):
            grow((*prefix, label), max(top, label))

    grow((0,), 0)
    return found


def _task_orders(streams: tuple[int, ...]) -> Iterator[dict[int, list[int]]]:
    """The tasks of each stream in program order: f first, j last, x and y either way."""
    base: dict[int, list[int]] = {}
    for task in (F, X, Y, J):
        base.setdefault(streams[task], []).append(task)
    yield base
    if streams[X] == streams[Y]:
        swapped = {s: [Y if t == X else X if t == Y else t for t in tasks]
                   for s, tasks in base.items()}
        yield swapped


def _send_sets() -> Iterator[frozenset[int]]:
    """Which of f, x, y have a Send right after them (j feeds nothing here)."""
    for flags in itertools.product((False, True), repeat=3):
        yield frozenset(t for t, on in zip((F, X, Y), flags, strict=True) if on)


def _placements(streams: tuple[int, ...], orders: dict[int, list[int]], sends: frozenset[int]
                ) -> Iterator[dict[int, list[Op]]]:
    """Every choice of a serving Send and a Recv place per cross-stream dependency, as the op
    list of each stream (Recvs at one place in every order)."""
    position = {t: i for tasks in orders.values() for i, t in enumerate(tasks)}
    choices = []
    for producer, consumer in DEPENDENCIES:
        if streams[producer] == streams[consumer]:
            continue
        servers = [t for t in orders[streams[producer]]
                   if t in sends and position[t] >= position[producer]]
        if not servers:
            return  # a dependency without a Send after its producer: no plan
        places = range(position[consumer] + 1)  # before the k-th task of the consumer's stream
        choices.append([(streams[consumer], place, server)
                        for server in servers for place in places])
    for picked in itertools.product(*choices):
        recvs = sorted(set(picked))
        slots: dict[tuple[int, int], list[int]] = {}
        for stream, place, server in recvs:
            slots.setdefault((stream, place), []).append(server)
        for arrangement in itertools.product(*(itertools.permutations(servers)
                                               for servers in slots.values())):
            placed = dict(zip(slots, arrangement, strict=True))
            yield {stream: _ops(stream, tasks, sends, placed)
                   for stream, tasks in orders.items()}


def _ops(stream: int, tasks: list[int], sends: frozenset[int],
         placed: dict[tuple[int, int], tuple[int, ...]]) -> list[Op]:
    """A stream's program: each task after its Recvs, its Send right after it (a Send before
    the next task's Recvs: it ends sooner, and the stream's clock is no later)."""
    ops: list[Op] = []
    for place, task in enumerate(tasks):
        ops += [("recv", server) for server in placed.get((stream, place), ())]
        ops.append(("task", task))
        if task in sends:
            ops.append(("send", task))
    return ops


def _start_of_join(lists: dict[int, list[Op]], durations: tuple[float, ...], record: float,
                   wait: float) -> float:
    """Run the streams' op lists (f starts and ends at 0); INF when they wait on each other."""
    sent: dict[int, float] = {}
    clock = dict.fromkeys(lists, 0.0)
    next_op = dict.fromkeys(lists, 0)
    join_start = INF
    progress = True
    while progress:
        progress = False
        for stream, ops in lists.items():
            while next_op[stream] < len(ops):
                kind, task = ops[next_op[stream]]
                now = clock[stream]
                if kind == "recv":
                    if task not in sent:
                        break
                    now = max(now, sent[task]) + wait
                elif kind == "send":
                    now += record
                    sent[task] = now
                else:
                    if task == J:
                        join_start = now
                    now += durations[task]
                clock[stream] = now
                next_op[stream] += 1
                progress = True
    return join_start if all(next_op[s] == len(ops) for s, ops in lists.items()) else INF
