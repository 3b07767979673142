"""Read-only facts the sync phases share: T-order, node ids, streams, activation state."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from streamalloc.ir.graph import Graph, Node
from streamalloc.sync.model import Task

FFTS_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")


@dataclass
class SyncContext:
    """The graph, each node's logical stream and attached streams, ids in T-order, activation."""

    graph: Graph
    stream: dict[str, int]
    attached: dict[str, list[int]]
    order: list[str] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)
    labeled_streams: dict[str, set[int]] = field(default_factory=dict)
    activated_labels: dict[str, list[str]] = field(default_factory=dict)
    activated_streams: set[int] = field(default_factory=set)
    stream_activators: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    active_stream_list: dict[str, list[int]] = field(default_factory=dict)
    first_active: dict[str, str] = field(default_factory=dict)
    generated: dict[str, Task] = field(default_factory=dict)  # StreamActive nodes made by 6.3

    def __post_init__(self) -> None:
        self.order = [n.name for n in self.graph.all_nodes()]
        self.ids = {name: i for i, name in enumerate(self.order)}

    def node(self, name: str) -> Node:
        """A graph node by name."""
        return self.graph.node(name)

    def graph_of(self, name: str) -> str:
        """The owner graph of a graph node or a generated node."""
        made = self.generated.get(name)
        return made.graph if made is not None else self.node(name).graph

    def stream_of(self, name: str) -> int:
        """The current stream of a graph node or a generated node."""
        made = self.generated.get(name)
        return made.stream if made is not None else self.stream[name]

    def t_prime_order(self) -> list[Node]:
        """T-order without descending into FFTS subgraphs (spec 0)."""
        result: list[Node] = []

        def walk(graph_name: str) -> None:
            for node in self.graph.graph(graph_name).nodes:
                result.append(node)
                if not any(node.has_attr(a) for a in FFTS_ATTRS):
                    for _, sub in node.subgraphs:
                        walk(sub)

        walk(self.graph.root.name)
        return result

    def consumers(self, node: Node) -> list[str]:
        """Data consumers by output index and link order (duplicates kept)."""
        return [c.node for c in self.graph.graph(node.graph).consumers.get(node.name, ())]

    def control_successors(self, node: Node) -> tuple[str, ...]:
        """Control successors in link order."""
        return self.graph.graph(node.graph).control_successors.get(node.name, ())

    def label(self, name: str) -> str:
        """The node's `_stream_label` attribute (empty when absent)."""
        value = self.node(name).attr("_stream_label", "")
        return value if isinstance(value, str) else str(value)
