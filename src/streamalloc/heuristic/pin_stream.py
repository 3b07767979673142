"""pin-stream (a user policy): matched nodes go to a given stream after compaction."""

from __future__ import annotations

from streamalloc.errors import AllocationInfeasible
from streamalloc.heuristic.plan import ModelPlan, Note
from streamalloc.ir.graph import Graph
from streamalloc.rules.model import Rule


def apply(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    """Move matched nodes that have a stream onto `options.stream`."""
    stream = int(rule.options["stream"])
    limit = plan.main_stream_num if plan.main_stream_num is not None else plan.next_stream
    if stream >= max(limit, 1):
        raise AllocationInfeasible(f"rule {rule.name!r} ({rule.origin}) pins nodes to stream "
                                   f"{stream}, but the allocation has {limit} stream(s)")
    for graph_name, graph_plan in plan.graphs.items():
        changes = {n.name: (stream, Note(rule.name, stream, "pinned by rule"))
                   for n in graph.graph(graph_name).nodes
                   if rule.matches(n) and graph_plan.streams[n.name] not in (stream, -1)}
        plan = plan.set_nodes(graph_name, changes)
    return plan
