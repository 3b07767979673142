"""Send/Recv nodes as a new graph (spec 7): the input graph is never touched.

Every graph node is copied; each generated Send becomes a node right after its sender (control
edge sender -> Send), each Recv a node right before its receiver (control edge Recv ->
receiver), with GE's attributes `event_id` (or `notify_id`) and `stream_id`. Graph nodes carry
their physical stream as `stream_id`.
"""

from __future__ import annotations

from collections import defaultdict

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import Graph, Node
from streamalloc.sync.result import SyncNode, SyncPlan


def synced_graph(graph: Graph, plan: SyncPlan) -> Graph:
    """The graph with its Send/Recv nodes, in the plan's order."""
    before: dict[str, list[SyncNode]] = defaultdict(list)
    after: dict[str, list[SyncNode]] = defaultdict(list)
    for sync in plan.sync_nodes:
        (after if sync.type.startswith("Send") else before)[sync.peer].append(sync)
    builder = GraphBuilder(graph.name, source=graph.source, options=graph.options,
                           engines=graph.engines, dynamic_shape=graph.dynamic_shape)
    builder.set_graph_attrs(graph.root.attrs)
    for name, sub in graph.subgraphs.items():
        builder.add_subgraph(name, attrs=sub.attrs)
    for compute in graph.graphs():
        for name in compute.list_order:
            node = compute.node(name)
            for sync in before[name]:
                _add_sync(builder, sync, node, recv=True)
            _copy(builder, node, plan.physical[name], [s.name for s in before[name]])
            for sync in after[name]:
                _add_sync(builder, sync, node, recv=False)
    return builder.build(order=graph.node_order)


def _copy(builder: GraphBuilder, node: Node, stream: int, waits: list[str]) -> None:
    builder.add_node(node.name, node.type, graph=node.graph, engine=node.engine,
                     inputs=node.inputs, control_inputs=[*node.control_inputs, *waits],
                     attrs=node.attrs, outputs=node.outputs, input_descs=node.input_descs,
                     subgraphs=node.subgraphs, stream_id=stream, task_count=node.task_count,
                     cost_us=node.cost_us)


def _add_sync(builder: GraphBuilder, sync: SyncNode, peer: Node, recv: bool) -> None:
    key = "notify_id" if "Notify" in sync.type else "event_id"
    attrs = {key: AttrValue("int", sync.event), "stream_id": AttrValue("int", sync.stream)}
    builder.add_node(sync.name, sync.type, graph=peer.graph, attrs=attrs,
                     control_inputs=[] if recv else [peer.name], stream_id=sync.stream)
