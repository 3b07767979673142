"""The sync layer's working model: the task order and the node-keyed sync-id maps.

The task order (`TaskTable`, from the sync-tasks stage on) is kept as columns: row r is the
r-th task, a graph node or a task the sync layer made (a Send/Recv, or a StreamActive of 6.3),
whose `Task` record the table keeps by row. Ids are positions in the task order (GE renumbers
node ids to T-order after generating Phase A's sync nodes). The sync maps are iterated in
N-order: node name bytes, then owner-graph name bytes (spec 0); node names are unique across
all graphs in our IR, so the name alone decides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress
from types import MappingProxyType

import msgspec

from streamalloc.errors import InternalError
from streamalloc.ir.graph import Node

RECV_TYPES = frozenset({"Recv", "RecvNotify", "RecvMem"})
SEND_TYPES = frozenset({"Send", "SendNotify"})


class Task(msgspec.Struct):
    """A task the sync layer made (a Send/Recv, or a StreamActive of 6.3), or a view of any
    row of a task order (`task_at`).

    Compared by value. Made tasks are created by a stage and owned by the table it builds;
    a stage that changes them works on its own copies (`TaskTable.editable`).
    """

    name: str
    type: str
    graph: str
    stream: int
    attached: tuple[int, ...] = ()  # a tuple: copies share it (most tasks have none)
    units: int = 0
    sync_id: int = -1  # event or notify id of a Send/Recv
    sync_kind: str = ""  # "event" | "notify" for sync nodes
    peer: str = ""  # the graph node a Send follows / a Recv precedes
    is_sync: bool = False

    def copy(self) -> Task:
        """A copy the caller owns."""
        return Task(self.name, self.type, self.graph, self.stream, self.attached,
                    self.units, self.sync_id, self.sync_kind, self.peer, self.is_sync)


class TaskTable(msgspec.Struct, frozen=True):
    """The task order as columns: row r's name, stream and attached streams; `made` holds the
    record of each row the sync layer made (its `stream` and `attached` equal the columns').
    A graph node's row has the node's type and graph. Columns, not a task object per row:
    a stage that moves tasks copies three lists at C speed instead of a million objects."""

    names: tuple[str, ...]
    streams: tuple[int, ...]
    attached: tuple[tuple[int, ...], ...]
    made: Mapping[int, Task]

    def __len__(self) -> int:
        return len(self.names)

    def made_rows(self) -> Iterator[tuple[int, Task]]:
        """(row, record) of each made row, in task order."""
        return iter(sorted(self.made.items()))

    def editable(self) -> TaskColumns:
        """Own copies of the columns (and of the made records) to change."""
        return TaskColumns(list(self.names), list(self.streams), list(self.attached),
                           {r: t.copy() for r, t in self.made.items()})


def node_mask(rows: Rows) -> bytearray:
    """1 for each graph node's row, 0 for a made row (a selector for `itertools.compress`)."""
    keep = bytearray(b"\x01") * len(rows.names)
    for row in rows.made:
        keep[row] = 0
    return keep


def node_streams(rows: Rows) -> Iterator[tuple[str, int]]:
    """(name, stream) of each graph node's row, in task order."""
    keep = node_mask(rows)
    return zip(compress(rows.names, keep), compress(rows.streams, keep), strict=True)


def task_at(rows: Rows, row: int, nodes: Mapping[str, Node]) -> Task:
    """Row `row` of a task order as a task: a made row's record, else a view of the graph
    node's row (`nodes`: the graph's nodes by name)."""
    made = rows.made.get(row)
    if made is not None:
        return made
    node = nodes[rows.names[row]]
    return Task(node.name, node.type, node.graph, rows.streams[row], rows.attached[row])


class TaskColumns(msgspec.Struct):
    """A stage's own, changeable columns of a task order (`TaskTable.editable`)."""

    names: list[str]
    streams: list[int]
    attached: list[tuple[int, ...]]
    made: dict[int, Task]

    def set_stream(self, row: int, stream: int) -> None:
        """Move row `row` to `stream` (its record too, for a made row)."""
        self.streams[row] = stream
        made = self.made.get(row)
        if made is not None:
            made.stream = stream

    def set_attached(self, row: int, attached: tuple[int, ...]) -> None:
        """Give row `row` these attached streams."""
        self.attached[row] = attached
        made = self.made.get(row)
        if made is not None:
            made.attached = attached

    def inserted(self, inserts: Sequence[tuple[int, Task]]) -> TaskColumns:
        """New columns with each task of `inserts` (sorted by place, stable) put right before
        the row at its place (`len` for the end)."""
        if not inserts:
            return self
        names: list[str] = []
        streams: list[int] = []
        attached: list[tuple[int, ...]] = []
        made: dict[int, Task] = {}
        rows = sorted(self.made)
        shift, k, previous = 0, 0, 0
        for place, task in inserts:
            names += self.names[previous:place]
            streams += self.streams[previous:place]
            attached += self.attached[previous:place]
            while k < len(rows) and rows[k] < place:
                made[rows[k] + shift] = self.made[rows[k]]
                k += 1
            made[len(names)] = task
            names.append(task.name)
            streams.append(task.stream)
            attached.append(task.attached)
            shift += 1
            previous = place
        names += self.names[previous:]
        streams += self.streams[previous:]
        attached += self.attached[previous:]
        made.update((row + shift, self.made[row]) for row in rows[k:])
        return TaskColumns(names, streams, attached, made)

    def table(self) -> TaskTable:
        """The columns as an immutable table."""
        return TaskTable(tuple(self.names), tuple(self.streams), tuple(self.attached),
                         MappingProxyType(dict(self.made)))


Rows = TaskTable | TaskColumns  # a task order, immutable or a stage's own


def in_n_order(names: Iterable[str]) -> list[str]:
    """Node names sorted in N-order (byte-wise in UTF-8, which orders strings as their code
    points do: Python's own order, without encoding every name)."""
    return sorted(names)


class SyncMaps(msgspec.Struct):
    """Send and receive id lists per node for one id space (events or notifies)."""

    send: dict[str, list[int]] = msgspec.field(default_factory=lambda: defaultdict(list))
    recv: dict[str, list[int]] = msgspec.field(default_factory=lambda: defaultdict(list))
    counter: int = 0

    def pair(self, sender: str, receiver: str) -> int:
        """A new id from the counter, recorded on both ends."""
        x = self.counter
        self.counter += 1
        self.send[sender].append(x)
        self.recv[receiver].append(x)
        return x

    def senders(self) -> dict[int, str]:
        """id -> the first node (N-order) whose send list holds it."""
        return _owners(self.send)

    def receivers(self) -> dict[int, str]:
        """id -> the first node (N-order) whose recv list holds it."""
        return _owners(self.recv)

    def remove(self, x: int, sender: str, receiver: str) -> None:
        """Delete the first occurrence of x on both ends."""
        _remove_first(self.send[sender], x, sender)
        _remove_first(self.recv[receiver], x, receiver)

    def ids(self) -> set[int]:
        """Every id in use."""
        return {x for ids in self.send.values() for x in ids}

    def copy(self) -> SyncMaps:
        """A copy the caller owns."""
        return SyncMaps(defaultdict(list, {n: list(x) for n, x in self.send.items()}),
                        defaultdict(list, {n: list(x) for n, x in self.recv.items()}),
                        self.counter)


def _owners(maps: dict[str, list[int]]) -> dict[int, str]:
    found: dict[int, str] = {}
    for node in in_n_order(maps):
        for x in maps[node]:
            found.setdefault(x, node)
    return found


def _remove_first(ids: list[int], x: int, node: str) -> None:
    try:
        ids.remove(x)
    except ValueError:
        raise InternalError(f"sync id {x} is not on node {node!r}") from None
