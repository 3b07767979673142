"""Redundant-sync removal (Phase A step A7, spec 3): by send, by receive, by activation, then
the purge of StreamSwitch sends. Only the cross-stream pairs of insertion are optimised."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import msgspec

from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.sync.activation import Activation, LabelActivation
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps, in_n_order


class _Order(msgspec.Struct, frozen=True):
    """What the activation optimisation reads: the facts, the streams, each stream's
    activators (spec 6.1)."""

    model: SyncModel
    streams: Mapping[str, int]
    activators: Mapping[int, tuple[str, ...]]


def optimize(model: SyncModel, streams: Mapping[str, int], labels: LabelActivation,
             _activation: Activation, maps: SyncMaps) -> None:
    """Run the four optimisations in GE's order (the activation lists are not read)."""
    _by_send(maps, _by_stream(model, streams, maps.recv))
    _by_recv(maps, _by_stream(model, streams, maps.send))
    _by_activation(_Order(model, streams, labels.stream_activators), maps)
    _purge_switch_sends(model, maps)


def _by_stream(model: SyncModel, streams: Mapping[str, int],
               side: Mapping[str, list[int]]) -> dict[int, list[str]]:
    """The nodes with ids on this side, per stream in T-order: the only ones 3.1 and 3.2 read
    (a few among many nodes)."""
    by_stream: dict[int, list[str]] = defaultdict(list)
    for name in sorted((n for n, ids in side.items() if ids), key=model.ids.__getitem__):
        by_stream[streams[name]].append(name)
    return by_stream


def _by_send(maps: SyncMaps, by_stream: dict[int, list[str]]) -> None:
    """Per receiving stream, only the first receive from a given sender survives (3.1)."""
    senders = maps.senders()
    for stream in sorted(by_stream):
        seen: set[str] = set()
        for receiver in by_stream[stream]:
            for x in list(maps.recv.get(receiver, ())):
                sender = senders[x]
                if sender in seen:
                    maps.remove(x, sender, receiver)
                else:
                    seen.add(sender)


def _by_recv(maps: SyncMaps, by_stream: dict[int, list[str]]) -> None:
    """Per sending stream, only the last send to a given receiver survives (3.2)."""
    receivers = maps.receivers()
    for stream in sorted(by_stream):
        last: dict[str, tuple[int, str]] = {}
        for sender in by_stream[stream]:
            for x in list(maps.send.get(sender, ())):
                receiver = receivers[x]
                if receiver in last:
                    old, old_sender = last[receiver]
                    maps.remove(old, old_sender, receiver)
                last[receiver] = (x, sender)


def _by_activation(ctx: _Order, maps: SyncMaps) -> None:
    """Drop a pair when the receiver's stream is started by an activator running after u (3.3)."""
    receivers = maps.receivers()
    for sender in in_n_order(maps.send):
        for x in list(maps.send[sender]):
            receiver = receivers[x]
            if _activated_before(ctx, sender, receiver):
                maps.remove(x, sender, receiver)


def _activated_before(ctx: _Order, u: str, r: str) -> bool:
    model, ids = ctx.model, ctx.model.ids
    if not model.node(r).has_attr("_stream_label"):
        return False
    su, graph = ctx.streams[u], model.node(u).graph
    # [P-order] GE walks the activator sets in pointer order; we walk them by node id.
    frontier = sorted(ctx.activators.get(ctx.streams[r], ()), key=ids.__getitem__)
    visited = {r}
    while frontier:
        nxt: set[str] = set()
        for a in frontier:
            node = model.node(a)
            if node.graph != graph:
                continue
            if a in visited or node.attr("is_loop_active") is True:
                return False
            controls = node.control_inputs
            if controls and all(model.node(c).type in LOOP_BACK_TYPES for c in controls):
                continue
            visited.add(a)
            for p in [*(s.src for s in node.data_sources()), *controls]:
                if ctx.streams[p] == su and ids[p] >= ids[u]:
                    return True
                if u in _predecessors(model, p):
                    return True
            nxt |= set(ctx.activators.get(ctx.streams[a], ()))
        frontier = sorted(nxt, key=ids.__getitem__)
    return False


def _predecessors(model: SyncModel, name: str) -> list[str]:
    node = model.node(name)
    return [*(s.src for s in node.data_sources()), *node.control_inputs]


def _purge_switch_sends(model: SyncModel, maps: SyncMaps) -> None:
    """A StreamSwitch never sends: its activation orders the branches (3.4)."""
    receivers = maps.receivers()
    for sender in in_n_order(maps.send):
        if model.node(sender).type == "StreamSwitch":
            for x in list(maps.send[sender]):
                maps.remove(x, sender, receivers[x])

