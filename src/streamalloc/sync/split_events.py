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

from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Mapping, Sequence

from streamalloc.sync.generate import Namer, sync_task
from streamalloc.sync.model import RECV_TYPES, SEND_TYPES, Task
from streamalloc.sync.split import SplitEvent

Key = tuple[int, ...]  # a place in the task order: (index,) of a task, extended for insertions
Logical = Mapping[int, tuple[int, tuple[int, ...]]]  # id(task) -> (stream, attached) before


def logical_places(tasks: Sequence[Task]) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Each task's logical stream and attached streams, before the walk moves them."""
    return {id(t): (t.stream, tuple(t.attached)) for t in tasks}


def rehome(tasks: Sequence[Task], logical: Logical) -> None:
    """Put each Phase-A Send/Recv on the physical stream of its node (the walk may have left it
    on the other side of a split point)."""
    nodes = {t.name: t for t in tasks if not t.is_sync}
    for task in tasks:
        node = nodes.get(task.peer) if task.type in SEND_TYPES | RECV_TYPES else None
        if node is None:
            continue
        stream = logical[id(task)][0]
        main, attached = logical[id(node)]
        if stream == main:
            task.stream = node.stream
        elif stream in attached:
            task.stream = node.attached[attached.index(stream)]


class _Order:
    """The task order under construction: tasks by key, and each stream's keys sorted."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.by_key: dict[Key, Task] = {}
        self.key_of: dict[int, Key] = {}
        self.keys_on: dict[int, list[Key]] = defaultdict(list)
        self.serial = 0
        for i, task in enumerate(tasks):
            self._put((i, 0), task)

    def _put(self, key: Key, task: Task) -> None:
        self.by_key[key] = task
        self.key_of[id(task)] = key
        insort(self.keys_on[task.stream], key)

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
        keys = self.keys_on.get(stream)
        return keys[0] if keys else None

    def last_before(self, stream: int, key: Key) -> Key | None:
        """The key of the last task on `stream` before `key`."""
        keys = self.keys_on.get(stream, [])
        i = bisect_left(keys, key)
        return keys[i - 1] if i else None

    def tasks(self) -> list[Task]:
        """The task order."""
        return [self.by_key[k] for k in sorted(self.by_key)]


def place_split_events(tasks: Sequence[Task], events: Sequence[SplitEvent],
                       namer: Namer) -> list[Task]:
    """B6: a Send and a Recv per split event, in event order (ids as the walk gave them)."""
    if not events:
        return list(tasks)
    order = _Order(tasks)
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
                     order.by_key[last] if last is not None else event.pre)
    recv = sync_task(namer, "Recv", event.id, event.new,
                     order.by_key[first] if first is not None else event.recv)
    if last is not None:
        order.after(last, send)
    else:
        order.before(boundary, send)
        send.peer = send.name  # nothing before it on its stream
    order.before(boundary, recv)
    if first is None:
        recv.peer = recv.name  # the new stream holds nothing else
