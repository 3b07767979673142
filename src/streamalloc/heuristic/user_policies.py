"""Graph-scope user policies: same-stream, separate-streams, dedicated-stream.

They run where their priority puts them in the chain, on node streams (so after
node-stream-update), taking fresh ids from the counter like GE's own passes do.
"""

from __future__ import annotations

from collections import defaultdict

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.ir.graph import Node
from streamalloc.rules.model import Rule


def _groups(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> dict[object, list[str]]:
    """Matched nodes with a stream, grouped by the `group_by` attribute value (G-order)."""
    key = rule.options.get("group_by")
    groups: dict[object, list[str]] = defaultdict(list)
    for node in ctx.nodes:
        if rule.matches(node) and plan.streams[node.name] != INVALID:
            if key is None:
                groups[None].append(node.name)
            elif node.has_attr(key):
                groups[repr(node.attr(key))].append(node.name)
    return groups


def same_stream(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    """Each group joins the stream of its first node."""
    changes: dict[str, tuple[int, Note]] = {}
    for names in _groups(rule, ctx, plan).values():
        stream = plan.streams[names[0]]
        note = Note(rule.name, stream, f"shares the stream of {names[0]!r}")
        changes.update((n, (stream, note)) for n in names[1:] if plan.streams[n] != stream)
    return plan.set_nodes(changes)


def dedicated_stream(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    """Each matched node (or group) gets a fresh stream that nothing else uses."""
    key = rule.options.get("group_by")
    groups = _groups(rule, ctx, plan)
    units = list(groups.values()) if key else [[n] for names in groups.values() for n in names]
    changes: dict[str, tuple[int, Note]] = {}
    for names in units:
        plan, (stream,) = plan.take_streams()
        note = Note(rule.name, stream, "dedicated stream")
        changes.update((n, (stream, note)) for n in names)
    return plan.set_nodes(changes)


def separate_streams(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    """On every stream holding both kinds, the matched nodes move to one new stream."""
    others = rule.option_match("from")
    mine: dict[int, list[str]] = defaultdict(list)
    theirs: set[int] = set()
    for node in ctx.nodes:
        stream = plan.streams[node.name]
        if stream == INVALID:
            continue
        if rule.matches(node):
            mine[stream].append(node.name)
        elif others(node):
            theirs.add(stream)
    changes: dict[str, tuple[int, Note]] = {}
    for stream in sorted(mine):
        if stream in theirs:
            plan, (new,) = plan.take_streams()
            note = Note(rule.name, new, f"kept apart from the other nodes of stream {stream}")
            changes.update((n, (new, note)) for n in mine[stream])
    return plan.set_nodes(changes)


def node_names(ctx: GraphContext, rule: Rule) -> list[Node]:
    """The graph's nodes the rule matches (for constraints and tests)."""
    return [n for n in ctx.nodes if rule.matches(n)]
