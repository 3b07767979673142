"""Event insertion (Phase A step A6, spec 2.1-2.3): one pair per cross-stream edge.

Edges are enumerated in T'-order (data consumers by output index in link order, then control
successors), then the subgraph boundary pairs. Ids come from the counter in that order; section 3
removes the redundant ones.
"""

from __future__ import annotations

from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import ENTER_TYPES, INVALID
from streamalloc.ir.graph import Node
from streamalloc.sync.context import FFTS_ATTRS, SyncContext
from streamalloc.sync.model import SyncMaps

THREAD_SCOPE = "_thread_scope_id"
SUBGRAPH_END = "_subgraph_end_node"


def insert_pairs(ctx: SyncContext, maps: SyncMaps) -> None:
    """All cross-stream pairs of the model into `maps`."""
    for node in ctx.t_prime_order():
        for consumer in ctx.consumers(node):
            _pair(ctx, maps, node, ctx.node(consumer))
        for successor in ctx.control_successors(node):
            _pair(ctx, maps, node, ctx.node(successor))
    _boundary_pairs(ctx, maps)


def _pair(ctx: SyncContext, maps: SyncMaps, u: Node, v: Node) -> None:
    su, sv = ctx.stream[u.name], ctx.stream[v.name]
    if su in (INVALID, sv):
        return
    if u.type in ENTER_TYPES and v.type != "StreamActive":
        return
    if sv == INVALID:
        if v.has_attr(THREAD_SCOPE):
            return
        raise AllocationInfeasible(f"node {v.name!r} consumes {u.name!r} (stream {su}) but has no "
                                   "stream; GE cannot synchronize a consumer without a stream")
    if _activated_after(ctx, u, v):
        return
    maps.pair(u.name, v.name)


def _activated_after(ctx: SyncContext, u: Node, v: Node) -> bool:
    """Rule 5: v's label stream is started by an activator issued later on u's own stream."""
    label = ctx.label(v.name)
    if not label or label not in ctx.activated_labels:
        return False
    return any(ctx.node(a).graph == u.graph and ctx.stream[a] == ctx.stream[u.name]
               and ctx.ids[u.name] <= ctx.ids[a] for a in ctx.activated_labels[label])


def _boundary_pairs(ctx: SyncContext, maps: SyncMaps) -> None:
    graph = ctx.graph
    for sub in graph.r_order():
        compute = graph.subgraphs[sub]
        parent = graph.node(compute.parent) if compute.parent else None
        if parent is None or any(parent.has_attr(a) for a in (*FFTS_ATTRS, THREAD_SCOPE)):
            continue
        for node in compute.nodes:
            if ctx.stream[node.name] != INVALID and not any(node.data_sources()) \
                    and not node.control_inputs:
                for producer in [*(r.src for r in parent.data_sources()),
                                 *parent.control_inputs]:
                    _pair(ctx, maps, ctx.node(producer), node)
            if node.attr(SUBGRAPH_END) is True:
                for consumer in [*ctx.consumers(parent), *ctx.control_successors(parent)]:
                    _pair(ctx, maps, node, ctx.node(consumer))
                break  # GE stops scanning the subgraph at its first end node
