"""The label-scope passes (`cmo-label`, `user-stream-label`, `stream-label`): stream labels as
they stand before GE's engine partitioning.

What each label kind does is stated once, in `streamalloc.rules.labelling.apply`, which both
allocators read; this pass runs it as one step of the heuristic's fold.
"""

from __future__ import annotations

from streamalloc.heuristic.rule_pass import Labels, RulePass
from streamalloc.ir.graph import Graph
from streamalloc.passes import PassResult, outcome
from streamalloc.rules import labelling


class LabelRule(RulePass):
    """One label rule (options of `stream-label`: `label`, `user`, read by `labelling`)."""

    __slots__ = ()

    def apply(self, ctx: Graph, plan: Labels) -> PassResult[Labels]:
        """Every node's labels after this rule."""
        return outcome(plan, labelling.apply(self.rule, ctx, plan))


def labels_text(graph: Graph, labels: Labels) -> str:
    """The canonical text of the labels: a header, then one line per labelled node in T-order
    with its stream label and user stream label."""
    lines = [f"// streamalloc labels v1: graph {graph.name}"]
    for node in graph.all_nodes():
        value = labels[node.name]
        if value.present:
            lines.append(f"{node.name} stream_label={value.stream_label}"
                         + (f" user_stream_label={value.user_stream_label}"
                            if value.user_stream_label else ""))
    return "\n".join(lines) + "\n"
