"""pin-stream (a user policy): matched nodes go to a given stream after compaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from streamalloc.errors import AllocationInfeasible
from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.plan import ModelPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


@dataclass(frozen=True, slots=True)
class PinStream(RulePass):
    """pin-stream; option `stream`: the logical stream the matched nodes go to."""

    stream: int

    @classmethod
    def from_rule(cls, rule: Rule) -> Self:
        """The pass with the rule's `stream` option."""
        return cls(rule, int(rule.options["stream"]))

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Move matched nodes that have a stream onto `stream`."""
        stream = self.stream
        limit = plan.main_stream_num if plan.main_stream_num is not None else plan.next_stream
        if stream >= max(limit, 1):
            raise AllocationInfeasible(f"rule {self.name!r} ({self.rule.origin}) pins nodes to "
                                       f"stream {stream}, but the allocation has {limit} "
                                       "stream(s)")
        new = plan
        for graph_name, graph_plan in plan.graphs.items():
            changes = {n.name: (stream, Note(self.name, stream, "pinned by rule"))
                       for n in ctx.graph.graph(graph_name).nodes
                       if self.rule.matches(n) and graph_plan.streams[n.name] not in (stream, -1)}
            new = new.set_nodes(graph_name, changes)
        return outcome(plan, new)
