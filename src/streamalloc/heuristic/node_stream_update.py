"""NodeStreamUpdatePass (spec 2.6): nodes take their subgraph's stream.

Every direct node is reset to INVALID first (data-like nodes outside all subgraphs stay there).
Quirks kept: a node with `_rts_label_node` (presence) gets the default stream, which is INVALID
in the root graph; the NetOutput of a While body in an unknown-shape graph gets stream 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.errors import InputError
from streamalloc.heuristic.context import GraphContext, is_unknown_shape
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.graph import Node
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule

RTS_LABEL_NODE = "_rts_label_node"


class NodeStreamUpdate(RulePass):
    """node-stream-update (NodeStreamUpdatePass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Reset every direct node, then copy subgraph streams to their nodes."""
        return outcome(plan, _update(self.rule, ctx, plan))


def _update(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    # notes are immutable: one per reason, shared by the nodes it explains; every node takes
    # its subgraph's stream (by its owner, a column at a time), the quirk nodes then their own
    reset = Note(rule.name, INVALID, "reset before copying subgraph streams", decides=False)
    streams: list[int] = []
    notes: list[Note] = []
    quirks: list[tuple[Sequence[str], int, Note]] = []
    while_body_output = _in_unknown_while_body(ctx)
    attributed = {n.name for n in ctx.nodes if n.attrs}  # most graphs: few nodes, often none
    for sg in ctx.subgraphs:
        stream = plan.sg_streams[sg.index]
        if stream == INVALID and not sg.engine.skip_assign_stream:  # (GE fails here too;
            # GE's own rules always assign one: only a rule file that disables them gets here)
            raise InputError(f"subgraph {sg.id} ({sg.engine.name}) has not been assigned a "
                             f"stream: no enabled rule of the rule set gave it one, and GE's "
                             f"NodeStreamUpdatePass ({rule.name}) fails there; keep "
                             "assign-by-dependency enabled, or add a rule that assigns streams")
        streams.append(stream)
        notes.append(Note(rule.name, stream, f"stream of {sg.id}", decides=False))
        for name in _quirk_candidates(sg.nodes, attributed, while_body_output):
            node = ctx.compute.node(name)
            if node.has_attr(RTS_LABEL_NODE):
                quirks.append(((name,), plan.default_stream,
                               Note(rule.name, plan.default_stream,
                                    "RTS label node: default stream")))
            elif node.type == "NetOutput" and while_body_output:
                quirks.append(((name,), 0, Note(rule.name, 0, "NetOutput of a While body in "
                                                             "an unknown-shape graph")))
    copied = plan.set_by_owner(ctx.partition.owner_at, [*streams, INVALID], [*notes, reset],
                               keep=[names[0] for names, _, _ in quirks])
    return copied.set_groups(quirks)


def _quirk_candidates(names: tuple[str, ...], attributed: set[str], while_body_output: bool
                      ) -> list[str]:
    """The nodes that may not take their subgraph's stream: those with attributes (an RTS label
    node; `attributed` holds the graph's), and every node in a While body of an unknown-shape
    graph (its NetOutput)."""
    if while_body_output:
        return list(names)
    return [n for n in names if n in attributed] if attributed else []


def _in_unknown_while_body(ctx: GraphContext) -> bool:
    """Is this graph instance 1 (the body) of a While that lives in an unknown-shape graph?"""
    parent_name = ctx.compute.parent
    if parent_name is None:
        return False
    parent: Node = ctx.graph.node(parent_name)
    if parent.type != "While" or len(parent.subgraphs) < 2 or \
            parent.subgraphs[1][1] != ctx.compute.name:
        return False
    return is_unknown_shape(ctx.graph, ctx.graph.graph(parent.graph))
