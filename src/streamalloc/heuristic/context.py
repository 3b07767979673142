"""What a pass may read: the graph, its partition, labels, options and neighbour helpers
(`GraphContext` for the per-graph passes, `ModelContext` for the model-scope ones)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import msgspec

from streamalloc.heuristic.plan import INVALID
from streamalloc.ir.graph import UNKNOWN_SHAPE_ATTR, ComputeGraph, Graph, Node
from streamalloc.ir.labels import NO_LABELS, NodeLabels
from streamalloc.ir.partition import EngineSubgraph, GraphPartition
from streamalloc.rules.model import Rule
from streamalloc.rules.predicates import match_all

__all__ = ["UNKNOWN_SHAPE_ATTR", "GraphContext", "ModelContext", "is_unknown_shape"]


def is_unknown_shape(graph: Graph, compute: ComputeGraph) -> bool:
    """GE's "graph unknown flag" (`Graph.unknown_shape`)."""
    return graph.unknown_shape(compute)


@dataclass(frozen=True)
class GraphContext:
    """One graph of the model as the passes see it (read-only)."""

    graph: Graph
    compute: ComputeGraph
    partition: GraphPartition
    labels: Mapping[str, NodeLabels]

    @property
    def subgraphs(self) -> tuple[EngineSubgraph, ...]:
        """The partition subgraphs in L-order."""
        return self.partition.subgraphs

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Direct nodes in G-order."""
        return self.compute.nodes

    def option(self, key: str, default: str = "") -> str:
        """A graph option (GE string)."""
        return self.graph.option(key, default)

    def label(self, name: str) -> NodeLabels:
        """A node's labels after the label rules."""
        return self.labels.get(name, NO_LABELS)

    def position(self, name: str) -> int:
        """The node's id within this graph (G-order index; GE compares topological ids)."""
        return self.compute.index[name]

    def in_neighbours(self, node: Node) -> list[str]:
        """Connected data producers (slot order), then control predecessors."""
        return [r.src for r in node.data_sources()] + list(node.control_inputs)

    def out_neighbours(self, node: Node) -> tuple[str, ...]:
        """Data consumers (by output port, link order), then control successors."""
        return self.compute.successors(node.name)

    def data_consumers(self, name: str) -> list[str]:
        """Data consumers of a node, by output port then link order."""
        return list(self.compute.data_consumers(name))

    @cached_property
    def unknown_shape(self) -> bool:
        """Is this graph unknown-shape?"""
        return is_unknown_shape(self.graph, self.compute)

    def buckets(self, rule: Rule, streams: Mapping[str, int]) -> list[tuple[int, list[str]]]:
        """Matched subgraph nodes (L-order, then G-order) grouped by their current stream,
        ascending, without the INVALID bucket (MDE and parallel-group passes)."""
        # one test per node, in G-order; the rules of these passes match few nodes
        matched = {n.name for n in rule.matching(self.compute.nodes)}
        found: dict[int, list[str]] = {}
        for sg in self.subgraphs if matched else ():
            for name in sg.nodes:
                if name in matched:
                    found.setdefault(streams[name], []).append(name)
        return [(s, found[s]) for s in sorted(found) if s != INVALID]

    def subgraph_matches(self, rule: Rule, sg: EngineSubgraph) -> bool:
        """A subgraph-level rule applies to a subgraph when it matches every node of it."""
        return rule.match is match_all or all(rule.matches(self.compute.node(n)) for n in sg.nodes)


class ModelContext(msgspec.Struct, frozen=True):
    """The whole model as the model-scope passes see it (read-only).

    `forced_main` is the rule set's `dynamic-renumber` rule, whose matches mini-dag's
    recompaction puts on the main stream (None: no node is forced there).
    """

    graph: Graph
    partitions: Mapping[str, GraphPartition]
    labels: Mapping[str, NodeLabels]
    forced_main: Rule | None = None
