"""Rules and rule sets as loaded: immutable, ordered, with compiled predicates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from streamalloc.ir.graph import Node
from streamalloc.rules.kinds import KINDS, KindSpec
from streamalloc.rules.predicates import NodePredicate, OptionPredicate


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: a kind from the vocabulary, its match and gating predicates, options, origin."""

    name: str
    kind: str
    priority: int
    match: NodePredicate
    when: OptionPredicate
    options: Mapping[str, Any] = field(default_factory=_empty)
    match_block: Mapping[str, Any] = field(default_factory=_empty)
    when_block: Mapping[str, Any] = field(default_factory=_empty)
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    description: str = ""
    origin: str = ""

    @property
    def spec(self) -> KindSpec:
        """The kind's entry in the vocabulary."""
        return KINDS[self.kind]

    def matches(self, node: Node) -> bool:
        """Does the rule apply to `node`?"""
        return self.match(node)

    def enabled(self, options: Mapping[str, str]) -> bool:
        """Does the `when:` gate hold for these graph options?"""
        return self.when(options)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Rules in execution order (after/before constraints, then (priority, name))."""

    name: str
    flow: str
    rules: tuple[Rule, ...]
    source: str = ""

    def by_scope(self, scope: str) -> tuple[Rule, ...]:
        """The rules of one scope (label, graph, model), in order."""
        return tuple(r for r in self.rules if r.spec.scope == scope)

    def rule(self, name: str) -> Rule:
        """The rule called `name`."""
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise KeyError(name)
