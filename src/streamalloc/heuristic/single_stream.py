"""SingleStreamPass (spec 2.5): one stream for the root, the parent's stream in subgraphs."""

from __future__ import annotations

from streamalloc.errors import OptionError
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.partition import auto_multistream_mode
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class SingleStream(RulePass):
    """single-stream (SingleStreamPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Give every unassigned subgraph the single stream; labels are GE's error E10055."""
        return outcome(plan, _single(self.rule, ctx, plan))


def _single(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    mode = auto_multistream_mode(ctx.graph)
    if mode:  # checked before the labels, as GE does (E10056)
        raise OptionError(f"{ctx.graph.source}: ge.enableSingleStream is \"true\" and "
                          f"ge.autoMultistreamParallelMode is {mode!r}; the two cannot be set "
                          "together (GE E10056): unset one of them")
    stream = plan.default_stream
    if stream == INVALID:
        plan, (stream,) = plan.take_streams()
    changes: dict[int, tuple[int, Note]] = {}
    for sg in ctx.subgraphs:
        if plan.sg_streams[sg.index] != INVALID or not ctx.subgraph_matches(rule, sg):
            continue
        if sg.stream_label:
            raise OptionError(f"{ctx.graph.source}: ge.enableSingleStream is \"true\" but "
                              f"subgraph {sg.id} (node {sg.nodes[0]!r}) has stream label "
                              f"{sg.stream_label!r}; single-stream mode allows no stream labels "
                              "(GE E10055): set ge.enableSingleStream to \"false\" or drop the "
                              "label")
        changes[sg.index] = (stream, Note(rule.name, stream, "single-stream mode"))
    return plan.set_subgraphs(changes)
