"""UpdateForMdeGroupPass (spec 2.1): `NewStreamId` groups reserve fresh stream ids.

GE quirk kept: NodeStreamUpdatePass overwrites these ids later, so the only lasting effect is
the advanced stream counter (the ids vanish at compaction).
"""

from __future__ import annotations

from streamalloc.errors import InputError
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule

NEW_STREAM_ID = "NewStreamId"


class MdeGroup(RulePass):
    """mde-group (UpdateForMdeGroupPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Bucket matched nodes by their current stream; one new id per (stream, group)."""
        return outcome(plan, _reserve(self.rule, ctx, plan))


def _reserve(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    changes: dict[str, tuple[int, Note]] = {}
    for stream, names in ctx.buckets(rule, plan.streams):
        group_to_new: dict[int, int] = {}
        for name in names:
            group = _group(ctx, name)
            if group not in group_to_new:
                plan, (group_to_new[group],) = plan.take_streams()
            new = group_to_new[group]
            changes[name] = (new, Note(rule.name, new, f"NewStreamId {group} on stream {stream}"))
    return plan.set_nodes(changes)


def _group(ctx: GraphContext, name: str) -> int:
    value = ctx.compute.node(name).attr(NEW_STREAM_ID)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{ctx.graph.source}: node {name!r} attribute NewStreamId is {value!r}; "
                         "GE needs an integer")
    return value
