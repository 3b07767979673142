"""Attached streams and attached sync resources as GE reads them from node attributes.

A node may ask for extra ("attached") streams (logical-streams spec 5.1): the v2 list
`_attached_stream_info_list`, or the legacy `_attached_stream_info` (one named-attrs with a
group, or a list). Requests are (group, key, count); keys carry the main stream id unless the
entry forces reuse; `attached_streams` assigns them (5.2), for every allocator. The same
attributes say which inputs the attached work depends on (sync spec 2.6,
`dependency_inputs`), and `_attached_sync_res_info_list` (legacy `_attached_sync_res_info`,
`_attached_notify_info`) the event and notify ids a kernel reserves for itself (sync spec 4.5,
`sync_resources`, numbered by `resource_ids`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import attrgetter

from streamalloc.errors import InputError
from streamalloc.ir.attrs import NamedAttrs
from streamalloc.ir.graph import Graph, Node
from streamalloc.recent import Recent

_ATTRS = attrgetter("attrs")
_RESOURCE_IDS: Recent[tuple[dict[str, tuple[int, ...]], int]] = Recent(8)

V2_LIST = "_attached_stream_info_list"
V2_SYNC_LIST = "_attached_sync_res_info_list"
LEGACY = "_attached_stream_info"
LEGACY_SYNC = "_attached_sync_res_info"
LEGACY_NOTIFY = "_attached_notify_info"
DISABLE = "_disable_attached_resource"
DEFAULT_GROUP = "_default_stream_info_group"
DEPEND_V2 = "_attached_resource_depend_value_list_int"
DEPEND_LEGACY = "_attached_stream_depend_value_list"
RESOURCE_TYPE = "_attached_resource_type"  # "event" or "notify"

Request = tuple[str, str, int]  # (group, key, count)


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


def attached_streams(graph: Graph, streams: Mapping[str, int], graph_names: Iterable[str],
                     next_stream: int, matches: Callable[[Node], bool] = lambda _: True
                     ) -> tuple[dict[str, tuple[int, ...]], int]:
    """AssignAttachedStreamPass (logical-streams 5.2): per graph of `graph_names` (a fresh
    bucketing per graph, so reuse keys never match across graphs), requests grouped
    group -> (key, count) -> nodes, keys ascending, get consecutive ids from `next_stream`.
    Returns each requesting node's attached streams and the next free id. `streams` are the
    nodes' main streams (a key carries its node's main stream)."""
    attached: dict[str, tuple[int, ...]] = {}
    for graph_name in graph_names:
        buckets: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(
            lambda: defaultdict(list))
        # requests are attributes: the nodes without any (most) are not looked at
        for node in filter(_ATTRS, graph.graph(graph_name).nodes):
            if matches(node) and not node.has_attr(DISABLE):
                for group, key, count in requests(graph, node, streams[node.name]):
                    buckets[group][(key, count)].append(node.name)
        # [hash order] GE keeps group names in an unordered map; we sort them (spec 5.2).
        for group in sorted(buckets):
            for key, count in sorted(buckets[group]):
                for name in buckets[group][(key, count)]:
                    attached[name] = (*attached.get(name, ()), next_stream)
                next_stream += count
    return attached, next_stream


def has_attached_info(node: Node) -> bool:
    """The node declares attached streams (either form): sync spec 2.6 looks at it."""
    return node.has_attr(V2_LIST) or node.has_attr(LEGACY)


def dependency_inputs(graph: Graph, node: Node) -> tuple[int, ...]:
    """The IR input indices the work on the node's attached stream depends on (sync spec
    2.6): `_attached_resource_depend_value_list_int` of each v2 entry, else the comma list
    `_attached_stream_depend_value_list` of each legacy entry."""
    if node.has_attr(V2_LIST):
        found: list[int] = []
        for entry in _entries(graph, node, V2_LIST):
            value = entry.attrs.get(DEPEND_V2)
            found += [int(i) for i in value.value] if value is not None else []
        return tuple(found)
    value = node.attrs.get(LEGACY)
    entries = () if value is None else (value.value,) if value.kind == "named_attrs" else \
        tuple(_entries(graph, node, LEGACY))
    return tuple(i for entry in entries for i in _comma_ints(graph, node, entry))


def _comma_ints(graph: Graph, node: Node, entry: NamedAttrs) -> list[int]:
    text = _text(entry, DEPEND_LEGACY)
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"{graph.source}: node {node.name!r}: {DEPEND_LEGACY} {text!r} is not a "
                         "comma list of input indices") from None


def sync_resources(graph: Graph, node: Node, kind: str) -> list[tuple[str, str, int]]:
    """The attached sync resources (event or notify ids a kernel reserves, sync spec 4.5) of
    one node: (group, key, count). v2 (`_attached_stream_info_list` or the sync-resource
    list present): each required entry of `_attached_sync_res_info_list` of that type, key
    usage name + reuse key (an empty reuse key shares with nothing: the node and entry make
    it unique); legacy: each `_attached_sync_res_info` entry of type "event" (key
    `_attached_sync_res_key`, default `<node>_attr_<k>`), for notifies one
    `_attached_notify_info` with policy "group" (`_attached_notify_num` ids, default 1)."""
    if not node.attrs or node.has_attr(DISABLE):  # most nodes have no attributes at all
        return []
    if node.has_attr(V2_LIST) or node.has_attr(V2_SYNC_LIST):
        return [(DEFAULT_GROUP, _resource_key(node, k, entry), 1)
                for k, entry in enumerate(_entries(graph, node, V2_SYNC_LIST))
                if _text(entry, RESOURCE_TYPE).lower() == kind
                and _flag(entry, "_attached_resource_required_flag")]
    if kind == "event":
        return [(DEFAULT_GROUP, _text(entry, "_attached_sync_res_key", f"{node.name}_attr_{k}")
                 or f"{node.name}_attr_{k}", 1)
                for k, entry in enumerate(_entries(graph, node, LEGACY_SYNC))
                if _text(entry, "_attached_sync_res_type") == "event"]
    return _legacy_notify(graph, node)


def _resource_key(node: Node, k: int, entry: NamedAttrs) -> str:
    reuse = _text(entry, "_attached_resource_reuse_key")
    unique = reuse or f"\0{node.name}\0{k}"  # no reuse key: shared with nothing
    return _text(entry, "_attached_resource_name") + unique


def _legacy_notify(graph: Graph, node: Node) -> list[tuple[str, str, int]]:
    value = node.attrs.get(LEGACY_NOTIFY)
    if value is None or value.kind != "named_attrs":
        return []
    entry = value.value
    if _text(entry, "_attached_notify_policy") != "group":
        return []
    group = node.attr("group")
    count = entry.attrs.get("_attached_notify_num")
    return [(str(group) if group is not None else DEFAULT_GROUP,
             _text(entry, "_attached_notify_key") + _text(entry, "_attached_notify_type"),
             int(count.value) if count is not None else 1)]


def resource_ids(graph: Graph, kind: str, start: int) -> tuple[dict[str, tuple[int, ...]], int]:
    """Sync spec 4.5 for one id space: per graph (root, then R-order; the event pass skips
    unknown-shape subgraphs), per group, each distinct (key, count) in key order gets `count`
    consecutive ids from `start`, shared by the nodes asking for it. Returns node -> its ids
    and the next free id. The ids from 0 are found once per graph (a search synchronizes one
    graph hundreds of times; they do not depend on the node order or the options, which the
    graphs sharing its nodes change) and shifted to `start`."""
    ids, count = _RESOURCE_IDS.get_or_make((id(graph.by_name), kind), (graph.by_name,),
                                           lambda: _resource_ids(graph, kind))
    return {name: tuple(i + start for i in own) for name, own in ids.items()}, start + count


def _resource_ids(graph: Graph, kind: str) -> tuple[dict[str, tuple[int, ...]], int]:
    """`resource_ids` from 0."""
    ids: dict[str, tuple[int, ...]] = {}
    start = 0
    for compute in [graph.root, *(graph.subgraphs[s] for s in graph.r_order())]:
        if kind == "event" and compute.parent is not None and graph.unknown_shape(compute):
            continue
        buckets: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(
            lambda: defaultdict(list))
        for node in compute.nodes:
            if not node.attrs:  # most nodes: no attributes, no resources (no call for them)
                continue
            for group, key, count in sync_resources(graph, node, kind):
                buckets[group][(key, count)].append(node.name)
        # [hash order] GE iterates groups in hash order: the ids' order, not their count
        for group in sorted(buckets):
            for (_, count), names in sorted(buckets[group].items()):
                for name in names:
                    ids[name] = (*ids.get(name, ()), *range(start, start + count))
                start += count
    return ids, start
