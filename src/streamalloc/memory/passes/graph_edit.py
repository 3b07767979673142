"""A mutable working copy of a Graph for the variable passes; `build()` makes a new Graph.

The IR is immutable (passes never write into nodes, style principle 5), so a pass copies the
graph into a `GraphDraft`, edits nodes and edges there, and rebuilds through `GraphBuilder`,
which verifies the result. Nodes keep their node-list positions; a new node is placed right
before or after an existing one so the list stays topological wherever it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph, Node, PartitionEntry
from streamalloc.ir.tensor import TensorDesc


@dataclass
class NodeDraft:
    """An editable node; `engine` None lets the builder take the op type's default engine."""

    name: str
    type: str
    graph: str
    engine: str | None = None
    inputs: list[DataInput | None] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    outputs: list[TensorDesc] = field(default_factory=list)
    input_descs: list[TensorDesc] = field(default_factory=list)
    subgraphs: list[tuple[str, str]] = field(default_factory=list)
    stream_id: int | None = None
    task_count: int | None = None
    cost_us: float | None = None

    @classmethod
    def of(cls, node: Node) -> NodeDraft:
        """A draft copy of a node."""
        return cls(node.name, node.type, node.graph, node.engine, list(node.inputs),
                   list(node.control_inputs), dict(node.attrs), list(node.outputs),
                   list(node.input_descs), list(node.subgraphs), node.stream_id,
                   node.task_count, node.cost_us)

    def attr(self, key: str, default: object = None) -> object:
        """The bare value of an attribute, `default` when absent."""
        value = self.attrs.get(key)
        return default if value is None else value.value

    def output(self, port: int) -> TensorDesc:
        """Output description `port` (an empty description when not declared)."""
        return self.outputs[port] if port < len(self.outputs) else TensorDesc()


class GraphDraft:
    """Nodes by name with their graph's node-list order; edges live on the consumer side."""

    def __init__(self, graph: Graph) -> None:
        self.source = graph
        self.nodes: dict[str, NodeDraft] = {}
        self.order: dict[str, list[str]] = {}
        for compute in graph.graphs():
            self.order[compute.name] = list(compute.list_order)
            for name in compute.list_order:
                self.nodes[name] = NodeDraft.of(compute.node(name))

    def direct(self, graph: str | None = None) -> list[NodeDraft]:
        """The nodes of one graph (default: the root) in node-list order."""
        return [self.nodes[n] for n in self.order[graph or self.source.name]]

    def consumers(self, name: str, port: int | None = None) -> list[tuple[NodeDraft, int, int]]:
        """(consumer, its input slot, producer port) of a node's outputs, in node-list order."""
        graph = self.nodes[name].graph
        out = []
        for other in self.direct(graph):
            for slot, ref in enumerate(other.inputs):
                if ref is not None and ref.src == name and port in (None, ref.port):
                    out.append((other, slot, ref.port))
        return sorted(out, key=lambda c: c[2])

    def control_successors(self, name: str) -> list[NodeDraft]:
        """Nodes with a control edge from `name`."""
        graph = self.nodes[name].graph
        return [n for n in self.direct(graph) if name in n.control_inputs]

    def producer(self, node: NodeDraft, slot: int) -> DataInput | None:
        """The data source of an input slot (None when unconnected)."""
        return node.inputs[slot] if slot < len(node.inputs) else None

    def input_desc(self, node: NodeDraft, slot: int) -> TensorDesc:
        """The node's description of input `slot`, else its producer's output description."""
        if slot < len(node.input_descs):
            return node.input_descs[slot]
        ref = self.producer(node, slot)
        return self.nodes[ref.src].output(ref.port) if ref is not None else TensorDesc()

    def add(self, node: NodeDraft, *, before: str | None = None,
            after: str | None = None) -> NodeDraft:
        """Insert a new node next to an existing one (or at the end of its graph)."""
        order = self.order[node.graph]
        if after is not None:
            order.insert(order.index(after) + 1, node.name)
        elif before is not None:
            order.insert(order.index(before), node.name)
        else:
            order.append(node.name)
        self.nodes[node.name] = node
        return node

    def remove(self, name: str) -> None:
        """Delete a node; edges from it must have been rewired already."""
        node = self.nodes.pop(name)
        self.order[node.graph].remove(name)
        for other in self.direct(node.graph):
            other.control_inputs = [c for c in other.control_inputs if c != name]

    def add_control(self, src: str, dst: str) -> None:
        """A control edge src -> dst (once)."""
        target = self.nodes[dst]
        if src not in target.control_inputs and src != dst:
            target.control_inputs.append(src)

    def unique_name(self, base: str) -> str:
        """`base`, or `base_<k>` with the smallest free k."""
        name, k = base, 0
        while name in self.nodes:
            k += 1
            name = f"{base}_{k}"
        return name

    def build(self) -> Graph:
        """The edited graph, verified by GraphBuilder (same options, engines, order mode)."""
        g = self.source
        builder = GraphBuilder(g.name, source=g.source, options=g.options, engines=g.engines,
                               dynamic_shape=g.dynamic_shape)
        builder.set_graph_attrs(g.root.attrs)
        for sub in g.subgraphs.values():
            builder.add_subgraph(sub.name, attrs=sub.attrs)
        for graph_name, names in self.order.items():
            for name in names:
                self._emit(builder, self.nodes[name], graph_name)
        if g.partition is not None:
            builder.set_partition((self._kept(e), g.source) for e in g.partition)
        return builder.build(order=g.node_order)

    def _emit(self, builder: GraphBuilder, n: NodeDraft, graph_name: str) -> None:
        builder.add_node(n.name, n.type, graph=graph_name, engine=n.engine, inputs=n.inputs,
                         control_inputs=n.control_inputs, attrs=n.attrs, outputs=n.outputs,
                         input_descs=n.input_descs, subgraphs=n.subgraphs,
                         stream_id=n.stream_id, task_count=n.task_count, cost_us=n.cost_us)

    def _kept(self, entry: PartitionEntry) -> PartitionEntry:
        # removed nodes leave their partition; inserted nodes stay outside every partition
        return PartitionEntry(entry.id, entry.engine, entry.stream_label,
                              tuple(n for n in entry.nodes if n in self.nodes))
