"""GE's dynamic-shape allocator (spec 4): `dynamic-engine-streams` and `dynamic-renumber`.

Streams are owned model-wide: one per owning engine, one per stream label. Per graph (root, then
unknown-shape subgraphs in R-order): owning engines, AI CPU parallel (ac_parallel_enable), reuse
of a neighbour's stream, the rest per engine, then labels. Renumbering orders engine streams by
(compute cost, engine name) and labels by name; matched nodes (forced main) go to stream 0.
Known-shape subgraphs of a dynamic model are built by GE as separate static models with their
own numbering; they are left on their initial stream here.
"""

from __future__ import annotations

from collections import Counter
from types import MappingProxyType

import msgspec
from msgspec.structs import replace

from streamalloc.errors import InputError, OptionError
from streamalloc.facts import (
    AICPU_ENGINES,
    INDEPENDENT_AICPU_TYPES,
    NO_TASK_ENGINE,
    OWNING_ENGINES,
)
from streamalloc.heuristic.assign_by_dependency import top_priority
from streamalloc.heuristic.context import GraphContext, ModelContext, is_unknown_shape
from streamalloc.heuristic.plan import INVALID, GraphPlan, ModelPlan, Note, initial_graph_plan
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import EngineSubgraph
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule


class _Owners(msgspec.Struct):
    """Model-wide stream owners, handing out ids in first-sight order."""

    next_stream: int = 0
    engines: dict[str, int] = msgspec.field(default_factory=dict)
    labels: dict[str, int] = msgspec.field(default_factory=dict)

    def engine(self, name: str) -> int:
        if name not in self.engines:
            self.engines[name] = self.next_stream
            self.next_stream += 1
        return self.engines[name]

    def label(self, name: str) -> int:
        if name not in self.labels:
            self.labels[name] = self.next_stream
            self.next_stream += 1
        return self.labels[name]


def dynamic_graphs(graph: Graph) -> list[str]:
    """The root, then every unknown-shape subgraph in R-order."""
    return [graph.root.name, *(g for g in graph.r_order()
                               if is_unknown_shape(graph, graph.subgraphs[g]))]


class DynamicEngineStreams(RulePass):
    """dynamic-engine-streams (DynamicStreamAllocator): streams per engine and label."""

    __slots__ = ()

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Spec 4.3 for every dynamic graph; ids are not final until `dynamic-renumber`."""
        graph = ctx.graph
        ac_parallel = _ac_parallel(graph)
        owners = _Owners()
        graphs = dict(plan.graphs)
        for name in dynamic_graphs(graph):
            one = GraphContext(graph, graph.graph(name), ctx.partitions[name], ctx.labels)
            graphs[name] = _one_graph(self.rule, one, owners, ac_parallel)
        owned = tuple([("engine", e, s) for e, s in owners.engines.items()]
                      + [("label", k, s) for k, s in owners.labels.items()])
        return outcome(plan, replace(plan, graphs=MappingProxyType(graphs),
                                     next_stream=owners.next_stream, owners=owned))


def _ac_parallel(graph: Graph) -> bool:
    value = graph.option("ac_parallel_enable")
    if value not in ("", "0", "1"):
        raise OptionError(f"{graph.source}: option ac_parallel_enable is {value!r}; it can only "
                          "be empty, \"0\" or \"1\" (GE E10001)")
    return value == "1"


def _one_graph(rule: Rule, ctx: GraphContext, owners: _Owners, ac_parallel: bool) -> GraphPlan:
    sgs = ctx.subgraphs
    streams = [INVALID] * len(sgs)
    reused: list[int | None] = [None] * len(sgs)
    for sg in sgs:
        if sg.engine_name in OWNING_ENGINES or _aicpu_own_stream(ctx, sg, ac_parallel):
            streams[sg.index] = owners.engine(sg.engine_name)
    for sg in sgs:
        if streams[sg.index] == INVALID:
            _reuse(ctx, sg, streams, reused)
    for sg in sgs:
        if streams[sg.index] == INVALID and not sg.engine.skip_assign_stream:
            streams[sg.index] = owners.engine(sg.engine_name)
    plan = initial_graph_plan(ctx.compute.name, ctx.compute.index, [INVALID] * len(ctx.nodes),
                              subgraphs=len(sgs), default_stream=INVALID, next_stream=0)
    changes = {n: (streams[sg.index], Note(rule.name, streams[sg.index],
                                           f"{sg.engine_name} stream of the model"))
               for sg in sgs if streams[sg.index] != INVALID for n in sg.nodes}
    for node in ctx.nodes:
        label = ctx.label(node.name).stream_label
        if label:
            stream = owners.label(label)
            changes[node.name] = (stream, Note(rule.name, stream, f"stream label {label!r}"))
    return plan.set_nodes(changes)


def _aicpu_own_stream(ctx: GraphContext, sg: EngineSubgraph, ac_parallel: bool) -> bool:
    if sg.engine_name not in AICPU_ENGINES:
        return False
    if not ac_parallel:
        return any(ctx.compute.node(n).type in INDEPENDENT_AICPU_TYPES for n in sg.nodes)
    no_input = not sg.preds
    unpaired = _has_unpaired_input(ctx, sg)
    only_notask = not unpaired and all(
        ctx.subgraphs[p].engine_name == NO_TASK_ENGINE and not ctx.subgraphs[p].preds
        for p in sg.preds)
    can_reuse = any(_reusable_owner(ctx, ctx.subgraphs[p], sg) for p in sg.preds)
    return no_input or only_notask or not can_reuse


def _has_unpaired_input(ctx: GraphContext, sg: EngineSubgraph) -> bool:
    """An input from a node outside every subgraph (a data-like source): its PlaceHolder has no
    End in the subgraph list."""
    owner = ctx.partition.subgraph_of
    members = set(sg.nodes)
    return any(src not in members and src not in owner
               for n in sg.nodes for src in ctx.in_neighbours(ctx.compute.node(n)))


def _reusable_owner(ctx: GraphContext, pred: EngineSubgraph, sg: EngineSubgraph) -> bool:
    """A pred whose stream an AI CPU subgraph could continue on (spec 4.3 can_reuse_pred)."""
    return pred.engine_name in OWNING_ENGINES and not pred.engine.independent and not any(
        q != sg.index and ctx.subgraphs[q].engine_name == pred.engine_name for q in pred.succs)


def _reuse(ctx: GraphContext, sg: EngineSubgraph, streams: list[int],
           reused: list[int | None]) -> None:
    peer = _top(ctx, sg, sg.preds, reused)
    if peer is None:
        peer = _top(ctx, sg, sg.succs, reused)
    if peer is None:
        return
    root = reused[peer]
    if root is not None:
        peer = root
    if streams[peer] == INVALID:
        return  # not assigned yet: left for the per-engine step
    streams[sg.index] = streams[peer]
    reused[sg.index] = peer


def _top(ctx: GraphContext, sg: EngineSubgraph, peers: tuple[int, ...],
         reused: list[int | None]) -> int | None:
    # [P-order] GE ranks candidates in pointer order; we use L-order (spec 4.3).
    candidates = [p for p in peers if _could_reuse(ctx, sg, ctx.subgraphs[p], reused)]
    return top_priority(ctx, candidates)


def _could_reuse(ctx: GraphContext, sg: EngineSubgraph, peer: EngineSubgraph,
                 reused: list[int | None]) -> bool:
    if sg.engine_name in AICPU_ENGINES and peer.engine.independent:
        return False
    if sg.engine_name == peer.engine_name or sg.engine.attach:
        return True
    root = reused[peer.index]
    return root is not None and ctx.subgraphs[root].engine_name == sg.engine_name


class DynamicRenumber(RulePass):
    """dynamic-renumber (DynamicStreamAllocator's renumbering); matched nodes: main stream."""

    __slots__ = ()

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Spec 4.4 steps 1-3: engines by (cost, name), then labels by name; forced main
        to 0."""
        return outcome(plan, _renumber(self.rule, ctx.graph, plan))


def _renumber(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    names = dynamic_graphs(graph)
    used = Counter(s for g in names for s in plan.graphs[g].streams.values() if s != INVALID)
    engines = [(key, s) for kind, key, s in plan.owners if kind == "engine" and used[s]]
    labels = sorted(((key, s) for kind, key, s in plan.owners if kind == "label"),
                    key=lambda item: item[0].encode("utf-8"))
    ranked = sorted(engines, key=lambda item: (_cost(graph, item[0]), item[0].encode("utf-8")))
    remap = {old: new for new, (_, old) in enumerate([*ranked, *labels])}
    graphs = dict(plan.graphs)
    for g in names:
        graphs[g] = _renumbered(rule, graph, graphs[g], remap)
    count = max(len(remap), 1)
    return replace(plan, graphs=MappingProxyType(graphs), next_stream=count,
                   main_stream_num=count)


def _cost(graph: Graph, engine: str) -> int:
    row = graph.engines.get(engine)
    if row is None or row.compute_cost is None:
        raise InputError(f"{graph.source}: engine {engine!r} owns a stream but has no compute "
                         "cost in the engine table (GE: engine name invalid)")
    return row.compute_cost


def _renumbered(rule: Rule, graph: Graph, plan: GraphPlan, remap: dict[int, int]) -> GraphPlan:
    changes = {}
    for node in graph.graph(plan.graph).nodes:
        old = plan.streams[node.name]
        if old == INVALID or node.subgraphs or rule.matches(node) or not remap:
            new, why = 0, "main stream"
        else:
            new, why = remap[old], f"stream {old} renumbered by engine cost"
        changes[node.name] = (new, Note(rule.name, new, why, decides=new == 0))
    return plan.set_nodes(changes)
