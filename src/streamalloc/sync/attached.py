"""Events and sync ids of attached streams (spec 2.6, 2.7, 4.5).

* A11 (2.6): work on a node's attached stream depends on some of its inputs
  (`ir.attached.dependency_inputs`): one event from each such producer (a variable's in-place
  writer standing in for the variable, a subgraph's first-active StreamActive for a producer
  before it) to the node, between the producer's and the node's attached streams where they
  have one, else their main streams. Never optimised or renumbered.
* A13 (2.7): the last user (T-order) of each attached stream signals its graph's NetOutput.
* A16 (4.5): the event and notify ids kernels reserve for themselves (`ir.attached`
  `resource_ids`): counted, no Send/Recv.

Events on a node's main stream go into the node's main lists (`SyncMaps`); those on an attached
stream are `AttachedSync` records, placed by `sync-tasks` after the main ones (spec 7).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from streamalloc.errors import AllocationInfeasible, InputError
from streamalloc.facts import INVALID, NO_ATTACHED_SOURCE_TYPES, VARIABLE_LIKE_TYPES
from streamalloc.ir.attached import dependency_inputs, has_attached_info, resource_ids
from streamalloc.ir.graph import Node
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps


class AttachedSync(msgspec.Struct, frozen=True):
    """A Send (`send`) or Recv of event `id` on `node`'s attached stream `stream`; `explicit`
    for the NetOutput events of 2.7 (GE's explicit-stream lists, generated after 2.6's)."""

    id: int
    node: str
    stream: int
    send: bool
    explicit: bool = False


class Resources(msgspec.Struct, frozen=True):
    """4.5: the ids each node reserves, per id space, and how many in all."""

    events: Mapping[str, tuple[int, ...]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    notifies: Mapping[str, tuple[int, ...]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    event_count: int = 0
    notify_count: int = 0


def dependency_events(model: SyncModel, events: SyncMaps) -> tuple[AttachedSync, ...]:
    """A11: the attached-stream dependency events, numbered from `events.counter`."""
    made: list[AttachedSync] = []
    for node in model.t_prime_order:
        if node.attrs and has_attached_info(node):  # most nodes have no attributes
            # [hash order] GE walks the producers in a hash set; we walk them by node id
            for source in sorted(_sources(model, node), key=model.ids.__getitem__):
                made += _pair(model, events, model.node(source), node)
    return tuple(made)


def _sources(model: SyncModel, node: Node) -> set[str]:
    found: set[str] = set()
    for index in dependency_inputs(model.graph, node):
        if not 0 <= index < len(node.inputs):
            raise InputError(f"{model.graph.source}: node {node.name!r} declares an attached "
                             f"dependency on input {index}, but it has {len(node.inputs)} inputs")
        edge = node.inputs[index]
        if edge is not None:
            found.add(_stand_in(model, node, edge.src, edge.port))
    return found


def _stand_in(model: SyncModel, node: Node, src: str, port: int) -> str:
    """The producer the attached work waits for (spec 2.6)."""
    ids, producer = model.ids, model.node(src)
    if producer.type in VARIABLE_LIKE_TYPES:
        # the latest consumer of the same output, up to the node, that writes it back in place
        # (marked `reference`; our IR has no tensor names to compare)
        writers = [c.node for c in model.graph.graph(producer.graph).consumers.get(src, ())
                   if c.port == port and ids[c.node] <= ids[node.name]
                   and model.node(c.node).attr("reference") is True]
        src = max(writers, key=ids.__getitem__, default=src)
    first = next((n.name for n in model.graph.graph(model.node(src).graph).nodes
                  if n.type == "StreamActive" and n.attr("subgraph_first_active") is True), None)
    return first if first is not None and ids[src] < ids[first] else src


def _pair(model: SyncModel, events: SyncMaps, src: Node, dst: Node) -> list[AttachedSync]:
    """ATTACHED_PAIR (spec 2.6)."""
    if src.type in NO_ATTACHED_SOURCE_TYPES:
        return []
    ends = [model.attached.get(n.name, ()) for n in (src, dst)]
    if any(len(a) > 1 for a in ends):
        raise AllocationInfeasible(f"attached dependency {src.name!r} -> {dst.name!r}: a node "
                                   "with more than one attached stream; GE fails here")
    a_src, a_dst = (a[0] if a else INVALID for a in ends)
    if a_src == a_dst:
        return []
    x = events.counter
    events.counter += 1
    made = []
    if a_src == INVALID:
        events.send[src.name].append(x)
    else:
        made.append(AttachedSync(x, src.name, a_src, send=True))
    if a_dst == INVALID:
        events.recv[dst.name].append(x)
    else:
        made.append(AttachedSync(x, dst.name, a_dst, send=False))
    return made


def netoutput_events(model: SyncModel, events: SyncMaps) -> tuple[AttachedSync, ...]:
    """A13: one event from the last user of each attached stream to its graph's NetOutput."""
    last: dict[int, str] = {}
    for name in model.with_attached:
        for a in model.attached[name]:
            if a != INVALID:
                last[a] = name
    sends = []
    for a in sorted(last):
        graph = model.graph.graph(model.node(last[a]).graph)
        out = next((n.name for n in graph.nodes if n.type == "NetOutput"), None)
        if out is not None:  # GE only warns
            x = events.counter
            events.counter += 1
            events.recv[out].append(x)
            sends.append(AttachedSync(x, last[a], a, send=True, explicit=True))
    return tuple(sends)


def reserve_resources(model: SyncModel, event_start: int, notify_start: int) -> Resources:
    """A16: attached notify resources, then attached event resources."""
    notifies, notify_end = resource_ids(model.graph, "notify", notify_start)
    events, event_end = resource_ids(model.graph, "event", event_start)
    return Resources(MappingProxyType(events), MappingProxyType(notifies),
                     event_end - event_start, notify_end - notify_start)
