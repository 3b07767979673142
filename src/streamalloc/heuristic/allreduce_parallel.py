"""AllReduceParallelPass (spec 2.8, with ge.hcomParallel = 1): fused AllReduce successors
move to new streams, one per old stream, so gradients reduce while backward compute runs.

The rule's match selects the AllReduce nodes (GE: HcomAllReduce/HorovodAllreduce without a user
label); `fusion` must be > 0. All transitive data descendants with a matching label move.
"""

from __future__ import annotations

from streamalloc.facts import ALLREDUCE_TYPES
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class AllReduceParallel(RulePass):
    """allreduce-parallel (AllReduceParallelPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Collect successors of every fused AllReduce, then renumber them per old stream."""
        return outcome(plan, _move_successors(self.rule, ctx, plan))


def _move_successors(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    successors: set[str] = set()
    for node in ctx.nodes:
        if rule.matches(node) and _fusion(ctx, node.name) > 0:
            successors |= _descendants(ctx, node.name)
    old_to_new: dict[int, int] = {}
    changes: dict[str, tuple[int, Note]] = {}
    # [P-order] GE iterates the successor set in pointer order; we use id-order (spec 2.8).
    for name in sorted(successors, key=ctx.position):
        old = plan.streams[name]
        if old == INVALID:
            continue
        if old not in old_to_new:
            plan, (old_to_new[old],) = plan.take_streams()
        if ctx.compute.node(name).type not in ALLREDUCE_TYPES:
            new = old_to_new[old]
            changes[name] = (new, Note(rule.name, new, f"successor of a fused AllReduce, "
                                                       f"moved off stream {old}"))
    return plan.set_nodes(changes)


def _fusion(ctx: GraphContext, name: str) -> int:
    value = ctx.compute.node(name).attr("fusion", -1)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _descendants(ctx: GraphContext, source: str) -> set[str]:
    label = ctx.label(source).stream_label
    found: set[str] = set()
    frontier = {source}
    while frontier:
        step: set[str] = set()
        for current in frontier:
            for consumer in ctx.data_consumers(current):
                other = ctx.label(consumer).stream_label
                if (other == label or (label and not other)) and consumer not in found:
                    found.add(consumer)
                    step.add(consumer)
        frontier = step
    return found
