"""The read-only facts every sync stage reads: the graph, T-order, node ids, attached streams."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from streamalloc.allocation import Allocation
from streamalloc.ir.graph import Graph, Node

FFTS_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")


@dataclass(frozen=True)
class SyncModel:
    """The graph, each node's attached streams, node names in T-order and their ids (positions
    in T-order). Streams and activation change from stage to stage; they live in the state."""

    graph: Graph
    attached: Mapping[str, tuple[int, ...]]
    order: tuple[str, ...]
    ids: Mapping[str, int]

    @classmethod
    def of(cls, graph: Graph, attached: Mapping[str, tuple[int, ...]]) -> SyncModel:
        """The facts of `graph` with the attached streams of its allocation."""
        order = tuple(n.name for n in graph.all_nodes())
        return cls(graph, MappingProxyType(dict(attached)), order,
                   MappingProxyType({name: i for i, name in enumerate(order)}))

    @classmethod
    def of_allocation(cls, graph: Graph, allocation: Allocation) -> SyncModel:
        """The facts of `graph` and the allocation made for it."""
        return cls.of(graph, {n: a.attached for n, a in allocation.nodes.items()})

    def node(self, name: str) -> Node:
        """A graph node by name."""
        return self.graph.node(name)

    def t_prime_order(self) -> list[Node]:
        """T-order without descending into FFTS subgraphs (spec 0)."""
        result: list[Node] = []

        def walk(graph_name: str) -> None:
            for node in self.graph.graph(graph_name).nodes:
                result.append(node)
                if node.subgraphs and not any(node.has_attr(a) for a in FFTS_ATTRS):
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

