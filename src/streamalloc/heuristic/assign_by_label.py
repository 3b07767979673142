"""AssignByLabelPass (spec 2.2): subgraphs with one stream label share one stream per graph."""

from __future__ import annotations

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class AssignByLabel(RulePass):
    """assign-by-label (AssignByLabelPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """First occurrence of a label in L-order takes the next id."""
        return outcome(plan, _by_label(self.rule, ctx, plan))


def _by_label(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    label_to_stream: dict[str, int] = {}
    changes: dict[int, tuple[int, Note]] = {}
    for sg in ctx.subgraphs:
        if not sg.stream_label or not ctx.subgraph_matches(rule, sg):
            continue
        if sg.stream_label not in label_to_stream:
            plan, (label_to_stream[sg.stream_label],) = plan.take_streams()
        stream = label_to_stream[sg.stream_label]
        changes[sg.index] = (stream, Note(rule.name, stream, f"stream label {sg.stream_label!r}"))
    return plan.set_subgraphs(changes)
