"""The canonical text of an allocation: what golden tests compare (stable, versioned header)."""

from __future__ import annotations

from streamalloc.allocation import Allocation


def allocation_text(allocation: Allocation) -> str:
    """Header, stream counts, then one line per node in T-order: name, stream, rule, attached."""
    lines = [f"// streamalloc allocation v1: graph {allocation.graph}, mode {allocation.mode}, "
             f"rules {allocation.rules}",
             f"main_stream_num {allocation.main_stream_num}",
             f"total_stream_num {allocation.total_stream_num}"]
    if allocation.custom_stream_ids:
        lines.append("custom_stream_ids " + ",".join(map(str, allocation.custom_stream_ids)))
    for name, node in allocation.nodes.items():
        attached = f" attached={','.join(map(str, node.attached))}" if node.attached else ""
        lines.append(f"{name} {node.stream} {node.rule}{attached}")
    return "\n".join(lines) + "\n"
