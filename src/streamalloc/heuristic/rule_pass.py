"""The shape of every heuristic pass: a frozen dataclass made from one rule.

Every rule kind has one pass class (`registry.py` is the table). Its `name` is the rule's name
(so `--print-after` takes the names of `rules list`), its typed options are dataclass fields
read from the rule's `options:` by `from_rule`, and `apply(ctx, plan)` returns a `PassResult`
(`streamalloc.passes`): label passes map stream labels, graph passes one graph's
`GraphPlan` (run per graph), model passes the `ModelPlan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from streamalloc.heuristic.context import GraphContext, ModelContext
from streamalloc.heuristic.plan import GraphPlan, ModelPlan
from streamalloc.ir.graph import Graph
from streamalloc.ir.labels import NodeLabels
from streamalloc.passes import Pass
from streamalloc.rules.model import Rule

Labels = Mapping[str, NodeLabels]
LabelPass = Pass[Graph, Labels]
GraphPass = Pass[GraphContext, GraphPlan]
ModelPass = Pass[ModelContext, ModelPlan]


@dataclass(frozen=True, slots=True)
class RulePass:
    """A pass made from `rule`: named after it; subclasses add their typed options (as a
    frozen dataclass). A subclass without options declares `__slots__ = ()` instead: it
    inherits these methods, and the decorator would generate them again at import."""

    rule: Rule

    @property
    def name(self) -> str:
        """The rule's name."""
        return self.rule.name

    @classmethod
    def from_rule(cls, rule: Rule) -> Self:
        """The pass of `rule`; a kind with options reads them here."""
        return cls(rule)
