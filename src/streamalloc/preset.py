"""`--mode preset`: take each node's `stream_id` from the input as the logical allocation.

A node without `stream_id` is on stream 0 (GE's op descriptors default to 0, and a dump omits a
stream id of 0), except data-like sources (Data, Const, Variable, ... without inputs), which GE
leaves without a stream (-1). Attached streams come from the nodes' attributes
(`_attached_stream_info_list`, `_attached_stream_info`) as GE's AssignAttachedStreamPass gives
them after the main streams (logical-streams spec 5): per graph, root then R-order (a
dynamic-shape model: the root and its unknown-shape subgraphs).
"""

from __future__ import annotations

from types import MappingProxyType

from streamalloc.allocation import Allocation, NodeStream
from streamalloc.errors import InputError
from streamalloc.facts import INVALID
from streamalloc.ir.attached import attached_streams
from streamalloc.ir.clusters import is_data_like
from streamalloc.ir.graph import Graph, Node


def _preset_stream(node: Node) -> int:
    if node.stream_id is not None:
        return node.stream_id
    return INVALID if is_data_like(node) else 0


def preset_allocation(graph: Graph) -> Allocation:
    """The allocation the input already carries."""
    streams = {n.name: _preset_stream(n) for n in graph.all_nodes()}
    bad = [(n, s) for n, s in streams.items() if s < INVALID]
    if bad:
        raise InputError(f"{graph.source}: node {bad[0][0]!r} field 'stream_id' is {bad[0][1]}; "
                         "expected -1 (no stream) or a stream id >= 0")
    used = sorted({s for s in streams.values() if s >= 0})
    if used and used != list(range(len(used))):
        raise InputError(f"{graph.source}: preset stream ids {used} are not contiguous from 0; "
                         "GE's logical stream ids always are")
    main = max(len(used), 1)
    attached, total = attached_streams(graph, streams, _attaching_graphs(graph), main)
    nodes = {n: NodeStream(s, "preset", attached.get(n, ())) for n, s in streams.items()}
    return Allocation(graph=graph.name, mode="preset", rules="preset",
                      nodes=MappingProxyType(nodes), main_stream_num=main,
                      total_stream_num=total, user_labels=MappingProxyType({}),
                      provenance=MappingProxyType({n: () for n in nodes}),
                      options=graph.options)


def _attaching_graphs(graph: Graph) -> list[str]:
    """The graphs AssignAttachedStreamPass runs on, in its order."""
    subgraphs = graph.r_order()
    if graph.dynamic_shape:
        subgraphs = [s for s in subgraphs if graph.unknown_shape(graph.subgraphs[s])]
    return [graph.root.name, *subgraphs]
