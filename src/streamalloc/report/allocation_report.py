"""What `streamalloc allocate` and `explain` print, and the plan's `nodes` entries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from streamalloc.allocation import Allocation
from streamalloc.facts import INVALID
from streamalloc.ir.clusters import is_data_like
from streamalloc.ir.graph import Graph
from streamalloc.report.table import format_table
from streamalloc.sync.result import SyncPlan

_SHOWN = 4  # nodes listed per stream in the table
_ENGINE = attrgetter("engine")


def stream_table(graph: Graph, allocation: Allocation) -> str:
    """One row per logical stream: node count, engines, labels, attached, first nodes."""
    rows = []
    for info in allocation.logical_streams():
        engines = Counter(map(_ENGINE, map(graph.by_name.__getitem__, info.nodes)))
        shown = ", ".join(info.nodes[:_SHOWN]) + (" ..." if len(info.nodes) > _SHOWN else "")
        rows.append([info.stream, len(info.nodes),
                     ", ".join(f"{e}:{c}" for e, c in sorted(engines.items())),
                     ",".join(info.user_stream_labels) or "-",
                     ",".join(map(str, info.attached_stream_ids)) or "-", shown])
    unassigned = sum(1 for n in allocation.nodes.values() if n.stream < 0)
    head = (f"graph {allocation.graph}: {allocation.main_stream_num} logical stream(s), "
            f"{len(allocation.attached_stream_ids)} attached, {unassigned} node(s) without a "
            f"stream; rules {allocation.rules}")
    table = format_table(["stream", "nodes", "engines", "user_labels", "attached", "first nodes"],
                         rows)
    return f"{head}\n\n{table}\n"


def node_table(graph: Graph, plan: SyncPlan) -> str:
    """`allocate --nodes`: per node (T-order) its type, engine, logical and physical stream and
    the rule that decided it; for a node without a stream, why it has none."""
    allocation = plan.allocation
    rows = []
    for name, result in allocation.nodes.items():
        node = graph.node(name)
        physical = plan.physical.get(name, INVALID)
        why = result.rule if result.stream != INVALID else _no_stream(graph, name, result.rule)
        rows.append([name, node.type, node.engine, result.stream,
                     physical if physical != INVALID else "-", why])
    return format_table(["node", "type", "engine", "logical", "physical", "rule / why none"],
                        rows) + "\n"


def _no_stream(graph: Graph, name: str, rule: str) -> str:
    node = graph.node(name)
    engine = graph.engines.get(node.engine)
    if is_data_like(node):
        return "none: data-like source (in no engine subgraph)"
    if node.has_attr("_rts_label_node"):
        return "none: RTS label node (`_rts_label_node`: GE leaves it on the invalid stream)"
    if engine is not None and engine.skip_assign_stream:
        return (f"none: {node.engine} skips stream assignment and skipped-engine found no "
                "neighbour's stream to fold it onto")
    return f"none: left without a stream by {rule}"


def sync_summary(plan: SyncPlan) -> str:
    """Events, notifies and physical streams after synchronization and splitting."""
    rows = [[s, plan.allocation_stream(s), len(tasks), plan.units.get(s, 0)]
            for s, tasks in sorted(plan.streams.items())]
    head = (f"\n{plan.physical_stream_count} physical stream(s), {plan.event_count} event(s), "
            f"{plan.notify_count} notify(s)" + (f", huge streams {list(plan.huge_streams)}"
                                                 if plan.huge_streams else ""))
    table = format_table(["physical", "logical", "tasks", "units"], rows)
    return f"{head}\n\n{table}\n"


def explain_node(graph: Graph, allocation: Allocation, name: str) -> str:
    """Every rule that touched the node, in rule order, and where it ended."""
    node = graph.node(name)
    result = allocation.nodes[name]
    lines = [f"node {name} ({node.type}, engine {node.engine}, graph {node.graph}): "
             f"stream {result.stream}, decided by {result.rule}"]
    if result.attached:
        lines.append(f"attached streams: {', '.join(map(str, result.attached))}")
    rows = [[t.note.rule, t.scope, t.note.stream if t.scope != "labels" else "-",
             t.note.reason, "yes" if t.note.decides else "no"]
            for t in allocation.provenance[name]]
    if not rows:
        lines.append("no rule touched it: it keeps its initial stream")
        return "\n".join(lines) + "\n"
    lines += ["", format_table(["rule", "on", "stream", "why", "decides"], rows)]
    return "\n".join(lines) + "\n"


def solver_summary(block: Mapping[str, Any], wall_s: float) -> str:
    """The optimal mode's outcome against its baseline (the plan's `solver` block); the wall
    time is printed here and never written into the plan."""
    status = str(block["status"])
    reason = f" ({block['reason']})" if block.get("reason") else ""
    gap = "" if block.get("gap") is None else f", gap {block['gap']:.4f}"
    nimble = "" if block.get("nimble_min_events") is None else \
        f", Nimble's minimum {block['nimble_min_events']}"
    limit = block.get("baseline_over_limit")
    baseline = "ge-mode baseline, over a device limit" if limit else "ge-mode baseline"
    over = f"\nthe ge-mode plan does not fit the device: {limit}" if limit else ""
    return (f"\nsolver: {status}{reason}{gap}; events {block['baseline_events']} ({baseline}) "
            f"-> {block['events_final']}{nimble}; emulated makespan "
            f"{block['baseline_makespan_us']:.1f} -> {block['makespan_us']:.1f} us; "
            f"deterministic time {block['deterministic_time']}, wall {wall_s:.1f} s{over}\n")
