"""Rules stated as constraints: what a constraint-solver allocator must honour.

Every rule kind is either a constraint family or a heuristic choice. A GE kind states only what
GE's whole chain still guarantees at the end (so the heuristic's own result always satisfies
the constraints of the rules it ran, and can warm-start a solver):
* `same-stream`, `stream-label`; `assign-by-label` (per graph and label, for nodes that no later
  GE pass moves: not independent without a user label, no `_parallel_group`, no fused
  AllReduce upstream when allreduce-parallel runs); `independent-stream` (labelled independent
  nodes per engine and label, same exclusions); `single-stream` (per graph, skip-engine nodes
  excluded, which GE may fold to no stream): **SameStream**;
* `separate-streams`: **DifferentStreams**;
* `dedicated-stream`: **DedicatedStream**;
* `pin-stream`, `dynamic-renumber` (forced main stream): **PinnedStream**.
The other kinds (`assign-by-dependency`, `parallel-group`, `optimize-ineffective`,
`skipped-engine`, `allreduce-parallel`, `mde-group`, `node-stream-update`, `compact`,
`attached-streams`, `mini-dag`, the dynamic engine streams and GE's label steps) decide *which*
of the allowed allocations GE picks; they constrain nothing, and a solver's objective replaces
them. Constraints concern nodes that issue tasks: data-like sources are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from streamalloc.ir.clusters import is_data_like
from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.labels import NodeLabels
from streamalloc.rules import labelling
from streamalloc.rules.model import Rule, RuleSet
from streamalloc.rules.predicates import compile_match


@dataclass(frozen=True, slots=True)
class SameStream:
    """All `nodes` on one stream."""

    rule: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DifferentStreams:
    """No node of `first` shares a stream with a node of `second`."""

    rule: str
    first: tuple[str, ...]
    second: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DedicatedStream:
    """`nodes` share one stream that no other node uses."""

    rule: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PinnedStream:
    """`nodes` on logical stream `stream`."""

    rule: str
    nodes: tuple[str, ...]
    stream: int


Constraint = SameStream | DifferentStreams | DedicatedStream | PinnedStream


def _tasks(graph: Graph) -> Iterator[Node]:
    """Nodes that get a stream (data-like sources excluded)."""
    for node in graph.all_nodes():
        if not is_data_like(node):
            yield node


def rule_constraints(rules: RuleSet, graph: Graph) -> list[Constraint]:
    """The constraints of every enabled rule of `rules` on `graph`."""
    enabled = [r for r in rules.rules if r.enabled(graph.options)]
    labels: Mapping[str, NodeLabels] = labelling.initial_labels(graph)
    for rule in enabled:
        if rule.spec.scope == "label":
            labels = labelling.apply(rule, graph, labels)
    nodes = list(_tasks(graph))
    movable = _moved_later(enabled, graph, nodes, labels)
    result: list[Constraint] = []
    for rule in enabled:
        result += _of_rule(rule, graph, nodes, (labels, movable))
    return result


def _moved_later(rules: list[Rule], graph: Graph, nodes: list[Node],
                 labels: Mapping[str, NodeLabels]) -> set[str]:
    """Labelled nodes that parallel-group or allreduce-parallel may take off their label stream."""
    moved = {n.name for n in nodes if n.has_attr("_parallel_group")}
    for rule in (r for r in rules if r.kind == "allreduce-parallel"):
        sources = [n for n in nodes if rule.matches(n)]
        moved |= _data_descendants(graph, [s.name for s in sources])
    return moved


def _data_descendants(graph: Graph, sources: list[str]) -> set[str]:
    found: set[str] = set()
    stack = list(sources)
    while stack:
        node = graph.node(stack.pop())
        for consumer in graph.graph(node.graph).consumers.get(node.name, ()):
            if consumer.node not in found:
                found.add(consumer.node)
                stack.append(consumer.node)
    return found


def _of_rule(rule: Rule, graph: Graph, nodes: list[Node],
             context: tuple[Mapping[str, NodeLabels], set[str]]) -> list[Constraint]:
    labels, movable = context
    matched = [n for n in nodes if rule.matches(n)]
    if rule.kind in ("same-stream", "stream-label"):
        key = None if rule.kind == "stream-label" else rule.options.get("group_by")
        return [SameStream(rule.name, g) for g in _grouped(matched, key) if len(g) > 1]
    if rule.kind in ("assign-by-label", "independent-stream"):
        stable = [n for n in matched if n.name not in movable]
        return _label_groups(rule, graph, stable, labels)
    if rule.kind == "single-stream":
        kept = [n for n in matched if not graph.engines.engines[n.engine].skip_assign_stream]
        return [SameStream(rule.name, g) for g in _by_graph(kept) if len(g) > 1]
    if rule.kind == "separate-streams":
        others = compile_match(rule.options["from"])
        second = tuple(n.name for n in nodes if others(n) and not rule.matches(n))
        return [DifferentStreams(rule.name, tuple(n.name for n in matched), second)]
    if rule.kind == "dedicated-stream":
        key = rule.options.get("group_by")
        groups = _grouped(matched, key) if key else [(n.name,) for n in matched]
        return [DedicatedStream(rule.name, g) for g in groups]
    if rule.kind in ("pin-stream", "dynamic-renumber"):
        stream = int(rule.options.get("stream", 0))
        return [PinnedStream(rule.name, tuple(n.name for n in matched), stream)] if matched \
            else []
    return []


def _grouped(nodes: list[Node], key: str | None) -> list[tuple[str, ...]]:
    groups: dict[object, list[str]] = defaultdict(list)
    for node in nodes:
        if key is None:
            groups[None].append(node.name)
        elif node.has_attr(key):
            groups[(node.graph, repr(node.attr(key)))].append(node.name)
    return [tuple(g) for g in groups.values()]


def _by_graph(nodes: list[Node]) -> list[tuple[str, ...]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        groups[node.graph].append(node.name)
    return [tuple(g) for g in groups.values()]


def _label_groups(rule: Rule, graph: Graph, nodes: list[Node],
                  labels: Mapping[str, NodeLabels]) -> list[Constraint]:
    """Label streams (assign-by-label) or labelled independent streams (independent-stream)."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for node in nodes:
        tags = labels[node.name]
        split = graph.engines.engines[node.engine].independent and not tags.user_stream_label
        if not tags.stream_label or split != (rule.kind == "independent-stream"):
            continue
        engine = node.engine if split else ""
        groups[(node.graph, engine, tags.stream_label)].append(node.name)
    return [SameStream(rule.name, tuple(g)) for g in groups.values() if len(g) > 1]
