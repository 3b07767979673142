"""Stream labels as GE's allocator sees them, after GE's label pre-processing (spec 1.5).

Two GE steps run before the stream partition and rewrite node attributes; we compute their
result as a separate map instead of mutating nodes:
1. every `Cmo` node gets the stream label `<owning graph>_Cmo`, replacing its own;
2. a node with `_user_stream_label` U (with `_enable_inner_parallel` true and a stream label S,
   U becomes `U_S`) gets stream label U. A user label always becomes the stream label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from streamalloc.ir.graph import Graph, Node

STREAM_LABEL = "_stream_label"
USER_STREAM_LABEL = "_user_stream_label"
ENABLE_INNER_PARALLEL = "_enable_inner_parallel"


@dataclass(frozen=True, slots=True)
class NodeLabels:
    """The stream label and user stream label a node carries into stream assignment."""

    stream_label: str = ""
    user_stream_label: str = ""


NO_LABELS = NodeLabels()


def _text(node: Node, key: str) -> str:
    value = node.attr(key, "")
    return value if isinstance(value, str) else str(value)


def node_labels(node: Node) -> NodeLabels:
    """One node's labels after GE's Cmo labelling and user-label transfer."""
    label = f"{node.graph}_Cmo" if node.type == "Cmo" else _text(node, STREAM_LABEL)
    user = _text(node, USER_STREAM_LABEL)
    if not user:
        return NodeLabels(label, "") if label else NO_LABELS
    if label and node.attr(ENABLE_INNER_PARALLEL, False) is True:
        user = f"{user}_{label}"
    return NodeLabels(user, user)


def stream_labels(graph: Graph) -> Mapping[str, NodeLabels]:
    """Labels of every node of the model (nodes without any label map to NO_LABELS)."""
    return MappingProxyType({n.name: node_labels(n) for n in graph.all_nodes()})
