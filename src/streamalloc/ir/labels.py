"""Stream labels as GE's allocator sees them, after GE's label pre-processing (spec 1.5).

Two GE steps run before the stream partition and rewrite node attributes; we compute their
result as a separate map instead of mutating nodes:
1. every `Cmo` node gets the stream label `<owning graph>_Cmo`, replacing its own (`cmo_label`);
2. a node with `_user_stream_label` U (with `_enable_inner_parallel` true and a stream label S,
   U becomes `U_S`) gets stream label U (`transfer_user_label`). A user label always becomes the
   stream label.
The rule kinds `cmo-label` and `user-stream-label` apply these steps (`rules.labelling`); the
shipped GE rule sets run both on every node, which is what GE does.
"""

from __future__ import annotations

import msgspec
from msgspec.structs import replace

from streamalloc.ir.graph import Node

STREAM_LABEL = "_stream_label"
USER_STREAM_LABEL = "_user_stream_label"
ENABLE_INNER_PARALLEL = "_enable_inner_parallel"


class NodeLabels(msgspec.Struct, frozen=True):
    """A node's stream label and user stream label; `present`: GE's attribute-presence test."""

    stream_label: str = ""
    user_stream_label: str = ""
    present: bool = False


NO_LABELS = NodeLabels()


def _text(node: Node, key: str) -> str:
    value = node.attr(key, "")
    return value if isinstance(value, str) else str(value)


def raw_labels(node: Node) -> NodeLabels:
    """The labels a node's own attributes give it."""
    if not node.attrs:  # most nodes
        return NO_LABELS
    present = node.has_attr(STREAM_LABEL) or node.has_attr(USER_STREAM_LABEL)
    if not present:
        return NO_LABELS
    return NodeLabels(_text(node, STREAM_LABEL), _text(node, USER_STREAM_LABEL), True)


def cmo_label(node: Node, labels: NodeLabels) -> NodeLabels:
    """GE's stream-label attach pass on a Cmo node: label `<graph>_Cmo`."""
    return replace(labels, stream_label=f"{node.graph}_Cmo", present=True)


def transfer_user_label(node: Node, labels: NodeLabels) -> NodeLabels:
    """GE's TransUserStreamLabel: the user label (extended by inner parallel) is the label."""
    user = labels.user_stream_label
    if not user:
        return labels
    if labels.stream_label and node.attr(ENABLE_INNER_PARALLEL, False) is True:
        user = f"{user}_{labels.stream_label}"
    return NodeLabels(user, user, True)

