"""Attached-stream requests as GE reads them from node attributes (logical-streams spec 5.1).

A node may ask for extra ("attached") streams: the v2 list `_attached_stream_info_list`, or
the legacy `_attached_stream_info` (one named-attrs with a group, or a list). Requests are
(group, key, count); keys carry the main stream id unless the entry forces reuse.
"""

from __future__ import annotations

from collections.abc import Iterator

from streamalloc.errors import InputError
from streamalloc.ir.attrs import NamedAttrs
from streamalloc.ir.graph import Graph, Node

V2_LIST = "_attached_stream_info_list"
V2_SYNC_LIST = "_attached_sync_res_info_list"
LEGACY = "_attached_stream_info"
DISABLE = "_disable_attached_resource"
DEFAULT_GROUP = "_default_stream_info_group"

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
