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

import numpy as np

from streamalloc.errors import InternalError
from streamalloc.ir.graph import Node
from streamalloc.sync.generate import Namer, sync_task
from streamalloc.sync.model import RECV_TYPES, SEND_TYPES, Task, TaskColumns
from streamalloc.sync.split import SplitEvent

Key = tuple[int, ...]  # a place in the task order: (row, 0) of a row, extended for insertions
Logical = Mapping[int, tuple[int, tuple[int, ...]]]  # row -> (stream, attached) before the walk


_SYNC_TYPES = SEND_TYPES | RECV_TYPES


def _syncs_and_peers(rows: TaskColumns) -> list[tuple[int, int]]:
    """(row, row of its node) of each Phase-A Send/Recv: a Send follows its node's row, a
    Recv precedes it, with only made rows between (sync-tasks put them there; nothing since
    has reordered rows)."""
    found = []
    for row, task in sorted(rows.made.items()):
        if task.type not in _SYNC_TYPES:
            continue
        step = -1 if task.type in SEND_TYPES else 1
        node = row + step
        while node in rows.made:
            node += step
        if not 0 <= node < len(rows.names) or rows.names[node] != task.peer:
            raise InternalError(f"{task.name}: its node {task.peer!r} is not next to it")
        found.append((row, node))
    return found


def logical_places(rows: TaskColumns) -> tuple[list[tuple[int, int]], Logical]:
    """The Phase-A Send/Recv rows with their nodes' rows, and the logical stream and attached
    streams, before the walk moves them, of those rows and their nodes (what `rehome`
    reads)."""
    pairs = _syncs_and_peers(rows)
    places = {r: (rows.streams[r], rows.attached[r]) for pair in pairs for r in pair}
    return pairs, places


def rehome(rows: TaskColumns, pairs: list[tuple[int, int]], logical: Logical) -> None:
    """Put each Phase-A Send/Recv on the physical stream of its node (the walk may have left it
    on the other side of a split point)."""
    for row, node in pairs:
        stream = logical[row][0]
        main, attached = logical[node]
        if stream == main:
            rows.set_stream(row, rows.streams[node])
        elif stream in attached:
            rows.set_stream(row, rows.attached[node][attached.index(stream)])


class _Order:
    """The task order under construction. Given row i sorts at key (i, 0); an inserted task
    gets a longer key that sorts where it goes. Only the inserted tasks (a few per split) are
    stored by key: the given ones are found by row, each stream's as an array of rows, so a
    1M-task order costs 8 bytes a task here."""

    def __init__(self, rows: TaskColumns, nodes: Mapping[str, Node]) -> None:
        self.given = rows
        self.nodes = nodes
        streams = np.fromiter(rows.streams, np.int64, len(rows.streams))
        order = np.argsort(streams, kind="stable")  # each stream's rows, ascending
        ordered = streams[order]
        starts = np.flatnonzero(np.diff(ordered, prepend=ordered[:1] - 1))
        self.given_on: dict[int, np.ndarray] = dict(zip(
            ordered[starts].tolist(), np.split(order, starts[1:]), strict=True)) \
            if len(order) else {}
        self.inserted: dict[Key, Task] = {}
        self.inserted_on: dict[int, list[Key]] = defaultdict(list)
        self.serial = 0

    def _put(self, key: Key, task: Task) -> None:
        self.inserted[key] = task
        insort(self.inserted_on[task.stream], key)

    def peer_at(self, key: Key) -> tuple[str, str]:
        """The name and graph of the task at `key`."""
        if len(key) != 2:
            task = self.inserted[key]
            return task.name, task.graph
        made = self.given.made.get(key[0])
        if made is not None:
            return made.name, made.graph
        name = self.given.names[key[0]]
        return name, self.nodes[name].graph

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
        keys = [k for k in ((int(given[0]), 0) if given is not None else None,
                            inserted[0] if inserted else None) if k is not None]
        return min(keys, default=None)

    def last_before(self, stream: int, key: Key) -> Key | None:
        """The key of the last task on `stream` before `key`."""
        keys: list[Key] = []
        given = self.given_on.get(stream)
        if given is not None:
            n = int(np.searchsorted(given, key[0]))
            if n < len(given) and given[n] == key[0] and (key[0], 0) < key:
                n += 1
            if n:
                keys.append((int(given[n - 1]), 0))
        inserted = self.inserted_on.get(stream, [])
        i = bisect_left(inserted, key)
        if i:
            keys.append(inserted[i - 1])
        return max(keys, default=None)

    def rows(self) -> TaskColumns:
        """The task order: the given rows merged with the inserted tasks by key."""
        inserts: list[tuple[int, Task]] = []
        for key in sorted(self.inserted):
            # a key (i, 0, ...) or (i, -1, ...) sorts before given row i + 1, or before row i
            inserts.append((key[0] + 1 if key[1] >= 0 else key[0], self.inserted[key]))
        return self.given.inserted(inserts)


def place_split_events(rows: TaskColumns, events: Sequence[SplitEvent], namer: Namer,
                       nodes: Mapping[str, Node]) -> TaskColumns:
    """B6: a Send and a Recv per split event, in event order (ids as the walk gave them);
    `nodes`: the graph's nodes by name."""
    if not events:
        return rows
    order = _Order(rows, nodes)
    boundaries = _boundaries(order, events)
    for event in events:
        if event.attached:
            _around(order, event, namer)
        else:
            _at_boundary(order, event, boundaries[event.new], namer)
    return order.rows()


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
        result[event.new] = min(candidates, default=(event.recv, 0))
    return result


def _sync(namer: Namer, kind: str, event: SplitEvent, stream: int, peer: tuple[str, str]
          ) -> Task:
    return sync_task(namer, kind, event.id, stream, peer)


def _around(order: _Order, event: SplitEvent, namer: Namer) -> None:
    """A split of an attached stream: its work is not listed, so the Send follows the node
    counted before the split point and the Recv precedes the first node of the new stream."""
    send = _sync(namer, "Send", event, event.old, order.peer_at((event.pre, 0)))
    recv = _sync(namer, "Recv", event, event.new, order.peer_at((event.recv, 0)))
    order.after((event.pre, 0), send)
    order.before((event.recv, 0), recv)


def _at_boundary(order: _Order, event: SplitEvent, boundary: Key, namer: Namer) -> None:
    """A split of a main stream: from the last task left on the old stream before the new
    stream starts, to the new stream's first task (on a stream left empty, alone)."""
    first = order.first_on(event.new)
    last = order.last_before(event.old, boundary)
    send = _sync(namer, "Send", event, event.old,
                 order.peer_at(last if last is not None else (event.pre, 0)))
    recv = _sync(namer, "Recv", event, event.new,
                 order.peer_at(first if first is not None else (event.recv, 0)))
    if last is not None:
        order.after(last, send)
    else:
        order.before(boundary, send)
        send.peer = send.name  # nothing before it on its stream
    order.before(boundary, recv)
    if first is None:
        recv.peer = recv.name  # the new stream holds nothing else
