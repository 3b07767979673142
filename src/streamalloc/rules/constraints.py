"""Rules as constraints: what every allocator must honour, one form per rule kind.

Each kind declares its constraint in prose once (`KindSpec.constraint`, listed in the docs) and
here as a builder in `FORMS`; the coverage check below fails at import when a kind has no
entry, and a kind whose text says "none" must map to None. A GE kind's form states exactly what
GE's whole chain still guarantees at the end, per graph as GE's passes act per graph, so the
heuristic's result satisfies the constraints of the rules it ran and can warm-start a solver.

Constraints bind the nodes that have a stream in the allocation: data-like sources, and nodes
that GE folds to no stream, are free (`check` skips them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter

from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import GraphPartition
from streamalloc.recent import Recent
from streamalloc.rules.constraint_inputs import Inputs, RuleLabels
from streamalloc.rules.kinds import KINDS, NO_CONSTRAINT
from streamalloc.rules.model import Rule, RuleSet

_ATTRS = attrgetter("attrs")


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


@dataclass(frozen=True, slots=True)
class DisjointGroups:
    """No two of `groups` share a stream."""

    rule: str
    groups: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class StreamCap:
    """In graph `graph`, at most `cap` streams are opened by one of `nodes` (GE's per-engine
    stream limit, max_parallel_num, for `engine`). A stream's opener is its node of least
    `order` (then first in G-order; a node not in `order` ranks -1): the rank of the node's
    engine subgraph in a topological order of the graph's subgraphs (`Inputs.opening_orders`)."""

    rule: str
    graph: str
    engine: str
    nodes: tuple[str, ...]
    cap: int
    order: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    # `nodes` as a set, made once: the heuristic's check and the verifier test the openers
    members: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.nodes))


@dataclass(frozen=True, slots=True)
class AttachedStreams:
    """Each of `nodes` has attached streams, and none of them is a main stream."""

    rule: str
    nodes: tuple[str, ...]


Constraint = (SameStream | DifferentStreams | DedicatedStream | PinnedStream | DisjointGroups
              | StreamCap | AttachedStreams)
Builder = Callable[[Rule, Inputs], list[Constraint]]


def constraint_nodes(constraint: Constraint) -> list[str]:
    """The node names a constraint mentions (its node tuples, groups flattened)."""
    names: list[str] = []
    for part in fields(constraint):
        value = getattr(constraint, part.name)
        if isinstance(value, tuple):
            for item in value:
                names.extend(item if isinstance(item, tuple) else [item])
    return names


# The heuristic's self-check, the verifier and the solver ask for the same constraints of the
# same immutable graph in one run (`with_options` copies share its root and engine table).
_RECENT: Recent[tuple[Constraint, ...]] = Recent(4)


def rule_constraints(rules: RuleSet, graph: Graph,
                     partitions: Mapping[str, GraphPartition] | None = None,
                     labels: RuleLabels | None = None) -> list[Constraint]:
    """The constraints of every enabled rule of `rules` on `graph`, in rule order
    (`partitions`, `labels`: GE's partition and the rules' labels, when the caller has them)."""
    # the same structure under the same options (`with_options` shares root and engines)
    key = (rules.canonical_text(), id(graph.root), id(graph.engines),
           tuple(sorted(graph.options.items())))
    recent = _RECENT.get(key, graph.root, graph.engines)
    if recent is not None:
        return list(recent)
    inputs = Inputs.of(rules, graph, partitions, labels)
    result: list[Constraint] = []
    for rule in inputs.enabled:
        build = FORMS[rule.kind]
        if build is not None:
            result += build(rule, inputs)
    _RECENT.put(key, (graph.root, graph.engines), tuple(result))
    return result


def _label_rule(rule: Rule, inputs: Inputs) -> list[Constraint]:
    """Label groups that hold a node this label rule labelled."""
    return [SameStream(rule.name, g.nodes) for g in inputs.label_groups
            if rule.name in g.rules and len(g.nodes) > 1]


def _attribute_labels(rule: Rule, inputs: Inputs) -> list[Constraint]:
    """Label groups of attribute labels only, not split (assign-by-label) or split per
    independent engine (independent-stream)."""
    split = rule.kind == "independent-stream"
    return [SameStream(rule.name, g.nodes) for g in inputs.label_groups
            if not g.rules and g.independent == split and len(g.nodes) > 1]


def _engine_caps(rule: Rule, inputs: Inputs) -> list[Constraint]:
    if inputs.dag_active:
        return []
    return [StreamCap(rule.name, graph, engine, nodes, cap, inputs.opening_orders[graph])
            for (graph, engine), (nodes, cap) in inputs.dependency_nodes(rule).items()]


def _single_stream(rule: Rule, inputs: Inputs) -> list[Constraint]:
    kept = [n for n in rule.matching(inputs.tasks)
            if not inputs.engine(n).skip_assign_stream and not inputs.rts_label(n)]
    return [SameStream(rule.name, g) for g in _grouped(kept, None) if len(g) > 1]


def _parallel_groups(rule: Rule, inputs: Inputs) -> list[Constraint]:
    groups: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for node in filter(_ATTRS, inputs.tasks):  # the group is an attribute
        value = node.attr("_parallel_group")
        if value is not None and str(value) != "-1" and rule.matches(node) \
                and not inputs.engine(node).skip_assign_stream:
            groups[node.graph][str(value)].append(node.name)
    return [DisjointGroups(rule.name, tuple(tuple(g) for g in by_value.values()))
            for by_value in groups.values() if len(by_value) > 1]


def _same_stream(rule: Rule, inputs: Inputs) -> list[Constraint]:
    matched = list(rule.matching(inputs.tasks))
    return [SameStream(rule.name, g) for g in _grouped(matched, rule.options.get("group_by"))
            if len(g) > 1]


def _separate_streams(rule: Rule, inputs: Inputs) -> list[Constraint]:
    others = rule.option_match("from")
    mine: dict[str, list[str]] = defaultdict(list)
    theirs: dict[str, list[str]] = defaultdict(list)
    for node in inputs.tasks:
        if rule.matches(node):
            mine[node.graph].append(node.name)
        elif others(node):
            theirs[node.graph].append(node.name)
    return [DifferentStreams(rule.name, tuple(mine[g]), tuple(theirs[g]))
            for g in mine if theirs[g]]


def _dedicated_stream(rule: Rule, inputs: Inputs) -> list[Constraint]:
    matched = list(rule.matching(inputs.tasks))
    key = rule.options.get("group_by")
    groups = _grouped(matched, key) if key else [(n.name,) for n in matched]
    return [DedicatedStream(rule.name, g) for g in groups]


def _pinned(rule: Rule, inputs: Inputs) -> list[Constraint]:
    matched = tuple(n.name for n in rule.matching(inputs.tasks))
    return [PinnedStream(rule.name, matched, int(rule.options.get("stream", 0)))] if matched \
        else []


def _attached(rule: Rule, inputs: Inputs) -> list[Constraint]:
    # a node asks for attached streams by attributes: the others are not tested
    nodes = tuple(n.name for n in rule.matching(filter(_ATTRS, inputs.tasks))
                  if inputs.requests_attached(n))
    return [AttachedStreams(rule.name, nodes)] if nodes else []


def _grouped(nodes: Iterable[object], key: str | None) -> list[tuple[str, ...]]:
    """Per graph (GE's passes act per graph), and per `key` attribute value when given."""
    groups: dict[object, list[str]] = defaultdict(list)
    for node in nodes:
        if key is None:
            groups[node.graph].append(node.name)  # type: ignore[attr-defined]
        elif node.has_attr(key):  # type: ignore[attr-defined]
            groups[(node.graph, repr(node.attr(key)))].append(node.name)  # type: ignore
    return [tuple(g) for g in groups.values()]


FORMS: Mapping[str, Builder | None] = {
    "cmo-label": _label_rule,
    "user-stream-label": _label_rule,
    "stream-label": _label_rule,
    "mde-group": None,
    "assign-by-label": _attribute_labels,
    "independent-stream": _attribute_labels,
    "assign-by-dependency": _engine_caps,
    "single-stream": _single_stream,
    "node-stream-update": None,
    "parallel-group": _parallel_groups,
    "allreduce-parallel": None,
    "skipped-engine": None,
    "optimize-ineffective": None,
    "same-stream": _same_stream,
    "separate-streams": _separate_streams,
    "dedicated-stream": _dedicated_stream,
    "mini-dag": None,
    "compact": None,
    "pin-stream": _pinned,
    "attached-streams": _attached,
    "dynamic-engine-streams": None,
    "dynamic-renumber": _pinned,
}

assert set(FORMS) == set(KINDS), f"kinds without a constraint form: {set(KINDS) ^ set(FORMS)}"
assert all((FORMS[k] is None) == (spec.constraint == NO_CONSTRAINT)
           for k, spec in KINDS.items()), "a kind's constraint text and form disagree"
