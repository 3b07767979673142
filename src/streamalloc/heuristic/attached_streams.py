"""AssignAttachedStreamPass (spec 5): extra ("attached") streams for nodes that ask for them.

Runs after compaction; ids continue from the counter. One fresh instance per graph (root, then
subgraphs in R-order), so reuse keys never match across graphs. Requests are bucketed
group -> (key, count) -> nodes; keys ascending get consecutive ids.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from types import MappingProxyType

from streamalloc.heuristic.allocate_dynamic import dynamic_graphs
from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.plan import ModelPlan
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.attached import DISABLE, requests
from streamalloc.ir.graph import Graph
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


@dataclass(frozen=True, slots=True)
class AttachedStreams(RulePass):
    """attached-streams (AssignAttachedStreamPass)."""

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Assign per graph in the order the per-graph stage ran (root, then R-order)."""
        return outcome(plan, _attach(self.rule, ctx.graph, plan))


def _attach(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    attached = dict(plan.attached)
    next_stream = plan.next_stream
    # dynamic flow: per root and unknown-shape subgraph; known-shape ones are built on their own
    names = dynamic_graphs(graph) if graph.dynamic_shape else list(plan.graphs)
    for graph_name in names:
        graph_plan = plan.graphs[graph_name]
        buckets: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(
            lambda: defaultdict(list))
        for node in graph.graph(graph_name).nodes:
            if rule.matches(node) and not node.has_attr(DISABLE):
                for group, key, count in requests(graph, node, graph_plan.streams[node.name]):
                    buckets[group][(key, count)].append(node.name)
        # [hash order] GE keeps group names in an unordered map; we sort them (spec 5.2).
        for group in sorted(buckets):
            for key, count in sorted(buckets[group]):
                for name in buckets[group][(key, count)]:
                    attached[name] = (*attached.get(name, ()), next_stream)
                next_stream += count
    return replace(plan, attached=MappingProxyType(attached), next_stream=next_stream)
