"""AssignAttachedStreamPass (spec 5): extra ("attached") streams for nodes that ask for them.

Runs after compaction; ids continue from the counter. One fresh instance per graph (root, then
subgraphs in R-order), so reuse keys never match across graphs. Requests are bucketed
group -> (key, count) -> nodes; keys ascending get consecutive ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from msgspec.structs import replace

from streamalloc.heuristic.allocate_dynamic import dynamic_graphs
from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.plan import ModelPlan
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.attached import attached_streams
from streamalloc.ir.graph import Graph
from streamalloc.mappings import own_dict
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class AttachedStreams(RulePass):
    """attached-streams (AssignAttachedStreamPass)."""

    __slots__ = ()

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Assign per graph in the order the per-graph stage ran (root, then R-order)."""
        return outcome(plan, _attach(self.rule, ctx.graph, plan))


def _attach(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    # dynamic flow: per root and unknown-shape subgraph; known-shape ones are built on their own
    names = dynamic_graphs(graph) if graph.dynamic_shape else list(plan.graphs)
    streams = _main_streams(plan, names)
    found, next_stream = attached_streams(graph, streams, names, plan.next_stream,
                                          rule.matches)
    attached = own_dict(plan.attached)
    for name, ids in found.items():
        attached[name] = (*attached.get(name, ()), *ids)
    return replace(plan, attached=MappingProxyType(attached), next_stream=next_stream)


def _main_streams(plan: ModelPlan, names: Sequence[str]) -> Mapping[str, int]:
    """The streams of these graphs' nodes (one graph: its plan's own map, no copy)."""
    if len(names) == 1:
        return plan.graphs[names[0]].streams
    return {n: s for name in names for n, s in plan.graphs[name].streams.items()}
