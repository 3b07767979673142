"""The heuristic's own check: its allocation satisfies every enabled rule's constraint form.

A rule that a later rule or GE pass undoes (a user `same-stream` at a priority that
node-stream-update overwrites, a dedicated stream that optimize-ineffective fills) is an input
error naming both, not a plan that silently breaks the rule.
"""

from __future__ import annotations

from collections.abc import Mapping

from streamalloc.allocation import Allocation
from streamalloc.errors import RuleConflictError
from streamalloc.facts import INVALID
from streamalloc.ir.clusters import task_nodes
from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import GraphPartition
from streamalloc.rules.check import Broken, Placement, broken
from streamalloc.rules.constraint_inputs import RuleLabels
from streamalloc.rules.constraints import DifferentStreams, DisjointGroups, rule_constraints
from streamalloc.rules.kinds import USER_KINDS
from streamalloc.rules.model import Rule, RuleSet


def placement_of(allocation: Allocation) -> Placement:
    """The allocation's logical and attached streams, as the constraint checks read them."""
    return Placement(allocation.node_streams, allocation.node_attached)


def check_rules(graph: Graph, rules: RuleSet, allocation: Allocation,
                partitions: Mapping[str, GraphPartition] | None = None,
                labels: RuleLabels | None = None) -> None:
    """RuleConflictError (exit 3) for the first constraint the allocation breaks
    (`partitions`, `labels`: GE's partition and the rules' labels, when the caller has them)."""
    problems = broken(rule_constraints(rules, graph, partitions, labels), graph,
                      placement_of(allocation))
    if problems:
        raise RuleConflictError(conflict_message(rules, allocation, problems))


def conflict_message(rules: RuleSet, allocation: Allocation, problems: list[Broken]) -> str:
    """Which rule does not hold, which later rule placed the offending nodes, what to do. When
    that rule is a user rule, or a user rule after it changed a node GE's partition put with
    them, that the two cannot both hold (naming both, file:line): reordering a rule does not
    help there, changing the user's does."""
    first = problems[0]
    rule = rules.rule(first.rule)
    # compaction only renumbers streams, which keeps every constraint (a pin runs after it):
    # its touches never undo a rule
    order = {name: at for name, at in rules.run_order().items()
             if rules.rule(name).kind != "compact"}
    mine = order[rule.name]
    # per offending node (the rule's own nodes come first), the last rule after this one that
    # touched it: the pass that undid the rule
    later = _placed_later(first.nodes, allocation, order, mine) \
        or _placed_later(_all_nodes(first), allocation, order, mine)
    deciders = sorted({allocation.nodes[n].rule for n in first.nodes if n in allocation.nodes})
    text = f"{rule.origin}: rule {rule.name!r} ({rule.kind}) does not hold: {first.message}"
    culprit = rules.rule(next(iter(later.values()))) if later else None
    moved = [n for n, r in later.items() if culprit is not None and r == culprit.name]
    user: tuple[Rule, str] | None = None
    if culprit is not None and culprit.kind in USER_KINDS:
        user = (culprit, f"placed {', '.join(moved)}")
    elif (found := _user_rule_after(rules, first.nodes, allocation, order, mine)) is not None:
        user = (rules.rule(found[0]), f"changed {found[1]}")
    if user is not None:
        other, did = user
        # over GE's rules (a file built on free) the user changes only the file's rules
        own = [r.name for r in (rule, other) if not r.shipped]
        change = f"Change the match of {' or '.join(map(repr, own))}" \
            if rules.over_ge and len(own) == 1 else \
            "Change the match of one of them or disable one"
        text = (f"rules {rule.name!r} ({rule.kind}, {rule.origin}) and {other.name!r} "
                f"({other.kind}, {other.origin}) cannot both hold: {first.message}; "
                f"{other.name!r} runs after {rule.name!r} and {did}. {change}")
    elif culprit is not None:
        ge = f" (GE's {culprit.spec.ge_pass})" if culprit.spec.ge_pass else ""
        # (a file built on free names none of GE's rules: only its priority places it)
        how = f"a priority above {culprit.priority}" + (
            "" if rules.over_ge else f", or after: [{culprit.name}]")
        text += (f"; rule {culprit.name!r}{ge} runs after it and placed {', '.join(moved)}. "
                 f"Order {rule.name!r} after it ({how}) or disable it")
    elif deciders:
        text += f"; the nodes were placed by {', '.join(deciders)}"
    if len(problems) > 1:
        text += f" ({len(problems) - 1} more constraint(s) broken)"
    if rules.over_ge:
        text += (f" (rule set {rules.name!r} is built on 'free': this is ge mode running it "
                 "over GE's default rules, the optimal mode's baseline)")
    return text


def _user_rule_after(rules: RuleSet, nodes: tuple[str, ...], allocation: Allocation,
                     order: Mapping[str, int], mine: int) -> tuple[str, str] | None:
    """The last user rule (`USER_KINDS`) after position `mine` that touched one of `nodes` or
    a node of their engine subgraphs (a stream label on one node labels the subgraph GE merged
    it into: a user label merges across engines), and what it touched; None without one. A
    user rule is what the user can change, whichever GE pass then placed the nodes."""
    scopes = {t.scope: n for n in reversed(nodes) for t in allocation.provenance.get(n, ())
              if t.scope.startswith("subgraph ")}  # -> the first of `nodes` in it
    mates = {n: scope for n, touches in allocation.provenance.items() for t in touches
             if (scope := t.scope) in scopes}
    found: tuple[int, str, str] | None = None
    for name in sorted({*nodes, *mates}):
        for touch in allocation.provenance.get(name, ()):
            at = order.get(touch.note.rule, -1)
            if at > mine and rules.rule(touch.note.rule).kind in USER_KINDS \
                    and (found is None or at > found[0]):
                where = "" if name in nodes else \
                    (f", which GE's partition put with {scopes[mates[name]]} in "
                     f"{mates[name]}")
                found = (at, touch.note.rule, f"{name} ({touch.note.reason}){where}")
    return None if found is None else found[1:]


def _placed_later(nodes: tuple[str, ...], allocation: Allocation, order: Mapping[str, int],
                  mine: int) -> dict[str, str]:
    """Per node, the last rule after position `mine` (run order) that touched it."""
    return {n: touches[-1].note.rule for n in nodes
            if (touches := [t for t in allocation.provenance.get(n, ())
                            if order.get(t.note.rule, -1) > mine])}


def _all_nodes(problem: Broken) -> tuple[str, ...]:
    """Every node the broken constraint binds (when the offending ones were not moved later,
    the rule may have been undone on the others: a pin moving one node of a same-stream)."""
    c = problem.constraint
    if isinstance(c, DifferentStreams):
        return (*c.first, *c.second)
    if isinstance(c, DisjointGroups):
        return tuple(n for group in c.groups for n in group)
    return c.nodes


def idle_rules(graph: Graph, rules: RuleSet, allocation: Allocation) -> list[str]:
    """One warning per enabled user-policy rule (`USER_KINDS`) that decides no node: its match
    selects no task node of the graph (data-like sources do not count), or it changed no
    node's stream or label (no note of it in any node's provenance), either because every
    node it matches was placed by rules that run after it or because it had nothing to act
    on. Rules gated off by `when:` are silent."""
    users = [r for r in rules.rules if r.kind in USER_KINDS and r.enabled(graph.options)]
    if not users:
        return []
    tasks = task_nodes(graph.all_nodes())
    acted = {t.note.rule for touches in allocation.provenance.values() for t in touches}
    found = []
    for rule in users:
        head = f"{rule.origin}: rule {rule.name!r} ({rule.kind}) decides no node: "
        matched = [n.name for n in rule.matching(tasks)]
        if not matched:
            found.append(head + f"its match selects no node of graph {graph.name!r}"
                         " (data-like sources such as Data and Const do not count)")
            continue
        if rule.name in acted:
            continue
        found.append(head + _idle_reason(rule, matched, allocation, rules))
    return found


def _idle_reason(rule: Rule, matched: list[str], allocation: Allocation,
                 rules: RuleSet) -> str:
    count = f"{len(matched)} node(s) it matches"
    if rule.spec.scope == "label":
        return f"it had nothing to act on: the {count} already carry its stream label"
    placed = [n for n in matched if allocation.nodes[n].stream != INVALID]
    if not placed:
        return f"it had nothing to act on: none of the {count} has a stream"
    order = rules.run_order()
    mine = order[rule.name]
    deciders = {allocation.nodes[n].rule for n in placed}
    if all(order.get(r, -1) > mine for r in deciders):
        after = sorted(deciders, key=lambda r: order[r])
        # the last rule of its own scope that touched them (node-stream-update, which copies
        # the subgraph streams to the nodes, included): a priority above it acts on the result
        touched = [rules.rule(t.note.rule) for n in placed for t in allocation.provenance[n]
                   if order.get(t.note.rule, -1) > mine]
        same_scope = [r for r in touched if r.spec.scope == rule.spec.scope]
        last = max(same_scope, key=lambda r: order[r.name], default=None)
        hint = "" if last is None else \
            f": give it a priority above {last.priority} ({last.name}) to act on their streams"
        return (f"every node it matches was placed by rules that run after it "
                f"({', '.join(after)}); at priority {rule.priority} it runs before them{hint}")
    return f"it had nothing to act on: the {count} already satisfy it"
