"""The heuristic allocator: label rules, GE's partition, the per-graph chain, model rules.

`allocate_ge(graph, rules)` folds the passes of the enabled rules (their `when:` holds for the
graph's options; `registry.py` makes each rule's pass) over immutable plans, in rule order, and
returns an `Allocation`. Which shipped rule set applies by default: `ge-dynamic-shape` for
dynamic-shape graphs, `ge-static-single-stream` when ge.enableSingleStream is "true", else
`ge-static-multi-stream`. An observer (`streamalloc.passes.PassObserver`) is told after
every pass; the text of a record is the canonical allocation text of the whole model after the
pass (graphs not reached yet on their initial streams), or the stream labels after a label pass.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from itertools import chain, compress, groupby, repeat
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import Any

import msgspec
import numpy as np
from msgspec.structs import replace

from streamalloc import collector
from streamalloc.allocation import Allocation, NodeStream, allocation_text
from streamalloc.errors import InputError, InputWarning
from streamalloc.heuristic.context import GraphContext, ModelContext, is_unknown_shape
from streamalloc.heuristic.label_rules import labels_text
from streamalloc.heuristic.plan import INVALID, GraphPlan, ModelPlan, Note, initial_graph_plan
from streamalloc.heuristic.provenance import Provenance, Touches
from streamalloc.heuristic.registry import GRAPH_PASSES, LABEL_PASSES, MODEL_PASSES
from streamalloc.heuristic.rule_check import check_rules, idle_rules
from streamalloc.heuristic.rule_pass import GraphPass, Labels
from streamalloc.ir.graph import ComputeGraph, Graph
from streamalloc.ir.partition import GraphPartition, partition_model
from streamalloc.mappings import Columns, Derived, values_of
from streamalloc.passes import PassObserver, PassRecord, PassResult
from streamalloc.rules import labelling
from streamalloc.rules.conflicts import check_static
from streamalloc.rules.constraint_inputs import RuleLabels
from streamalloc.rules.loader import default_rule_set
from streamalloc.rules.model import Rule, RuleSet

_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_USER_LABEL, _STREAM_ID = attrgetter("user_stream_label"), attrgetter("stream_id")


@collector.pausing
def allocate_ge(graph: Graph, rules: RuleSet | None = None,
                observer: PassObserver | None = None) -> Allocation:
    """Logical streams for every node, as GE's pass chain (or the given rules) assigns them."""
    run = _Run(graph, rules or default_rule_set(graph), observer)
    check_static(run.rules, graph)  # user rules that cannot both hold, before allocating
    enabled = [r for r in run.rules.rules if r.enabled(graph.options)]
    labels, label_notes = _labels(run, [r for r in enabled if r.kind in LABEL_PASSES])
    main_rule = next((r for r in enabled if r.kind == "dynamic-renumber"), None)
    run = replace(run, model=ModelContext(graph, partition_model(graph, labels), labels,
                                          forced_main=main_rule), label_notes=label_notes)
    graph_passes = [GRAPH_PASSES[r.kind](r) for r in enabled if r.kind in GRAPH_PASSES]
    plan = _static_graphs(run, graph_passes) if run.rules.flow == "static" else \
        _initial_model(graph)
    for model_pass in [MODEL_PASSES[r.kind](r) for r in enabled if r.kind in MODEL_PASSES]:
        result = model_pass.apply(run.context, plan)
        plan = result.plan
        run.tell_model(model_pass.name, "", result, plan)
    allocation = run.allocation(plan)
    setter = {name: notes[-1].rule for name, notes in label_notes.items()}
    check_rules(graph, run.rules, allocation, run.context.partitions, RuleLabels(labels, setter))
    for message in idle_rules(graph, run.rules, allocation):
        warnings.warn(message, InputWarning, stacklevel=3)  # past collector.pausing to the caller
    return allocation


class _Run(msgspec.Struct, frozen=True):
    """One allocation: the graph, its rule set, the observer; after the label passes, what the
    graph and model passes read and the label rules' notes."""

    graph: Graph
    rules: RuleSet
    observer: PassObserver | None
    model: ModelContext | None = None
    label_notes: Mapping[str, list[Note]] = msgspec.field(default_factory=dict)

    @property
    def context(self) -> ModelContext:
        """What the model passes read (set once the labels are known)."""
        assert self.model is not None, "the label passes run first"
        return self.model

    def tell(self, name: str, graph_name: str, result: PassResult[Any],
             render: Callable[[], str]) -> None:
        """Report one pass to the observer, if any."""
        if self.observer is not None:
            self.observer.after_pass(PassRecord(name, graph_name, result.changed, result.plan,
                                                render))

    def tell_model(self, name: str, graph_name: str, result: PassResult[Any],
                   plan: ModelPlan) -> None:
        """Report a pass whose state is the model plan `plan`."""
        self.tell(name, graph_name, result, lambda: allocation_text(self.allocation(plan)))

    def tell_graph(self, name: str, result: PassResult[GraphPlan],
                   done: Mapping[str, GraphPlan]) -> None:
        """Report a per-graph pass: the graphs done so far, this one, the rest as given."""
        if self.observer is None:
            return
        plan = result.plan
        graphs = {**_initial_model(self.graph).graphs, **done, plan.graph: plan}
        model = ModelPlan(MappingProxyType(graphs), plan.next_stream)
        partition = self.context.partitions[plan.graph]
        self.tell(name, plan.graph, result, lambda: allocation_text(self.allocation(model))
                  + subgraphs_text(partition, plan))

    def allocation(self, plan: ModelPlan) -> Allocation:
        """The allocation a model plan stands for."""
        return _allocation(self.graph, self.rules, plan, self.context, self.label_notes)


def subgraphs_text(partition: GraphPartition, plan: GraphPlan) -> str:
    """The streams of one graph's partition subgraphs (L-order), which the per-graph passes
    before node-stream-update decide and the node lines do not show yet."""
    lines = [f"// subgraph streams of graph {plan.graph}"]
    lines += [f"subgraph {sg.id} {stream}" + (f" reuses {partition.subgraphs[root].id}"
                                              if root is not None and root != sg.index else "")
              for sg, stream, root in zip(partition.subgraphs, plan.sg_streams, plan.sg_reused,
                                          strict=True)]
    return "\n".join(lines) + "\n"


def _labels(run: _Run, rules: list[Rule]) -> tuple[Labels, dict[str, list[Note]]]:
    """Labels after the label passes, and per node a note for each rule that changed them."""
    labels: Labels = labelling.initial_labels(run.graph)
    notes: dict[str, list[Note]] = {}
    for rule in rules:
        result = LABEL_PASSES[rule.kind](rule).apply(run.graph, labels)
        for name, value in result.plan.items() if result.plan is not labels else ():
            if value is not labels[name] and value != labels[name]:  # most are kept as they are
                notes.setdefault(name, []).append(Note(
                    rule.name, INVALID, f"stream label {value.stream_label!r}"
                    + (f", user label {value.user_stream_label!r}"
                       if value.user_stream_label else ""), decides=False))
        labels = result.plan
        run.tell(rule.name, "", result, partial(labels_text, run.graph, labels))
    return labels, notes


def _default_stream(graph: Graph, plans: Mapping[str, GraphPlan], graph_name: str) -> int:
    compute = graph.graph(graph_name)
    if compute.parent is None:
        return INVALID
    parent = graph.node(compute.parent)
    if is_unknown_shape(graph, graph.graph(parent.graph)):
        return INVALID
    return plans[parent.graph].streams[parent.name]


def _static_graphs(run: _Run, passes: list[GraphPass]) -> ModelPlan:
    graph, model = run.graph, run.context
    plans: dict[str, GraphPlan] = {}
    next_stream = 0
    for name in [graph.root.name, *graph.r_order()]:
        if name not in model.partitions:
            raise InputError(f"{graph.source}: graph {name!r} has no engine partition (it is "
                             "flagged _no_need_partition); GE's static allocator cannot find it")
        ctx = GraphContext(graph, graph.graph(name), model.partitions[name], model.labels)
        plan = initial_graph_plan(name, ctx.compute.index, _initial_streams(ctx.compute),
                                  subgraphs=len(ctx.subgraphs),
                                  default_stream=_default_stream(graph, plans, name),
                                  next_stream=next_stream)
        for graph_pass in passes:
            result = graph_pass.apply(ctx, plan)
            plan = result.plan
            run.tell_graph(graph_pass.name, result, plans)
        plans[name] = plan
        next_stream = plan.next_stream
    return ModelPlan(MappingProxyType(plans), next_stream)


def _initial_streams(compute: ComputeGraph) -> list[int]:
    """The initial stream of each node, in G-order (GE op descriptors start on stream 0)."""
    ids = list(map(_STREAM_ID, compute.nodes))
    if ids.count(None) == len(ids):  # most graphs give none
        return [0] * len(ids)
    return [0 if s is None else s for s in ids]


def _initial_model(graph: Graph) -> ModelPlan:
    """Dynamic flow before any rule: every node on its initial stream (GE: single stream)."""
    order = [graph.root, *(graph.subgraphs[s] for s in graph.r_order())]
    plans = {c.name: initial_graph_plan(c.name, c.index, _initial_streams(c), subgraphs=0,
                                        default_stream=INVALID, next_stream=1) for c in order}
    return ModelPlan(MappingProxyType(plans), 1)


def _allocation(graph: Graph, rules: RuleSet, plan: ModelPlan, model: ModelContext,
                label_notes: Mapping[str, list[Note]]) -> Allocation:
    partitions, labels = model.partitions, model.labels
    provenance_of = Provenance(rules.run_order())
    names: list[str] = []  # T-order, and each node's touches and entry
    provenance: list[Touches] = []
    nodes: list[NodeStream] = []
    # Nodes noted alike (the same subgraph and note containers) on the same streams share
    # their touches and one (immutable) entry; keyed by the ids of containers the plan and
    # `label_notes` keep alive meanwhile.
    placed: dict[tuple[Any, ...], tuple[Touches, NodeStream]] = {}
    for graph_name, members in _runs_by_graph(graph):
        graph_plan, partition = plan.graphs[graph_name], partitions.get(graph_name)
        # each node's key, a column at a time (`map` and `zip` run in C)
        indexes = _owners(graph.graph(graph_name), partition, members)
        by_labels = values_of(label_notes, members, ())
        own = values_of(graph_plan.notes, members)
        streams = values_of(graph_plan.streams, members)
        extra = values_of(plan.attached, members, ())
        # nodes noted alike come in runs (a subgraph's nodes, in order): the first node of a
        # run finds or makes the entry, which the run repeats
        starts = _run_starts((indexes, streams), (by_labels, own, extra))
        entries = []
        for i in starts:
            key = (graph_name, indexes[i], id(by_labels[i]), id(own[i]), streams[i], extra[i])
            entry = placed.get(key)
            if entry is None:
                index = indexes[i] if indexes[i] >= 0 else None
                touches, rule = provenance_of.of(graph_plan, partition, index, by_labels[i],
                                                 own[i])
                entry = placed[key] = (touches, NodeStream(streams[i], rule, extra[i]))
            entries.append(entry)
        lengths = np.diff([*starts, len(members)]).tolist()
        names += members
        provenance += chain.from_iterable(map(repeat, map(_FIRST, entries), lengths))
        nodes += chain.from_iterable(map(repeat, map(_SECOND, entries), lengths))
    main = plan.main_stream_num if plan.main_stream_num is not None else plan.next_stream
    return Allocation(graph=graph.name, mode="ge", rules=rules.name,
                      nodes=Columns(names, nodes), main_stream_num=main,
                      total_stream_num=max(plan.next_stream, main),
                      user_labels=MappingProxyType({  # the few nodes carrying one
                          name: tags.user_stream_label for name, tags in
                          compress(labels.items(), map(_USER_LABEL, labels.values()))}
                          if any(map(_USER_LABEL, labels.values())) else {}),
                      provenance=Columns(names, Derived(provenance, Touches.value)),
                      custom_stream_ids=plan.custom_stream_ids, rules_digest=rules.digest,
                      options=graph.options)


def _owners(compute: ComputeGraph, partition: GraphPartition | None, members: list[str]
            ) -> Sequence[int]:
    """Each member's subgraph index (-1: outside every subgraph, or no partition); read in
    G-order when the members are the whole graph (a graph's nodes come in G-order)."""
    if partition is None:
        return [-1] * len(members)
    at = partition.owner_at
    if len(members) == len(at):
        return at
    return tuple(map(at.__getitem__, map(compute.index.__getitem__, members)))


def _run_starts(numbers: Sequence[Sequence[int]], objects: Sequence[Sequence[object]]
                ) -> list[int]:
    """Where the runs of equal keys start: a value of a column of `numbers` changes, or an
    object of a column of `objects` (compared by identity)."""
    count = len(numbers[0])
    columns = [np.fromiter(column, np.int64, count) for column in numbers]
    columns += [np.fromiter(map(id, column), np.int64, count) for column in objects]
    changed = np.ones(count, bool)
    if count > 1:
        changed[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in columns])
    return np.flatnonzero(changed).tolist()


def _runs_by_graph(graph: Graph) -> Iterator[tuple[str, list[str]]]:
    """T-order as runs of consecutive nodes of one graph: (graph, node names)."""
    if not graph.subgraphs:  # most models: one run
        yield graph.root.name, list(graph.root.index)
        return
    for graph_name, run in groupby(graph.all_nodes(), attrgetter("graph")):
        yield graph_name, [node.name for node in run]
