"""The read-only facts every sync stage reads: the graph, T-order, node ids, attached streams."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from streamalloc.allocation import Allocation
from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.labels import raw_labels
from streamalloc.recent import Recent

FFTS_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")


@dataclass(frozen=True)
class _Labels:
    """The label attributes of a graph's nodes: `_stream_label` and `_active_label_list`."""

    stream: Mapping[str, str]
    active: Mapping[str, tuple[str, ...]]


_LABELS: Recent[_Labels] = Recent(4)  # per graph: a search synchronizes one graph hundreds
# of times, and every synchronize reads the labels of every node with attributes


def _labels_of(by_name: Mapping[str, Node]) -> _Labels:
    stream, active = {}, {}
    for node in by_name.values():
        if not node.attrs:
            continue
        label = raw_labels(node).stream_label
        if label:
            stream[node.name] = label
        listed = node.attr("_active_label_list", ())
        if isinstance(listed, tuple) and listed:
            active[node.name] = tuple(str(v) for v in listed)
    return _Labels(MappingProxyType(stream), MappingProxyType(active))


@dataclass(frozen=True)
class SyncModel:
    """The graph, the attached streams of the nodes having some, the nodes and their names in
    T-order and their ids (positions in T-order). Streams and activation change from stage to
    stage; they live in the state."""

    graph: Graph
    attached: Mapping[str, tuple[int, ...]]
    nodes: tuple[Node, ...]
    order: tuple[str, ...]
    ids: Mapping[str, int]

    @classmethod
    def of(cls, graph: Graph, attached: Mapping[str, tuple[int, ...]]) -> SyncModel:
        """The facts of `graph` with the attached streams of its allocation."""
        nodes = graph.t_ordered_nodes()
        order = graph.t_ordered_names()
        # without subgraphs T-order is the root's G-order, which the root indexes already
        ids = graph.root.index if not graph.subgraphs else \
            MappingProxyType({name: i for i, name in enumerate(order)})
        return cls(graph, MappingProxyType(dict(attached)), nodes, order, ids)

    @classmethod
    def of_allocation(cls, graph: Graph, allocation: Allocation) -> SyncModel:
        """The facts of `graph` and the allocation made for it."""
        return cls.of(graph, allocation.node_attached)

    def node(self, name: str) -> Node:
        """A graph node by name (loops over many nodes fetch `graph.by_name` once instead)."""
        return self.graph.by_name[name]

    @cached_property
    def attributed(self) -> tuple[Node, ...]:
        """The nodes with attributes, in T-order: the only ones a rule keyed on an attribute
        (labels, activation, loops, multi-batch) can apply to; most nodes have none."""
        return tuple(node for node in self.nodes if node.attrs)

    @cached_property
    def with_attached(self) -> tuple[str, ...]:
        """The nodes with attached streams, in T-order (most nodes have none)."""
        return tuple(sorted((n for n, a in self.attached.items() if a and n in self.ids),
                            key=self.ids.__getitem__))

    @cached_property
    def t_prime_order(self) -> tuple[Node, ...]:
        """T-order without descending into FFTS subgraphs (spec 0); computed once, insertion
        and the attached events both walk it."""
        if not self.graph.subgraphs:  # most models: T'-order is the root's node list
            return self.graph.root.nodes
        result: list[Node] = []

        def walk(graph_name: str) -> None:
            for node in self.graph.graph(graph_name).nodes:
                result.append(node)
                if node.subgraphs and not any(node.has_attr(a) for a in FFTS_ATTRS):
                    for _, sub in node.subgraphs:
                        walk(sub)

        walk(self.graph.root.name)
        return tuple(result)

    def consumers(self, node: Node) -> list[str]:
        """Data consumers by output index and link order (duplicates kept)."""
        return list(self.graph.graph(node.graph).data_consumers(node.name))

    def control_successors(self, node: Node) -> tuple[str, ...]:
        """Control successors in link order."""
        return self.graph.graph(node.graph).control_successors.get(node.name, ())

    def label(self, name: str) -> str:
        """The node's `_stream_label` attribute (empty when absent)."""
        return self._labels.stream.get(name, "")

    def active_labels(self, name: str) -> tuple[str, ...]:
        """The labels the node's `_active_label_list` names (empty when absent)."""
        return self._labels.active.get(name, ())

    @cached_property
    def _labels(self) -> _Labels:
        """The graph's labels, read once per graph (the graphs sharing its nodes, in another
        order or with other options, share them)."""
        by_name = self.graph.by_name
        return _LABELS.get_or_make(id(by_name), (by_name,), lambda: _labels_of(by_name))

