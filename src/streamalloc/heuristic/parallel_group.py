"""UpdateForParallelGroupPass (spec 2.7): one new stream per (old stream, group name).

Group "-1" (HCOM "follow the producer") inherits its single data producer's stream when it has
one; otherwise it falls back to a group stream.
"""

from __future__ import annotations

from streamalloc.errors import InputError
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.mappings import own_dict
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule

PARALLEL_GROUP = "_parallel_group"


class ParallelGroup(RulePass):
    """parallel-group (UpdateForParallelGroupPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Bucket matched nodes by stream (ascending), then by group name within a bucket."""
        return outcome(plan, _regroup(self.rule, ctx, plan))


def _regroup(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    buckets = ctx.buckets(rule, plan.streams)
    streams = own_dict(plan.streams) if buckets else {}  # most graphs: no node in a group
    changes: dict[str, tuple[int, Note]] = {}
    for stream, names in buckets:
        group_to_new: dict[str, int] = {}
        for name in names:
            group = _group(ctx, name)
            producer = _single_producer(ctx, name) if group == "-1" else None
            if producer is not None and streams[producer] != INVALID:
                new, why = streams[producer], f"group -1 follows producer {producer!r}"
            else:
                if group not in group_to_new:
                    plan, (group_to_new[group],) = plan.take_streams()
                new, why = group_to_new[group], f"parallel group {group!r} from stream {stream}"
            streams[name] = new
            changes[name] = (new, Note(rule.name, new, why))
    return plan.set_nodes(changes)


def _group(ctx: GraphContext, name: str) -> str:
    value = ctx.compute.node(name).attr(PARALLEL_GROUP)
    if not isinstance(value, str):
        raise InputError(f"{ctx.graph.source}: node {name!r} attribute _parallel_group is "
                         f"{value!r}; GE needs a string")
    return value


def _single_producer(ctx: GraphContext, name: str) -> str | None:
    sources = list(ctx.compute.node(name).data_sources())
    return sources[0].src if len(sources) == 1 else None
