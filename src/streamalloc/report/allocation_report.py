"""What `streamalloc allocate` and `explain` print, and the plan's `nodes` entries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from streamalloc.allocation import Allocation
from streamalloc.facts import INVALID
from streamalloc.ir.clusters import is_data_like
from streamalloc.ir.graph import Graph
from streamalloc.report.table import format_table
from streamalloc.rules import constraints as forms
from streamalloc.rules.constraints import Constraint, constraint_nodes
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
    # preset mode runs no rules (its plan's `rules` is null): the streams are the file's
    rules = "none (the graph file's streams)" if allocation.mode == "preset" else allocation.rules
    head = (f"graph {allocation.graph}: {allocation.main_stream_num} logical stream(s), "
            f"{len(allocation.attached_stream_ids)} attached, {unassigned} node(s) without a "
            f"stream; rules {rules}")
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


def explain_node(graph: Graph, allocation: Allocation, name: str,
                 solver: tuple[str, Sequence[Constraint]] | None = None, *,
                 kept: str | None = None) -> str:
    """Every rule that touched the node, in rule order, and where it ended. For a plan of the
    optimal mode (`solver`: its settings in words, and the constraints it kept), the
    constraints that name the node and the streams of its producers and consumers; for ge
    mode's plan that the optimal mode kept (its FALLBACK), the rules, after `kept`: why."""
    node = graph.node(name)
    result = allocation.nodes[name]
    lines = [f"node {name} ({node.type}, engine {node.engine}, graph {node.graph}): "
             f"stream {result.stream}, decided by {result.rule}"]
    if kept is not None:
        lines.append(kept)
    if result.attached:
        lines.append(f"attached streams: {', '.join(map(str, result.attached))}")
    if solver is not None:
        return "\n".join(lines + _solver_lines(graph, allocation, name, *solver)) + "\n"
    if result.stream == INVALID:  # the why of `allocate --nodes` and optimal-mode explain
        lines.append("no stream: " + _no_stream(graph, name, result.rule).removeprefix("none: "))
    rows = [[t.note.rule, t.scope, t.note.stream if t.scope != "labels" else "-",
             t.note.reason, "yes" if t.note.decides else "no"]
            for t in allocation.provenance[name]]
    if not rows:
        lines.append("no rule touched it: it keeps its initial stream")
        return "\n".join(lines) + "\n"
    lines += ["", format_table(["rule", "on", "stream", "why", "decides"], rows)]
    return "\n".join(lines) + "\n"


def _solver_lines(graph: Graph, allocation: Allocation, name: str, settings: str,
                  constraints: Sequence[Constraint]) -> list[str]:
    node = graph.node(name)
    named = [c for c in constraints if name in constraint_nodes(c)]
    placed = allocation.nodes[name].stream != INVALID  # the solver places the nodes ge mode
    # streams; no stream would take the others
    lines = [f"the solver placed it ({settings}); no pass of the rule set ran" if placed else
             f"the solver left it without a stream ({settings}), as ge mode does: "
             + _no_stream(graph, name, "ge mode").removeprefix("none: ")]
    if named:
        lines += ["", "constraints of the rule set that name it (every plan keeps them):",
                  format_table(["rule", "constraint"],
                               [[c.rule, constraint_text(c, name)] for c in named])]
    elif placed:
        lines.append("no constraint of the rule set names it: any stream would do")
    producers = dict.fromkeys([*(i.src for i in node.data_sources()), *node.control_inputs])
    consumers = dict.fromkeys(graph.graph(node.graph).successors(name))
    lines += ["", f"producers: {_streams_of(allocation, producers)}",
              f"consumers: {_streams_of(allocation, consumers)}"]
    return lines


def _streams_of(allocation: Allocation, names: Iterable[str]) -> str:
    shown = [f"{n} (stream {allocation.nodes[n].stream})" if allocation.nodes[n].stream != INVALID
             else f"{n} (no stream)" for n in names if n in allocation.nodes]
    return ", ".join(shown) or "none"


def constraint_text(constraint: Constraint, name: str) -> str:
    """What `constraint` asks of node `name`, in words."""
    match constraint:
        case forms.SameStream(nodes=nodes):
            return f"on one stream with {_names(nodes, name)}"
        case forms.DifferentStreams(first=first, second=second):
            return f"on no stream of {_names(second if name in first else first, name)}"
        case forms.DedicatedStream(nodes=nodes):
            return f"on a stream of its own, with {_names(nodes, name)}"
        case forms.PinnedStream(stream=stream):
            return f"on logical stream {stream}"
        case forms.DisjointGroups(groups=groups):
            return f"its group shares no stream with the other {len(groups) - 1} group(s)"
        case forms.StreamCap(engine=engine, cap=cap, graph=of):
            return f"{engine} nodes open at most {cap} stream(s) in graph {of}"
        case forms.AttachedStreams():
            return "its attached streams are none of the main streams"
    raise AssertionError(f"no text for {type(constraint).__name__}")


def _names(nodes: Sequence[str], name: str) -> str:
    others = [n for n in nodes if n != name]
    if not others:
        return "no other node"
    return ", ".join(others[:_SHOWN]) + (f" and {len(others) - _SHOWN} more"
                                         if len(others) > _SHOWN else "")


SOLVED = ("OPTIMAL", "FEASIBLE", "FALLBACK")  # the other statuses are CP-SAT's answers where
# it found no plan of its model (`UNKNOWN`, `INFEASIBLE`, ...): the plan written is the
# search's without it


def status_notes(status: str, phase: str | None) -> list[str]:
    """What the summary and `explain` say beside the solver's status: that CP-SAT found no
    plan of its model (for its answers but SOLVED), and the phase that made the streams."""
    return ([] if status in SOLVED else ["CP-SAT found no plan of its model"]) \
        + ([f"phase {phase}"] if phase else [])


def _against_bound(events: int, floor: int | None) -> str:
    """What the events bound says of the plan's events; nothing without a bound, nor for a
    bound of 0 below them ("0 or more" says nothing)."""
    if floor is None or 0 == floor < events:
        return ""
    if events <= floor:
        return " (no plan within the limits needs fewer)"
    return f" (a plan within the limits needs {floor} or more)"


def solver_summary(block: Mapping[str, Any], wall_s: float) -> str:
    """The optimal mode's outcome against its baseline (the plan's `solver` block); the wall
    time is printed here and never written into the plan."""
    notes = status_notes(str(block["status"]), block.get("phase"))
    status = str(block["status"]) + (f" ({'; '.join(notes)})" if notes else "")
    reason = f" ({block['reason']})" if block.get("reason") else ""
    gap = "" if block.get("gap") is None else f", model gap {block['gap']:.4f}"
    fewest = _against_bound(block["events_final"], block.get("events_bound"))
    nimble = "" if block.get("nimble_min_events") is None else \
        f", Nimble's minimum {block['nimble_min_events']}"
    limit = block.get("baseline_over_limit")
    baseline = "ge-mode baseline, over a device limit" if limit else "ge-mode baseline"
    over = f"\nthe ge-mode plan does not fit the device: {limit}" if limit else ""
    return (f"\nsolver: {status}{reason}{gap}; events {block['baseline_events']} ({baseline}) "
            f"-> {block['events_final']}{fewest}{nimble}; emulated makespan "
            f"{block['baseline_makespan_us']:.1f} -> {block['makespan_us']:.1f} us; "
            f"deterministic time {block['deterministic_time']}, wall {wall_s:.1f} s{over}\n")
