"""UpdateForSkippedEnginePass (spec 2.9): skip-engine nodes (GE local, host CPU) fold away.

A candidate (in an unlabelled skip-engine subgraph, with a stream) whose inputs all have no
stream loses its stream; one with outputs whose neighbours all sit on a single stream joins it.
Decisions see earlier updates (G-order, progressive).
"""

from __future__ import annotations

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class SkippedEngine(RulePass):
    """skipped-engine (UpdateForSkippedEnginePass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Fold candidates in G-order."""
        return outcome(plan, _fold(self.rule, ctx, plan))


def _fold(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    streams = list(plan.streams.column())  # by position, changed as nodes fold
    position = ctx.compute.index
    candidates = sorted(position[n] for sg in ctx.subgraphs
                        if sg.engine.skip_assign_stream and not sg.stream_label
                        for n in sg.nodes if streams[position[n]] != INVALID)  # G-order
    changes: dict[str, tuple[int, Note]] = {}
    for me in candidates:
        node = ctx.nodes[me]
        if not rule.matches(node):
            continue
        preds = ctx.in_neighbours(node)
        succs = ctx.out_neighbours(node)
        if not node.subgraphs and all(streams[position[p]] == INVALID for p in preds):
            streams[me] = INVALID
            changes[node.name] = (INVALID, Note(rule.name, INVALID, "every input has no stream"))
        elif succs:
            around = {streams[position[n]] for n in (*preds, *succs)} - {INVALID}
            if len(around) == 1:
                (stream,) = around
                streams[me] = stream
                changes[node.name] = (stream, Note(rule.name, stream,
                                                   "all neighbours are on this stream"))
    return plan.set_nodes(changes)
