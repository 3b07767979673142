"""Send/Recv generation (spec 7): tasks for every sync id, and the per-stream task order.

Phase A: a node is followed by its Sends in creation order and preceded by its Recvs in creation
order. Phase B (split events): the Sends already after a node end up reversed and followed by the
new ones (GE's order-only quirk); the new Recvs go before their node. Names are
`<root>_Send_<id>`, `<root>_Recv_<id>`, `<root>_Send_Notify_<id>`, `<root>_Recv_Notify_<id>`,
with `_Reuse_<k>` appended to a repeated name (after multi-dims reuse).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

import msgspec

from streamalloc.errors import InternalError
from streamalloc.sync.model import Task


class Namer(msgspec.Struct):
    """GE's sync node names with the `_Reuse_<k>` suffix for repeats (`count`: names given)."""

    root: str
    count: dict[str, int] = msgspec.field(default_factory=lambda: defaultdict(int))

    def copy(self) -> Namer:
        """A copy the caller owns."""
        return Namer(self.root, defaultdict(int, self.count))

    def name(self, kind: str, x: int) -> str:
        """The next name for a sync node of `kind` with id `x`."""
        base = f"{self.root}_{kind}_{x}"
        self.count[base] += 1
        k = self.count[base] - 1
        return base if k == 0 else f"{base}_Reuse_{k}"


def sync_task(namer: Namer, kind: str, x: int, stream: int, peer: tuple[str, str]) -> Task:
    """A Send/Recv (or notify) task on `stream` next to a task (`peer`: its name and graph)."""
    types = {"Send": "Send", "Recv": "Recv", "Send_Notify": "SendNotify",
             "Recv_Notify": "RecvNotify"}
    return Task(name=namer.name(kind, x), type=types[kind], graph=peer[1], stream=stream,
                units=0, sync_id=x, sync_kind="notify" if "Notify" in kind else "event",
                peer=peer[0], is_sync=True)


def check_pairs(tasks: Iterable[Task]) -> None:
    """GE: the number of Send tasks equals the number of Recv tasks (`tasks`: the made ones)."""
    types = Counter(task.type for task in tasks)
    sends, recvs = types["Send"] + types["SendNotify"], types["Recv"] + types["RecvNotify"]
    if sends != recvs:
        raise InternalError(f"{sends} Send but {recvs} Recv tasks generated")
