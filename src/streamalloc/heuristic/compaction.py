"""Final compaction, GE's "refresh continuous streams" (spec 3.3): used ids become 0..k-1.

Only ids below the counter are considered (so quirk Q1's collision survives, example 7.4b); for
an unknown-shape root only its direct nodes count. The result is `main_stream_num`.
"""

from __future__ import annotations

from types import MappingProxyType

from msgspec.structs import replace

from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.plan import GraphPlan, ModelPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.graph import Graph
from streamalloc.mappings import own_dict
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


def counted_graphs(graph: Graph, plan: ModelPlan) -> list[str]:
    """The graphs whose nodes compaction looks at."""
    if graph.dynamic_shape:
        return [graph.root.name]
    return list(plan.graphs)


class Compact(RulePass):
    """compact (GE's RefreshContinuousStreams)."""

    __slots__ = ()

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Rank the used ids; nodes keep their relative allocation order."""
        return outcome(plan, _compact(self.rule, ctx.graph, plan))


def _compact(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    limit = plan.next_stream
    names = counted_graphs(graph, plan)
    ids = set().union(*(plan.graphs[g].streams.values() for g in names))  # at C speed
    used = sorted(s for s in ids if 0 <= s < limit)
    remap = {old: new for new, old in enumerate(used)}
    graphs = own_dict(plan.graphs)
    for g in names:
        graphs[g] = _renamed(rule, graphs[g], remap)
    return replace(plan, graphs=MappingProxyType(graphs), next_stream=len(used),
                   main_stream_num=len(used))


def _renamed(rule: Rule, plan: GraphPlan, remap: dict[int, int]) -> GraphPlan:
    # one note per renamed id, shared by its nodes (notes are immutable)
    renamed = {s: (new, Note(rule.name, new, f"stream {s} renumbered", decides=False))
               for s, new in remap.items() if new != s}
    if not renamed:  # ids already compact (most graphs): no node to look at
        return plan
    changes = {n: renamed[s] for n, s in plan.streams.items() if s in renamed}
    return plan.set_nodes(changes)
