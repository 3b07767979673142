"""AssignAttachedStreamPass (spec 5): extra ("attached") streams for nodes that ask for them.

Runs after compaction; ids continue from the counter. One fresh instance per graph (root, then
subgraphs in R-order), so reuse keys never match across graphs. Requests are bucketed
group -> (key, count) -> nodes; keys ascending get consecutive ids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from types import MappingProxyType

from streamalloc.errors import InputError
from streamalloc.heuristic.allocate_dynamic import dynamic_graphs
from streamalloc.heuristic.plan import ModelPlan
from streamalloc.ir.attrs import NamedAttrs
from streamalloc.ir.graph import Graph, Node
from streamalloc.rules.model import Rule

V2_LIST = "_attached_stream_info_list"
V2_SYNC_LIST = "_attached_sync_res_info_list"
LEGACY = "_attached_stream_info"
DISABLE = "_disable_attached_resource"
DEFAULT_GROUP = "_default_stream_info_group"

Request = tuple[str, str, int]  # (group, key, count)


def apply(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    """Assign per graph in the order the per-graph stage ran (root, then R-order)."""
    attached = dict(plan.attached)
    next_stream = plan.next_stream
    # dynamic flow: per root and unknown-shape subgraph; known-shape ones are built on their own
    names = dynamic_graphs(graph) if graph.dynamic_shape else list(plan.graphs)
    for graph_name in names:
        graph_plan = plan.graphs[graph_name]
        buckets: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(
            lambda: defaultdict(list))
        for node in graph.graph(graph_name).nodes:
            if rule.matches(node) and not node.has_attr(DISABLE):
                for group, key, count in requests(graph, node, graph_plan.streams[node.name]):
                    buckets[group][(key, count)].append(node.name)
        # [hash order] GE keeps group names in an unordered map; we sort them (spec 5.2).
        for group in sorted(buckets):
            for key, count in sorted(buckets[group]):
                for name in buckets[group][(key, count)]:
                    attached[name] = (*attached.get(name, ()), next_stream)
                next_stream += count
    return replace(plan, attached=MappingProxyType(attached), next_stream=next_stream)


def requests(graph: Graph, node: Node, main_stream: int) -> Iterator[Request]:
    """The attached-stream requests of one node (v2 list, else the legacy forms)."""
    if node.has_attr(V2_LIST) or node.has_attr(V2_SYNC_LIST):
        for entry in _entries(graph, node, V2_LIST):
            yield from _v2(graph, node, entry, main_stream)
        return
    value = node.attrs.get(LEGACY)
    if value is None:
        return
    if value.kind == "named_attrs":
        yield _legacy_single(graph, node, value.value)
    else:
        for entry in _entries(graph, node, LEGACY):
            key = _text(entry, "_attached_stream_key")
            yield DEFAULT_GROUP, f"{key}_stream_{main_stream}", 1


def _entries(graph: Graph, node: Node, key: str) -> list[NamedAttrs]:
    value = node.attrs.get(key)
    if value is None:
        return []
    if value.kind not in ("list_named_attrs", "list_none"):
        raise InputError(f"{graph.source}: node {node.name!r} attribute {key} must be a list of "
                         f"named attributes, found {value.kind}")
    return list(value.value)


def _text(entry: NamedAttrs, key: str, default: str = "") -> str:
    value = entry.attrs.get(key)
    return default if value is None else str(value.value)


def _flag(entry: NamedAttrs, key: str) -> bool:
    value = entry.attrs.get(key)
    return bool(value.value) if value is not None else False


def _v2(graph: Graph, node: Node, entry: NamedAttrs, main_stream: int) -> Iterator[Request]:
    name = _text(entry, "_attached_resource_name")
    if not name:
        raise InputError(f"{graph.source}: node {node.name!r}: an {V2_LIST} entry has no "
                         "_attached_resource_name (GE requires it)")
    if not _flag(entry, "_attached_resource_required_flag"):
        return  # not required: GE assigns nothing
    key = _text(entry, "_attached_resource_reuse_key") + name
    if not _flag(entry, "_attached_resource_force_reuse"):
        key += f"_stream_{main_stream}"
    yield DEFAULT_GROUP, key, 1


def _legacy_single(graph: Graph, node: Node, entry: NamedAttrs) -> Request:
    policy = _text(entry, "_attached_stream_policy")
    group = node.attr("group")
    if policy != "group" or not isinstance(group, str):
        raise InputError(f"{graph.source}: node {node.name!r}: legacy {LEGACY} needs "
                         "_attached_stream_policy 'group' and a string attribute 'group' on the "
                         f"node (found policy {policy!r}, group {group!r})")
    return group, _text(entry, "_attached_stream_key"), 1
