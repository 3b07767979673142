"""Rules and rule sets as loaded: immutable, ordered, with compiled predicates."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import Any

import msgspec

from streamalloc.ir.graph import Node
from streamalloc.rules.kinds import KINDS, KindSpec
from streamalloc.rules.predicates import NodePredicate, OptionPredicate, needs_attrs

_ATTRS = attrgetter("attrs")

# the order the scopes run in (label rules before GE's partition, model rules at the end)
SCOPE_RANK = {"label": 0, "graph": 1, "model": 2}
FREE = "free"  # the shipped rule set that declares no rules (for the optimal mode)


def builtin_source(name: str) -> str:
    """The `source` of shipped rule set `name` (its rules' origins start with it)."""
    return f"<builtin {name}>"


SHIPPED_PREFIX = builtin_source("")[:-1]


def _canonical(rule: Rule) -> dict[str, Any]:
    return {"name": rule.name, "kind": rule.kind, "priority": rule.priority,
            "match": rule.match_block, "when": rule.when_block, "options": rule.options,
            "after": list(rule.after), "before": list(rule.before)}


def _plain(value: Any) -> Any:
    """Read-only mappings (and tuples inside them) as JSON sees them."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"not JSON: {value!r}")


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


class Rule(msgspec.Struct, frozen=True):
    """One rule: a kind from the vocabulary, its match and gating predicates, options, origin."""

    name: str
    kind: str
    priority: int
    match: NodePredicate
    when: OptionPredicate
    options: Mapping[str, Any] = msgspec.field(default_factory=_empty)
    # match-valued options (e.g. separate-streams' `from`), compiled at load like `match`
    option_matches: Mapping[str, NodePredicate] = msgspec.field(default_factory=_empty)
    match_block: Mapping[str, Any] = msgspec.field(default_factory=_empty)
    when_block: Mapping[str, Any] = msgspec.field(default_factory=_empty)
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

    def matching(self, nodes: Iterable[Node]) -> Iterator[Node]:
        """The nodes of `nodes` the rule applies to, in order. When its match needs an
        attribute, only nodes with attributes are tested (most nodes carry none)."""
        if needs_attrs(self.match_block):
            nodes = filter(_ATTRS, nodes)
        return filter(self.match, nodes)

    def option_match(self, key: str) -> NodePredicate:
        """The compiled predicate of a match-valued option."""
        return self.option_matches[key]

    def enabled(self, options: Mapping[str, str]) -> bool:
        """Does the `when:` gate hold for these graph options?"""
        return self.when(options)

    @property
    def shipped(self) -> bool:
        """Is it a rule of a shipped rule set (GE's), not of a user's file?"""
        return self.origin.startswith(SHIPPED_PREFIX)


class RuleSet(msgspec.Struct, frozen=True):
    """Rules in execution order (after/before constraints, then (priority, name)).
    `on_free`: the file's `extends` chain ends at the shipped `free`: its rules alone bind
    the optimal mode, and ge mode runs them over GE's default rule set (`ge_rules_for`)."""

    name: str
    flow: str
    rules: tuple[Rule, ...]
    source: str = ""
    on_free: bool = False
    disabled: tuple[str, ...] = ()  # GE's rules a set built on `free` disables (in ge mode)
    over_ge: bool = False  # a set built on `free` with GE's default rules added
    # (`ge_rules_for`): what ge mode runs for it; its digest is the twin file's

    @property
    def is_free(self) -> bool:
        """The shipped `free` (or a file like it): no rules, built on nothing (a file named
        `free` with rules of its own is not)."""
        return self.name == FREE and not self.rules and not self.on_free

    @property
    def binds_optimal_only(self) -> bool:
        """`free`, or a set built on it: no GE rule binds the optimal mode."""
        return self.on_free or self.is_free

    def gate_options(self) -> frozenset[str]:
        """The graph options the rules' `when:` gates read (options the tool then reads)."""
        found: set[str] = set()

        def walk(block: object) -> None:
            if isinstance(block, Mapping):
                if isinstance(block.get("option"), str):
                    found.add(block["option"])
                for value in block.values():
                    walk(value)
            elif isinstance(block, list | tuple):
                for value in block:
                    walk(value)
        for rule in self.rules:
            walk(rule.when_block)
        return frozenset(found)

    def canonical_text(self) -> str:
        """The rule set as it runs (rules in order, inherited ones included): sorted JSON."""
        built_on = {"extends": FREE, "disable": list(self.disabled)} if self.on_free else {}
        # (it runs otherwise)
        return json.dumps({"format": "streamalloc.rules/v1", "name": self.name, "flow": self.flow,
                           "rules": [_canonical(r) for r in self.rules], **built_on},
                          indent=1, sort_keys=True, default=_plain) + "\n"

    @property
    def digest(self) -> str:
        """`sha256:` + the hex digest of the canonical text (a plan records it)."""
        return "sha256:" + hashlib.sha256(self.canonical_text().encode()).hexdigest()

    def run_order(self) -> dict[str, int]:
        """Rule name -> its position in the order the heuristic runs the rules: label rules,
        then graph rules, then model rules, each in rule order (so a model rule such as
        `pin-stream` at priority 0 still runs after every graph rule)."""
        ranked = sorted(range(len(self.rules)),
                        key=lambda i: (SCOPE_RANK[self.rules[i].spec.scope], i))
        return {self.rules[i].name: position for position, i in enumerate(ranked)}

    def rule(self, name: str) -> Rule:
        """The rule called `name`."""
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise KeyError(name)
