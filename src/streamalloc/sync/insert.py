"""Event insertion (Phase A step A6, spec 2.1-2.3): one pair per cross-stream edge.

Edges are enumerated in T'-order (data consumers by output index in link order, then control
successors), then the subgraph boundary pairs. Ids come from the counter in that order; section 3
removes the redundant ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import ENTER_TYPES, INVALID
from streamalloc.ir.graph import Node
from streamalloc.mappings import values_of
from streamalloc.sync.context import FFTS_ATTRS, SyncModel
from streamalloc.sync.model import SyncMaps

THREAD_SCOPE = "_thread_scope_id"
SUBGRAPH_END = "_subgraph_end_node"


class _Insertion(msgspec.Struct, frozen=True):
    """What insertion reads, and the maps it fills."""

    model: SyncModel
    streams: Mapping[str, int]
    activated_labels: Mapping[str, tuple[str, ...]]
    maps: SyncMaps
    every_activator: bool


def insert_cross_stream_pairs(model: SyncModel, streams: Mapping[str, int],
                              activated_labels: Mapping[str, tuple[str, ...]],
                              maps: SyncMaps, *, every_activator: bool = False) -> None:
    """All cross-stream pairs of the model into `maps` (`activated_labels`: label -> the nodes
    activating it, spec 6.1). `every_activator`: rule 5 leaves a pair out only when every
    activator of the consumer's label follows the producer on its stream (minimal sync), not
    any of them as GE does, which races when another activator started the stream before."""
    ins = _Insertion(model, streams, activated_labels, maps, every_activator)
    by_name = model.graph.by_name
    computes = {compute.name: compute for compute in model.graph.graphs()}
    for node in _may_feed_another_stream(model, streams):
        su = streams[node.name]
        if su == INVALID:  # `_pair` makes nothing from a producer without a stream
            continue
        compute = computes[node.graph]
        for consumer in compute.data_consumers(node.name):
            if streams[consumer] != su:  # `_pair`'s first test, before the node lookup
                _pair(ins, node, by_name[consumer])
        for successor in compute.control_successors.get(node.name, ()):
            if streams[successor] != su:
                _pair(ins, node, by_name[successor])
    _boundary_pairs(ins)


def _may_feed_another_stream(model: SyncModel, streams: Mapping[str, int]) -> Sequence[Node]:
    """T'-order, or for a model without subgraphs (T'-order is the root's node list) only its
    nodes on a stream with a data or control successor on another one, found over the edge
    arrays: the pairs come from these few."""
    root = model.graph.root
    if model.graph.subgraphs:
        return model.t_prime_order
    stream = np.array(values_of(streams, model.order), np.int64)
    src, dst = root.producers.edges()
    across = (stream[src] != stream[dst]) & (stream[src] != INVALID)
    return [root.nodes[i] for i in sorted_distinct(src[across]).tolist()]


def _pair(ins: _Insertion, u: Node, v: Node) -> None:
    su, sv = ins.streams[u.name], ins.streams[v.name]
    if su in (INVALID, sv):
        return
    if u.type in ENTER_TYPES and v.type != "StreamActive":
        return
    if sv == INVALID:
        if v.has_attr(THREAD_SCOPE):
            return
        raise AllocationInfeasible(f"node {v.name!r} consumes {u.name!r} (stream {su}) but has no "
                                   "stream; GE cannot synchronize a consumer without a stream")
    if _activated_after(ins, u, v):
        return
    ins.maps.pair(u.name, v.name)


def _activated_after(ins: _Insertion, u: Node, v: Node) -> bool:
    """Rule 5: v's label stream is started by an activator issued later on u's own stream."""
    label = ins.model.label(v.name)
    if not label or label not in ins.activated_labels:
        return False
    ids = ins.model.ids
    follows = (ins.model.node(a).graph == u.graph and ins.streams[a] == ins.streams[u.name]
               and ids[u.name] <= ids[a] for a in ins.activated_labels[label])
    return all(follows) if ins.every_activator else any(follows)


def _boundary_pairs(ins: _Insertion) -> None:
    graph = ins.model.graph
    for sub in graph.r_order():
        compute = graph.subgraphs[sub]
        parent = graph.node(compute.parent) if compute.parent else None
        if parent is None or any(parent.has_attr(a) for a in (*FFTS_ATTRS, THREAD_SCOPE)):
            continue
        for node in compute.nodes:
            if ins.streams[node.name] != INVALID and not any(node.data_sources()) \
                    and not node.control_inputs:
                for producer in [*(r.src for r in parent.data_sources()),
                                 *parent.control_inputs]:
                    _pair(ins, graph.node(producer), node)
            if node.attr(SUBGRAPH_END) is True:
                for consumer in [*ins.model.consumers(parent),
                                 *ins.model.control_successors(parent)]:
                    _pair(ins, node, graph.node(consumer))
                break  # GE stops scanning the subgraph at its first end node
