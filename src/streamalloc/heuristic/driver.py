"""The heuristic allocator: label rules, GE's partition, the per-graph chain, model rules.

`allocate_ge(graph, rules)` folds the enabled rules (their `when:` holds for the graph's
options) over immutable plans, in rule order, and returns an `Allocation`. Which shipped rule
set applies by default: `ge-dynamic-shape` for dynamic-shape graphs, `ge-static-single-stream`
when ge.enableSingleStream is "true", else `ge-static-multi-stream`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from streamalloc.allocation import Allocation, NodeStream, Touch
from streamalloc.errors import InputError
from streamalloc.heuristic.context import GraphContext, is_unknown_shape
from streamalloc.heuristic.plan import INVALID, GraphPlan, ModelPlan, Note, initial_graph_plan
from streamalloc.heuristic.registry import GRAPH_STEPS, MODEL_STEPS
from streamalloc.heuristic.rule_check import check_rules
from streamalloc.ir.graph import Graph
from streamalloc.ir.labels import NodeLabels
from streamalloc.ir.partition import GraphPartition, partition_model
from streamalloc.rules import labelling
from streamalloc.rules.loader import default_rule_set
from streamalloc.rules.model import Rule, RuleSet

Observer = Callable[[Rule, str, object], None]


def allocate_ge(graph: Graph, rules: RuleSet | None = None,
                observer: Observer | None = None) -> Allocation:
    """Logical streams for every node, as GE's pass chain (or the given rules) assigns them."""
    rules = rules or default_rule_set(graph)
    enabled = [r for r in rules.rules if r.enabled(graph.options)]
    labels, label_notes = _labels(graph, rules)
    partitions = partition_model(graph, labels)
    graph_rules = [r for r in enabled if r.kind in GRAPH_STEPS]
    if rules.flow == "static":
        plan = _static_graphs(graph, partitions, labels, graph_rules, observer)
    else:
        plan = _initial_model(graph)
    main_rule = next((r for r in enabled if r.kind == "dynamic-renumber"), None)
    for rule in (r for r in enabled if r.kind in MODEL_STEPS):
        if rule.kind == "dynamic-engine-streams":
            plan = MODEL_STEPS[rule.kind](rule, graph, plan, partitions, labels)
        elif rule.kind == "mini-dag":
            plan = MODEL_STEPS[rule.kind](rule, graph, plan, labels, main_rule=main_rule)
        else:
            plan = MODEL_STEPS[rule.kind](rule, graph, plan)
        if observer:
            observer(rule, graph.name, plan)
    allocation = _allocation(graph, rules, plan, partitions, (labels, label_notes))
    check_rules(graph, rules, allocation, partitions)
    return allocation


def _labels(graph: Graph, rules: RuleSet
            ) -> tuple[Mapping[str, NodeLabels], dict[str, list[Note]]]:
    labels, changes = labelling.rule_labels(rules, graph)
    notes = {name: [Note(rule.name, INVALID, f"stream label {value.stream_label!r}"
                         + (f", user label {value.user_stream_label!r}"
                            if value.user_stream_label else ""), decides=False)
                    for rule, value in steps]
             for name, steps in changes.items()}
    return labels, notes


def _default_stream(graph: Graph, plans: Mapping[str, GraphPlan], graph_name: str) -> int:
    compute = graph.graph(graph_name)
    if compute.parent is None:
        return INVALID
    parent = graph.node(compute.parent)
    if is_unknown_shape(graph, graph.graph(parent.graph)):
        return INVALID
    return plans[parent.graph].streams[parent.name]


def _static_graphs(graph: Graph, partitions: Mapping[str, GraphPartition],
                   labels: Mapping[str, NodeLabels], rules: list[Rule],
                   observer: Observer | None) -> ModelPlan:
    plans: dict[str, GraphPlan] = {}
    next_stream = 0
    for name in [graph.root.name, *graph.r_order()]:
        if name not in partitions:
            raise InputError(f"{graph.source}: graph {name!r} has no engine partition (it is "
                             "flagged _no_need_partition); GE's static allocator cannot find it")
        ctx = GraphContext(graph, graph.graph(name), partitions[name], labels)
        plan = initial_graph_plan(name, ((n.name, _initial(n.stream_id)) for n in ctx.nodes),
                                  len(ctx.subgraphs), _default_stream(graph, plans, name),
                                  next_stream)
        for rule in rules:
            plan = GRAPH_STEPS[rule.kind](rule, ctx, plan)
            if observer:
                observer(rule, name, plan)
        plans[name] = plan
        next_stream = plan.next_stream
    return ModelPlan(MappingProxyType(plans), next_stream)


def _initial(stream_id: int | None) -> int:
    return 0 if stream_id is None else stream_id  # GE op descriptors start on stream 0


def _initial_model(graph: Graph) -> ModelPlan:
    """Dynamic flow before any rule: every node on its initial stream (GE: single stream)."""
    order = [graph.root, *(graph.subgraphs[s] for s in graph.r_order())]
    plans = {c.name: initial_graph_plan(c.name, ((n.name, _initial(n.stream_id))
                                                 for n in c.nodes), 0, INVALID, 1)
             for c in order}
    return ModelPlan(MappingProxyType(plans), 1)


def _allocation(graph: Graph, rules: RuleSet, plan: ModelPlan,
                partitions: Mapping[str, GraphPartition],
                label_info: tuple[Mapping[str, NodeLabels], dict[str, list[Note]]]
                ) -> Allocation:
    labels, label_notes = label_info
    order = {r.name: i for i, r in enumerate(rules.rules)}
    nodes: dict[str, NodeStream] = {}
    provenance: dict[str, tuple[Touch, ...]] = {}
    for node in graph.all_nodes():
        touches = _touches(node.name, plan.graphs[node.graph], partitions.get(node.graph),
                           label_notes.get(node.name, []), order)
        deciding = [t.note.rule for t in touches if t.note.decides]
        nodes[node.name] = NodeStream(plan.graphs[node.graph].streams[node.name],
                                      deciding[-1] if deciding else "initial",
                                      plan.attached.get(node.name, ()))
        provenance[node.name] = touches
    main = plan.main_stream_num if plan.main_stream_num is not None else plan.next_stream
    return Allocation(graph=graph.name, mode="ge", rules=rules.name,
                      nodes=MappingProxyType(nodes), main_stream_num=main,
                      total_stream_num=max(plan.next_stream, main),
                      user_labels=MappingProxyType({n: v.user_stream_label
                                                    for n, v in labels.items()}),
                      provenance=MappingProxyType(provenance),
                      custom_stream_ids=plan.custom_stream_ids, rules_digest=rules.digest,
                      options=graph.options)


def _touches(name: str, plan: GraphPlan, partition: GraphPartition | None,
             label_notes: list[Note], order: Mapping[str, int]) -> tuple[Touch, ...]:
    touches = [Touch("labels", n) for n in label_notes]
    index = partition.subgraph_of.get(name) if partition is not None else None
    if partition is not None and index is not None and index < len(plan.sg_notes):
        scope = f"subgraph {partition.subgraphs[index].id}"
        touches += [Touch(scope, n) for n in plan.sg_notes[index]]
    touches += [Touch("node", n) for n in plan.notes.get(name, ())]
    return tuple(sorted(touches, key=lambda t: order.get(t.note.rule, -1)))
