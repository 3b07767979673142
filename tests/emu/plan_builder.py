"""A test-only plan builder: correct multi-stream plans (formats.md section 3) for any graph.

Not an allocator. Nodes that issue tasks are dealt round-robin over `streams` streams in
T-order (a topological order); nodes without inputs and without device work (Data, Const, ...)
get no stream, as GE gives them -1. Every cross-stream edge is synchronized: a Send right after
the producer for each other stream that consumes it, a Recv right before the first consumer on
that stream (later consumers there are ordered by the stream). Waits only ever target Sends
that come earlier in the topological order, so the plan cannot deadlock.

Event ids are reused as the runtime allows ("reuse after wait"), but only where no record can
be lost or stolen: an id last waited for on stream t at position q is given to a new pair
(Send on s -> Recv on t) only when that old wait happens before the new Send (the builder keeps
vector clocks, like the emulator); the new Recv follows the old one on t by stream order.
"""

from __future__ import annotations

import copy
from collections import defaultdict, deque
from typing import Any

from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.ir.graph import Graph, Node


def issues_task(graph: Graph, node: Node) -> bool:
    """GE gives no stream to sources without device work (Data, Const, Variable, ...)."""
    if node.inputs or node.control_inputs or node.cost_us is not None:
        return True
    engine = graph.engines.get(node.engine)
    count = node.task_count if node.task_count is not None else \
        (engine.default_task_count if engine else 1)
    return count > 0


def _preds(graph: Graph, tasks: set[str]) -> dict[str, list[str]]:
    """Task predecessors of every task, through nodes that issue no task, in T-order."""
    through: dict[str, set[str]] = {}
    preds: dict[str, list[str]] = {}
    nodes = {n.name: n for n in graph.all_nodes()}
    for node in graph.all_nodes():
        found: set[str] = set()
        srcs = [s.src for s in node.data_sources() if nodes[s.src].type not in LOOP_BACK_TYPES]
        for src in [*srcs, *node.control_inputs]:
            found |= {src} if src in tasks else through.get(src, set())
        if node.name in tasks:
            preds[node.name] = sorted(found)
        else:
            through[node.name] = found
    return preds


class _Builder:
    def __init__(self, graph: Graph, streams: int, notify: bool) -> None:
        self.graph, self.notify = graph, notify
        order = [n.name for n in graph.all_nodes() if issues_task(graph, n)]
        self.stream = {name: i % streams for i, name in enumerate(order)}
        self.order = order
        self.preds = _preds(graph, set(order))
        self.succ_streams: dict[str, set[int]] = defaultdict(set)
        for v, us in self.preds.items():
            for u in us:
                if self.stream[u] != self.stream[v]:
                    self.succ_streams[u].add(self.stream[v])
        self.lists: dict[int, list[str]] = {s: [] for s in range(streams)}
        # (producer, stream) -> (event id, vector clock of the Send)
        self.pending: dict[tuple[str, int], tuple[int, list[int]]] = {}
        self.free: dict[int, deque[tuple[int, int]]] = defaultdict(deque)  # t -> (q, id)
        self.clock = {s: [0] * streams for s in range(streams)}
        self.next_id = 0
        self.sync_nodes: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.names: dict[str, int] = defaultdict(int)

    def _name(self, send: bool, ident: int) -> str:
        kind = ("Send" if send else "Recv") + ("_Notify" if self.notify else "")
        base = f"{self.graph.name}_{kind}_{ident}"
        self.names[base] += 1
        return base if self.names[base] == 1 else f"{base}_Reuse_{self.names[base] - 1}"

    def _sync(self, stream: int, send: bool, ident: int) -> None:
        name = self._name(send, ident)
        kind = ("Send" if send else "Recv") + ("Notify" if self.notify else "")
        self.lists[stream].append(name)
        self.sync_nodes.append({"name": name, "type": kind, "stream": stream, "event": ident})

    def place(self, v: str) -> None:
        s = self.stream[v]
        for u in self.preds[v]:
            entry = self.pending.pop((u, s), None)
            if entry is None:
                continue
            ident, snapshot = entry  # the first consumer of u on this stream waits
            self.free[s].append((len(self.lists[s]), ident))
            self._sync(s, False, ident)
            self.clock[s] = list(map(max, self.clock[s], snapshot))
            self.events.append({"id": ident, "kind": "notify" if self.notify else "event",
                                "send": u, "recv": v, "send_stream": self.stream[u],
                                "recv_stream": s})
        self.lists[s].append(v)
        for t in sorted(self.succ_streams[v]):
            free = self.free[t]
            reuse = free and free[0][0] < self.clock[s][t]  # that old wait is done by now
            ident = free.popleft()[1] if reuse else self._new_id()
            self._sync(s, True, ident)
            snapshot = self.clock[s].copy()
            snapshot[s] = len(self.lists[s])
            self.pending[(v, t)] = (ident, snapshot)

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def round_robin_plan(graph: Graph, streams: int = 2, *, notify: bool = False,
                     activate: bool = False) -> dict[str, Any]:
    """A correct plan dict for `graph` on `streams` streams (see the module docstring).

    With `activate`, streams 1.. are activated by the first task of stream 0.
    """
    b = _Builder(graph, streams, notify)
    for name in b.order:
        b.place(name)
    used = {s: names for s, names in b.lists.items() if names}
    activations: dict[str, list[int]] = {}
    if activate and b.order and len(used) > 1:
        activations[b.order[0]] = sorted(s for s in used if s != 0)
    nodes = {n.name: {"stream": b.stream.get(n.name, -1),
                      "physical_stream": b.stream.get(n.name, -1), "attached_streams": [],
                      "rule": "round-robin"} for n in graph.all_nodes()}
    return {"format": "streamalloc.plan/v1", "graph": graph.name, "mode": "round-robin",
            "nodes": nodes, "streams": {str(s): names for s, names in used.items()},
            "logical_stream_count": streams, "physical_stream_count": streams,
            "attached_stream_count": 0, "events": b.events,
            "event_count": 0 if notify else b.next_id, "notify_count": b.next_id if notify else 0,
            "stream_activations": activations, "sync_nodes": b.sync_nodes,
            "summary": {"user_stream_labels": [], "hccl_followed_stream_count": 0}}


def without_sync(plan: dict[str, Any]) -> dict[str, Any]:
    """The same plan with every event and notify removed (Send/Recv tasks included)."""
    stripped = copy.deepcopy(plan)
    sync = {n["name"] for n in stripped["sync_nodes"]}
    stripped["streams"] = {s: [n for n in names if n not in sync]
                           for s, names in stripped["streams"].items()}
    stripped.update(sync_nodes=[], events=[], event_count=0, notify_count=0)
    return stripped
