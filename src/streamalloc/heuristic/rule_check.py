"""The heuristic's own check: its allocation satisfies every enabled rule's constraint form.

A rule that a later rule or GE pass undoes (a user `same-stream` at a priority that
node-stream-update overwrites, a dedicated stream that optimize-ineffective fills) is an input
error naming both, not a plan that silently breaks the rule.
"""

from __future__ import annotations

from collections.abc import Mapping

from streamalloc.allocation import Allocation
from streamalloc.errors import RuleConflictError
from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import GraphPartition
from streamalloc.rules.check import Broken, Placement, broken
from streamalloc.rules.constraints import rule_constraints
from streamalloc.rules.model import RuleSet


def placement_of(allocation: Allocation) -> Placement:
    """The allocation's logical and attached streams, as the constraint checks read them."""
    return Placement({n: a.stream for n, a in allocation.nodes.items()},
                     {n: a.attached for n, a in allocation.nodes.items() if a.attached})


def check_rules(graph: Graph, rules: RuleSet, allocation: Allocation,
                partitions: Mapping[str, GraphPartition] | None = None) -> None:
    """RuleConflictError (exit 3) for the first constraint the allocation breaks."""
    problems = broken(rule_constraints(rules, graph, partitions), graph, placement_of(allocation))
    if problems:
        raise RuleConflictError(conflict_message(rules, allocation, problems))


def conflict_message(rules: RuleSet, allocation: Allocation, problems: list[Broken]) -> str:
    """Which rule does not hold, which later rule placed the offending nodes, what to do."""
    first = problems[0]
    rule = rules.rule(first.rule)
    order = {r.name: i for i, r in enumerate(rules.rules)}
    mine = order[rule.name]
    # per offending node (the rule's own nodes come first), the last rule after this one that
    # touched it: the pass that undid the rule
    later = {n: touches[-1].note.rule for n in first.nodes
             if (touches := [t for t in allocation.provenance.get(n, ())
                             if order.get(t.note.rule, -1) > mine])}
    deciders = sorted({allocation.nodes[n].rule for n in first.nodes if n in allocation.nodes})
    text = f"{rule.origin}: rule {rule.name!r} ({rule.kind}) does not hold: {first.message}"
    if later:
        culprit = rules.rule(next(iter(later.values())))
        ge = f" (GE's {culprit.spec.ge_pass})" if culprit.spec.ge_pass else ""
        moved = [n for n, r in later.items() if r == culprit.name]
        text += (f"; rule {culprit.name!r}{ge} runs after it and placed {', '.join(moved)}. "
                 f"Order {rule.name!r} after it (a priority above {culprit.priority}, or "
                 f"after: [{culprit.name}]) or disable it")
    elif deciders:
        text += f"; the nodes were placed by {', '.join(deciders)}"
    if len(problems) > 1:
        text += f" ({len(problems) - 1} more constraint(s) broken)"
    return text
