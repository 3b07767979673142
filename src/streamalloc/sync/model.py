"""The sync layer's working model: tasks in T-order and the node-keyed sync-id maps.

A `Task` is a graph node or a generated Send/Recv; ids are positions in the task order (GE
renumbers node ids to T-order after generating Phase A's sync nodes). The sync maps are iterated
in N-order: node name bytes, then owner-graph name bytes (spec 0); node names are unique across
all graphs in our IR, so the name alone decides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from streamalloc.errors import InternalError

RECV_TYPES = frozenset({"Recv", "RecvNotify", "RecvMem"})
SEND_TYPES = frozenset({"Send", "SendNotify"})


@dataclass(slots=True)
class Task:
    """One entry of the task order: a graph node, or a sync node made by this layer.

    Compared by value (two states' task orders are equal when their tasks are); the split
    relies on identity (`is`, `id()`) to find a task in the order, so a stage that changes
    tasks works on its own copies (`copy()`).
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


def in_n_order(names: Iterable[str]) -> list[str]:
    """Node names sorted in N-order (byte-wise)."""
    return sorted(names, key=lambda n: n.encode("utf-8"))


@dataclass
class SyncMaps:
    """Send and receive id lists per node for one id space (events or notifies)."""

    send: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    recv: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
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
