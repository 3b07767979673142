"""Rule checks: the plan's logical streams satisfy the constraint form of every enabled rule of
the rule set the plan was made with (the same forms the allocators honour, `rules.check`)."""

from __future__ import annotations

from streamalloc.errors import InputError
from streamalloc.ir.graph import Graph
from streamalloc.rules import RuleSet, builtin_names, ge_rules_for, rule_set
from streamalloc.rules.check import Placement, broken
from streamalloc.rules.constraints import rule_constraints
from streamalloc.verify.plan_view import PlanView
from streamalloc.verify.report import ViolationLog


def plan_rule_set(view: PlanView, given: str | None, graph: Graph) -> RuleSet | None:
    """The rule set to check `view` against: `given` (a file or shipped name), else the
    shipped set the plan names. InputError when neither matches the plan's digest. Given
    `free` or a set built on it, a plan made by ge mode under what it runs for it (an
    optimal plan that kept its baseline: `rules.ge_rules_for` on `graph`) is checked
    against that."""
    ref = view.rules
    if ref is None:
        return rule_set(given) if given else None
    if given:
        rules = rule_set(given)
        if rules.digest != ref.digest and rules.binds_optimal_only:
            composed = ge_rules_for(rules, graph)
            if composed.digest == ref.digest:
                return composed
        if rules.digest != ref.digest:
            way = f"{ref.name!r} is shipped: verify without --rules, or with --rules " \
                f"{ref.name}" \
                if _shipped(ref.name, ref.digest) else "give the rule file the plan was made with"
            raise InputError(f"{view.source}: the plan was made with rule set {ref.name!r} "
                             f"({ref.digest}), but {given} is rule set {rules.name!r} "
                             f"({rules.digest}); {way}")
        return rules
    if ref.name not in builtin_names():
        raise InputError(f"{view.source}: the plan was made with rule set {ref.name!r}, which is "
                         "not shipped; give its file with --rules FILE")
    rules = rule_set(ref.name)
    if rules.digest != ref.digest:
        raise InputError(f"{view.source}: the plan's rule set {ref.name!r} ({ref.digest}) is not "
                         f"the shipped one ({rules.digest}); give its file with --rules FILE")
    return rules


def _shipped(name: str, digest: str) -> bool:
    return name in builtin_names() and rule_set(name).digest == digest


def check_rules(graph: Graph, view: PlanView, rules: RuleSet, log: ViolationLog) -> None:
    """A `rule` violation for every constraint the plan's logical streams break."""
    streams = dict(zip(view.nodes.names, view.nodes.streams, strict=True))
    placement = Placement(streams, view.attached)
    for problem in broken(rule_constraints(rules, graph), graph, placement):
        rule = rules.rule(problem.rule)
        log.add("rule", f"rule {rule.name!r} ({rule.kind}, rule set {rules.name!r}) does not "
                f"hold: {problem.message}")
