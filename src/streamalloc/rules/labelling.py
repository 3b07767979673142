"""Label-scope rules: stream labels as they stand before GE's engine partitioning (used by both
allocators).

GE's own steps (`cmo-label`, `user-stream-label`, spec 1.5) and the user policy `stream-label`
(matched nodes get a label, so the partition and AssignByLabel put them on one stream).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from types import MappingProxyType

from msgspec.structs import replace

from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.labels import NO_LABELS, NodeLabels, cmo_label, raw_labels, transfer_user_label
from streamalloc.mappings import own_dict
from streamalloc.rules.loader import default_rule_set
from streamalloc.rules.model import Rule, RuleSet

LABEL_KINDS = frozenset({"cmo-label", "user-stream-label", "stream-label"})


def initial_labels(graph: Graph) -> Mapping[str, NodeLabels]:
    """Every node's labels from its own attributes."""
    nodes = graph.t_ordered_nodes()
    # most nodes have none; without subgraphs T-order is the root's index order (made from a
    # dict without reading a node)
    # (a dict copy of the index: `fromkeys` presizes from a dict, and reuses its hashes)
    names = own_dict(graph.root.index) if not graph.subgraphs else map(attrgetter("name"), nodes)
    labels = dict.fromkeys(names, NO_LABELS)
    labels.update({n.name: raw_labels(n) for n in nodes if n.attrs})  # labels are attributes
    return MappingProxyType(labels)


def apply(rule: Rule, graph: Graph, labels: Mapping[str, NodeLabels]) -> Mapping[str, NodeLabels]:
    """New labels after one label rule (`labels` itself when the rule changes none)."""
    changed = {}
    for node in rule.matching(graph.all_nodes()):  # label rules match few nodes
        current = labels[node.name]
        new = _relabel(rule, node, current)
        if new != current:
            changed[node.name] = new
    if not changed:
        return labels
    merged = own_dict(labels)
    merged.update(changed)
    return MappingProxyType(merged)


def _relabel(rule: Rule, node: Node, current: NodeLabels) -> NodeLabels:
    if rule.kind == "cmo-label":
        return cmo_label(node, current)
    if rule.kind == "user-stream-label":
        return transfer_user_label(node, current)
    label = str(rule.options["label"])
    user = label if rule.options.get("user") else current.user_stream_label
    return replace(current, stream_label=label, user_stream_label=user, present=True)


def rule_labels(rules: RuleSet, graph: Graph
                ) -> tuple[Mapping[str, NodeLabels], dict[str, list[tuple[Rule, NodeLabels]]]]:
    """Labels after the enabled label rules of `rules`, and per node the rules that changed its
    labels (in order, with the labels each gave)."""
    labels: Mapping[str, NodeLabels] = initial_labels(graph)
    changes: dict[str, list[tuple[Rule, NodeLabels]]] = {}
    for rule in rules.rules:
        if rule.kind in LABEL_KINDS and rule.enabled(graph.options):
            new = apply(rule, graph, labels)
            for name, value in new.items() if new is not labels else ():
                if value != labels[name]:
                    changes.setdefault(name, []).append((rule, value))
            labels = new
    return labels, changes


def default_labels(graph: Graph) -> Mapping[str, NodeLabels]:
    """GE's labels: those of the shipped rule set GE would use for the graph."""
    return rule_labels(default_rule_set(graph), graph)[0]
