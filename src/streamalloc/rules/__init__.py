"""Allocation policies declared in YAML: the rule vocabulary, schema, loader and predicates."""

from streamalloc.rules.loader import (
    builtin_names,
    builtin_rules,
    default_rule_set,
    ge_rules_for,
    load_rules,
    rule_set,
)
from streamalloc.rules.model import FREE, Rule, RuleSet

__all__ = ["FREE", "Rule", "RuleSet", "builtin_names", "builtin_rules", "default_rule_set",
           "ge_rules_for", "load_rules", "rule_set"]
