"""IndependentStreamPass (spec 2.3): independent engines get one stream per (engine, label).

It overwrites a plain label's stream, so HCCL nodes labelled L get an L stream of their own;
only a user label keeps an independent subgraph on the shared label stream.
"""

from __future__ import annotations

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class IndependentStream(RulePass):
    """independent-stream (IndependentStreamPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """One id per (engine, stream label) key, by first occurrence in L-order."""
        return outcome(plan, _independent(self.rule, ctx, plan))


def _independent(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    key_to_stream: dict[tuple[str, str], int] = {}
    changes: dict[int, tuple[int, Note]] = {}
    for sg in ctx.subgraphs:
        if plan.sg_streams[sg.index] != INVALID and sg.user_stream_label:
            continue  # a user label wins
        if not sg.engine.independent or not ctx.subgraph_matches(rule, sg):
            continue
        key = (sg.engine_name, sg.stream_label)
        if key not in key_to_stream:
            plan, (key_to_stream[key],) = plan.take_streams()
        stream = key_to_stream[key]
        why = f"independent engine {sg.engine_name}" + (
            f" with label {sg.stream_label!r}" if sg.stream_label else "")
        changes[sg.index] = (stream, Note(rule.name, stream, why))
    return plan.set_subgraphs(changes)
