"""Graph-scope user policies: same-stream, separate-streams, dedicated-stream.

They run where their priority puts them in the chain, on node streams (so after
node-stream-update), taking fresh ids from the counter like GE's own passes do.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Self

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule
from streamalloc.rules.predicates import NodePredicate


def _groups(rule: Rule, group_by: str | None, ctx: GraphContext,
            plan: GraphPlan) -> dict[object, list[str]]:
    """Matched nodes with a stream, grouped by the `group_by` attribute value (G-order)."""
    groups: dict[object, list[str]] = defaultdict(list)
    for node in ctx.nodes:
        if rule.matches(node) and plan.streams[node.name] != INVALID:
            if group_by is None:
                groups[None].append(node.name)
            elif node.has_attr(group_by):
                groups[repr(node.attr(group_by))].append(node.name)
    return groups


@dataclass(frozen=True, slots=True)
class _Grouped(RulePass):
    """A policy over groups of matched nodes; option `group_by`: an attribute whose values
    group them (None: the policy's default grouping)."""

    group_by: str | None = None

    @classmethod
    def from_rule(cls, rule: Rule) -> Self:
        """The pass with the rule's `group_by` option."""
        value = rule.options.get("group_by")
        return cls(rule, None if value is None else str(value))


class SameStream(_Grouped):
    """same-stream: one stream per `group_by` value (None: one for all matched nodes)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Each group joins the stream of its first node."""
        changes: dict[str, tuple[int, Note]] = {}
        for names in _groups(self.rule, self.group_by, ctx, plan).values():
            stream = plan.streams[names[0]]
            note = Note(self.name, stream, f"shares the stream of {names[0]!r}")
            changes.update((n, (stream, note)) for n in names[1:] if plan.streams[n] != stream)
        return outcome(plan, plan.set_nodes(changes))


class DedicatedStream(_Grouped):
    """dedicated-stream: one stream per `group_by` value (None: one per matched node)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Each matched node (or group) gets a fresh stream that nothing else uses."""
        groups = _groups(self.rule, self.group_by, ctx, plan)
        units = list(groups.values()) if self.group_by else \
            [[n] for names in groups.values() for n in names]
        new = plan
        changes: dict[str, tuple[int, Note]] = {}
        for names in units:
            new, (stream,) = new.take_streams()
            note = Note(self.name, stream, "dedicated stream")
            changes.update((n, (stream, note)) for n in names)
        return outcome(plan, new.set_nodes(changes))


@dataclass(frozen=True, slots=True)
class SeparateStreams(RulePass):
    """separate-streams; option `from` (compiled at load): the nodes to keep apart from."""

    others: NodePredicate

    @classmethod
    def from_rule(cls, rule: Rule) -> Self:
        """The pass with the rule's compiled `from` match."""
        return cls(rule, rule.option_match("from"))

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """On every stream holding both kinds, the matched nodes move to one new stream."""
        mine: dict[int, list[str]] = defaultdict(list)
        theirs: set[int] = set()
        for node in ctx.nodes:
            stream = plan.streams[node.name]
            if stream == INVALID:
                continue
            if self.rule.matches(node):
                mine[stream].append(node.name)
            elif self.others(node):
                theirs.add(stream)
        return outcome(plan, self._apart(plan, mine, theirs))

    def _apart(self, plan: GraphPlan, mine: dict[int, list[str]], theirs: set[int]) -> GraphPlan:
        changes: dict[str, tuple[int, Note]] = {}
        for stream in sorted(mine):
            if stream in theirs:
                plan, (new,) = plan.take_streams()
                note = Note(self.name, new, f"kept apart from the other nodes of stream {stream}")
                changes.update((n, (new, note)) for n in mine[stream])
        return plan.set_nodes(changes)

