"""Where the split's Send/Recv tasks go (Phase B, B4 and B6).

GE's walk (`split.py`) decides the physical stream of every task it counts, the ids of the new
streams and one event per split (5.5-5.7). It counts a node's Recvs before the node and its
Sends after it, so a split can fall between a node and its own Recvs or Sends (5.6: "even a
Send" opens a stream): GE then waits or records on one physical stream and runs the node on
another. Here every event stays with its node: a Phase-A Send or Recv goes on the physical
stream that now holds its node (on the node's attached stream, for one on an attached stream),
so an event's ends are where its `events` entry says and a multi-dims branch keeps its waits.
GE's split points, new stream ids and event count are kept: each split event then goes from
the last task left on the stream before the split point to the first task of the new stream
(a new stream whose only task was such a Send keeps the split event's Recv alone).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Mapping, Sequence

from streamalloc.sync.generate import Namer, sync_task
from streamalloc.sync.model import RECV_TYPES, SEND_TYPES, Task
from streamalloc.sync.split import SplitEvent

Key = tuple[int, ...]  # a place in the task order: (index,) of a task, extended for insertions
Logical = Mapping[int, tuple[int, tuple[int, ...]]]  # id(task) -> (stream, attached) before


_SYNC_TYPES = SEND_TYPES | RECV_TYPES


def logical_places(tasks: Sequence[Task]) -> dict[int, tuple[int, tuple[int, ...]]]:
    """The logical stream and attached streams, before the walk moves them, of what `rehome`
    reads: each Phase-A Send/Recv and the node it follows or precedes."""
    syncs = [t for t in tasks if t.type in _SYNC_TYPES]
    peers = {t.peer for t in syncs}
    places = {id(t): (t.stream, tuple(t.attached)) for t in tasks
              if not t.is_sync and t.name in peers}
    places.update((id(t), (t.stream, tuple(t.attached))) for t in syncs)
    return places


def rehome(tasks: Sequence[Task], logical: Logical) -> None:
    """Put each Phase-A Send/Recv on the physical stream of its node (the walk may have left it
    on the other side of a split point)."""
    syncs = [t for t in tasks if t.type in _SYNC_TYPES]
    peers = {t.peer for t in syncs}
    nodes = {t.name: t for t in tasks if not t.is_sync and t.name in peers}
    for task in syncs:
        node = nodes.get(task.peer)
        if node is None:
            continue
        stream = logical[id(task)][0]
        main, attached = logical[id(node)]
        if stream == main:
            task.stream = node.stream
        elif stream in attached:
            task.stream = node.attached[attached.index(stream)]


class _Order:
    """The task order under construction. Given task i sorts at key (i, 0); an inserted task
    gets a longer key that sorts where it goes. Only the inserted tasks (a few per split) are
    stored by key: the given ones are found by position, each stream's as an array of
    positions, so a 1M-task order costs 8 bytes a task here."""

    def __init__(self, tasks: Sequence[Task], events: Sequence[SplitEvent]) -> None:
        self.given = tasks
        self.given_on: dict[int, array[int]] = defaultdict(lambda: array("q"))
        for i, task in enumerate(tasks):
            self.given_on[task.stream].append(i)
        ends = {id(t) for e in events for t in (e.pre, e.recv)}
        self.key_of: dict[int, Key] = {id(t): (i, 0) for i, t in enumerate(tasks)
                                       if id(t) in ends}  # the events' tasks, all keys read
        self.inserted: dict[Key, Task] = {}
        self.inserted_on: dict[int, list[Key]] = defaultdict(list)
        self.serial = 0

    def _put(self, key: Key, task: Task) -> None:
        self.inserted[key] = task
        insort(self.inserted_on[task.stream], key)

    def task_at(self, key: Key) -> Task:
        """The task at `key`."""
        return self.given[key[0]] if len(key) == 2 else self.inserted[key]

    def after(self, key: Key, task: Task) -> None:
        """Insert `task` after the task at `key` (after earlier insertions there)."""
        self.serial += 1
        self._put((*key, 1, self.serial), task)

    def before(self, key: Key, task: Task) -> None:
        """Insert `task` right before the task at `key` (after earlier insertions there)."""
        self.serial += 1
        self._put((*key[:-1], key[-1] - 1, self.serial), task)

    def first_on(self, stream: int) -> Key | None:
        """The key of the first task on `stream`."""
        given, inserted = self.given_on.get(stream), self.inserted_on.get(stream)
        keys = [k for k in ((given[0], 0) if given else None, inserted[0] if inserted else None)
                if k is not None]
        return min(keys, default=None)

    def last_before(self, stream: int, key: Key) -> Key | None:
        """The key of the last task on `stream` before `key`."""
        keys: list[Key] = []
        given = self.given_on.get(stream)
        if given:
            n = bisect_left(given, key[0])
            if n < len(given) and given[n] == key[0] and (key[0], 0) < key:
                n += 1
            if n:
                keys.append((given[n - 1], 0))
        inserted = self.inserted_on.get(stream, [])
        i = bisect_left(inserted, key)
        if i:
            keys.append(inserted[i - 1])
        return max(keys, default=None)

    def tasks(self) -> list[Task]:
        """The task order: the given tasks merged with the inserted ones by key."""
        extra = sorted(self.inserted)
        out: list[Task] = []
        j = 0
        for i, task in enumerate(self.given):
            while j < len(extra) and extra[j][0] <= i and extra[j] < (i, 0):
                out.append(self.inserted[extra[j]])
                j += 1
            out.append(task)
        out.extend(self.inserted[k] for k in extra[j:])
        return out


def place_split_events(tasks: Sequence[Task], events: Sequence[SplitEvent],
                       namer: Namer) -> list[Task]:
    """B6: a Send and a Recv per split event, in event order (ids as the walk gave them)."""
    if not events:
        return list(tasks)
    order = _Order(tasks, events)
    boundaries = _boundaries(order, events)
    for event in events:
        if event.attached:
            _around(order, event, namer)
        else:
            _at_boundary(order, event, boundaries[event.new], namer)
    return order.tasks()


def _boundaries(order: _Order, events: Sequence[SplitEvent]) -> dict[int, Key]:
    """Where each new stream starts in the task order: its first task; for a stream left
    without tasks (its tasks went back to their nodes' streams), where the stream that
    continues it starts, else where GE opened it."""
    opened = {e.old: e.new for e in events if not e.attached}
    result: dict[int, Key] = {}
    for event in reversed(events):  # a continuing stream is opened after the one it continues
        if event.attached:
            continue
        candidates = [k for k in (order.first_on(event.new), result.get(opened.get(event.new, -1)))
                      if k is not None]
        result[event.new] = min(candidates, default=order.key_of[id(event.recv)])
    return result


def _around(order: _Order, event: SplitEvent, namer: Namer) -> None:
    """A split of an attached stream: its work is not listed, so the Send follows the node
    counted before the split point and the Recv precedes the first node of the new stream."""
    send = sync_task(namer, "Send", event.id, event.old, event.pre)
    recv = sync_task(namer, "Recv", event.id, event.new, event.recv)
    order.after(order.key_of[id(event.pre)], send)
    order.before(order.key_of[id(event.recv)], recv)


def _at_boundary(order: _Order, event: SplitEvent, boundary: Key, namer: Namer) -> None:
    """A split of a main stream: from the last task left on the old stream before the new
    stream starts, to the new stream's first task (on a stream left empty, alone)."""
    first = order.first_on(event.new)
    last = order.last_before(event.old, boundary)
    send = sync_task(namer, "Send", event.id, event.old,
                     order.task_at(last) if last is not None else event.pre)
    recv = sync_task(namer, "Recv", event.id, event.new,
                     order.task_at(first) if first is not None else event.recv)
    if last is not None:
        order.after(last, send)
    else:
        order.before(boundary, send)
        send.peer = send.name  # nothing before it on its stream
    order.before(boundary, recv)
    if first is None:
        recv.peer = recv.name  # the new stream holds nothing else
