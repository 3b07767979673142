"""Properties of the GE heuristic on random graphs, in the three shipped flows.

Graphs come from `streamalloc.ir.synthetic.layered_graph` and from a hypothesis strategy that
builds small random DAGs mixing AI Core, AI CPU, HCCL (fused AllReduce), GE-local, RTS (Cmo)
and host-CPU nodes, stream labels, user labels, parallel groups, attached-stream requests and
sometimes one or two known-shape subgraphs. Each property is what the spec guarantees, no
more: e.g. the "ids 0..k-1" property holds only where quirk Q1 cannot arise (every subgraph
gets at least one fresh stream: its first compute node is an unlabelled AI Core op fed by its
Data node). Settings are derandomized so that a run is reproducible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamalloc.allocation import Allocation, allocation_text
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir import AttrValue, DataInput, GraphBuilder, NamedAttrs
from streamalloc.ir.graph import Graph, PartitionEntry
from streamalloc.ir.partition import partition_model
from streamalloc.ir.synthetic import layered_graph
from streamalloc.rules.labelling import default_labels
from streamalloc.rules.loader import default_rule_set

SETTINGS = settings(max_examples=120, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODES = ("multi", "single", "dynamic")
AIC, HCCL = "AIcoreEngine", "DNN_HCCL"
# engines follow from the default op table
OPS = ("Relu", "MatMul", "NonZero", "HcomAllReduce", "HcomBroadcast", "Reshape", "Identity",
       "NoOp", "Cmo", "ConvBnBiasHost")
NO_LABEL_OPS = tuple(op for op in OPS if op != "Cmo")  # a Cmo node is labelled (spec 1.5)


@dataclass(frozen=True)
class NodeSpec:
    name: str
    type: str
    inputs: tuple[str, ...]
    controls: tuple[str, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    subgraph: str | None = None  # the subgraph a PartitionedCall owns


@dataclass(frozen=True)
class ModelSpec:
    """Plain description of a random model, so that it can be built twice."""

    mode: str
    options: tuple[tuple[str, str], ...]
    root: tuple[NodeSpec, ...]
    bodies: tuple[tuple[NodeSpec, ...], ...] = ()  # body i is subgraph "s<i>"


def _attached_request(force: bool) -> AttrValue:
    entry = NamedAttrs("", {
        "_attached_resource_name": AttrValue("string", "aux"),
        "_attached_resource_required_flag": AttrValue("bool", True),
        "_attached_resource_force_reuse": AttrValue("bool", force)})
    return AttrValue("list_named_attrs", (entry,))


def build(spec: ModelSpec, *, reverse: bool = False) -> Graph:
    """The Graph of a ModelSpec; `reverse` declares the subgraphs in the other order (GE has no
    such order: the result must not depend on it)."""
    builder = GraphBuilder(f"h_{spec.mode}", options=dict(spec.options),
                           dynamic_shape=spec.mode == "dynamic")
    graphs = [(f"s{i}", body) for i, body in enumerate(spec.bodies)]
    for name, _ in reversed(graphs) if reverse else graphs:
        builder.add_subgraph(name)
    for graph, nodes in [(None, spec.root), *graphs]:
        for n in nodes:
            attrs = {k: v if isinstance(v, AttrValue) else AttrValue(
                "int" if isinstance(v, int) else "string", v) for k, v in n.attrs}
            builder.add_node(n.name, n.type, graph=graph, inputs=[DataInput(i) for i in n.inputs],
                             control_inputs=n.controls, attrs=attrs,
                             subgraphs=(("f", n.subgraph),) if n.subgraph else ())
    return builder.build()


@st.composite
def _attrs(draw: st.DrawFn, op: str, labels: bool) -> tuple[tuple[str, Any], ...]:
    attrs: list[tuple[str, Any]] = []
    if labels:
        # plain and user labels from separate namespaces: a plain label equal to a user label
        # would let AllReduce-parallel move user-labelled nodes (2.8 compares stream labels)
        plain = draw(st.sampled_from([None] * 8 + ["L1", "L2"]))
        user = draw(st.sampled_from([None] * 8 + ["U1", "U2"]))
        if plain:
            attrs.append(("_stream_label", plain))
        if user:
            attrs.append(("_user_stream_label", user))
    group = draw(st.sampled_from([None] * 6 + ["g1", "g2", "-1"]))
    if group:
        attrs.append(("_parallel_group", group))
    if op == "HcomAllReduce":
        fusion = draw(st.sampled_from([None, 0, 1, 2]))
        if fusion is not None:
            attrs.append(("fusion", fusion))
    if op == "MatMul" and draw(st.booleans()):
        attrs.append(("_attached_stream_info_list", _attached_request(draw(st.booleans()))))
    return tuple(attrs)


@st.composite
def _nodes(draw: st.DrawFn, prefix: str, first: list[NodeSpec], count: int, *, labels: bool,
           owners: int) -> list[NodeSpec]:
    nodes = list(first)
    names = [n.name for n in nodes]
    ops = OPS if labels else NO_LABEL_OPS
    for i in range(count):
        op = draw(st.sampled_from(ops))
        # chains (the previous node as the only input) make isolated nodes for Optimize
        inputs = draw(st.one_of(st.just([names[-1]]), st.lists(
            st.sampled_from(names), min_size=1, max_size=2, unique=True)))
        controls = [c for c in draw(st.sampled_from([(), (), (), (names[0],), (names[-1],)]))
                    if c not in inputs]
        nodes.append(NodeSpec(f"{prefix}{i}", op, tuple(inputs), tuple(controls),
                              draw(_attrs(op, labels))))
        names.append(f"{prefix}{i}")
    for i in range(owners):
        nodes.append(NodeSpec(f"pc{i}", "PartitionedCall", (draw(st.sampled_from(names)),),
                              subgraph=f"s{i}"))
        names.append(f"pc{i}")
    used = {i for n in nodes for i in (*n.inputs, *n.controls)}
    sinks = tuple(n for n in names if n not in used)
    nodes.append(NodeSpec(f"{prefix}out", "NetOutput", sinks))
    return nodes


def _options(draw: st.DrawFn, mode: str) -> dict[str, str]:
    options: dict[str, str] = {}
    if draw(st.booleans()):
        options["ge.hcomParallel"] = "1"
    parallel = draw(st.sampled_from(["", "AIcoreEngine:2", "AIcoreEngine:3,DNN_VM_AICPU_ASCEND:2",
                                     "DNN_VM_GE_LOCAL:2"]))
    if parallel:
        options["ge.streamMaxParallelNum"] = parallel
    if draw(st.booleans()):
        options["ge.exec.memoryOptimizationPolicy"] = "MemoryPriority"
    if mode == "single":
        options["ge.enableSingleStream"] = "true"
    if mode == "dynamic":
        options["ENABLE_DYNAMIC_SHAPE_MULTI_STREAM"] = "1"
        options["ac_parallel_enable"] = draw(st.sampled_from(["", "0", "1"]))
    return options


@st.composite
def models(draw: st.DrawFn, mode: str) -> ModelSpec:
    """A random small model in one of the three flows."""
    labels = mode != "single"  # single-stream mode rejects every stream label (E10055)
    count = draw(st.sampled_from([0, 0, 1, 2]))
    sources = [NodeSpec("d", "Data", ())]
    if draw(st.booleans()):
        sources.append(NodeSpec("w", "Const", ()))
    root = draw(_nodes("r", sources, draw(st.integers(1, 9)), labels=labels, owners=count))
    bodies = []
    for i in range(count):
        # the first compute node is an unlabelled AI Core op without preds: a fresh stream, so
        # quirk Q1 (2.4.5) cannot arise in this subgraph
        first = [NodeSpec(f"b{i}d", "Data", (), attrs=(("_parent_node_index", 0),)),
                 NodeSpec(f"b{i}first", "Relu", (f"b{i}d",))]
        bodies.append(tuple(draw(_nodes(f"b{i}_", first, draw(st.integers(0, 5)),
                                        labels=labels, owners=0))))
    return ModelSpec(mode, tuple(sorted(_options(draw, mode).items())), tuple(root),
                     tuple(bodies))


def _layered(seed: int, mode: str, options: Mapping[str, str]) -> Graph:
    graph = layered_graph(40 + seed % 60, seed=seed, label_every=0 if mode == "single" else 7)
    extra = {"single": {"ge.enableSingleStream": "true"},
             "dynamic": {"ENABLE_DYNAMIC_SHAPE_MULTI_STREAM": "1"}}.get(mode, {})
    return replace(graph, dynamic_shape=mode == "dynamic",
                   options=MappingProxyType({**options, **extra}))


def streams(allocation: Allocation) -> dict[str, int]:
    return {n: s.stream for n, s in allocation.nodes.items()}


def check_invariants(graph: Graph, allocation: Allocation, mode: str) -> None:
    """Every property of the module for one allocation."""
    assert set(allocation.nodes) == {n.name for n in graph.all_nodes()}
    assert allocation_text(allocate_ge(graph)) == allocation_text(allocation)
    attached = allocation.attached_stream_ids
    assert attached == tuple(range(allocation.main_stream_num, allocation.total_stream_num))
    _deciding_rules(allocation, default_rule_set(graph).run_order())
    if mode == "dynamic":
        _dynamic_ranges(allocation)
        off = {k: v for k, v in graph.options.items() if k != "ENABLE_DYNAMIC_SHAPE_MULTI_STREAM"}
        single = allocate_ge(replace(graph, options=MappingProxyType(off)))
        assert set(streams(single).values()) == {0} and single.total_stream_num == 1  # 4
        return
    _static_streams(graph, allocation)
    used = {s.stream for s in allocation.nodes.values() if s.stream >= 0}
    assert used == set(range(allocation.main_stream_num))  # compact; no Q1 by construction
    if mode == "single":
        root = {allocation.stream(n.name) for n in graph.root.nodes} - {-1}
        assert root <= {0}
        assert used <= {0}  # known-shape subgraph: the parent's stream
    else:
        _user_labels_share(graph, allocation)
        _hccl_streams_clean(graph, allocation)


def _deciding_rules(allocation: Allocation, run_order: Mapping[str, int]) -> None:
    """A node's rule is that of its last touch (in run order) that decides, "initial" when
    none does: the rule is made with the allocation, the touches when they are read."""
    for name, entry in allocation.nodes.items():
        touches = allocation.provenance[name]
        order = [run_order.get(t.note.rule, -1) for t in touches]
        assert order == sorted(order), name  # in run order
        deciding = [t.note.rule for t in touches if t.note.decides]
        assert entry.rule == (deciding[-1] if deciding else "initial"), name


def _static_streams(graph: Graph, allocation: Allocation) -> None:
    """Data-like nodes outside subgraphs -1; nodes of non-skip subgraphs >= 0 (2.6, 2.9)."""
    for name, partition in partition_model(graph, default_labels(graph)).items():
        for outside in partition.outside:
            assert allocation.stream(outside) == -1, outside
        for sg in partition.subgraphs:
            if not sg.engine.skip_assign_stream:
                assert all(allocation.stream(n) >= 0 for n in sg.nodes), (name, sg.id)


def _dynamic_ranges(allocation: Allocation) -> None:
    """4.4: every node on a stream in 0..main-1 (INVALID and forced-main nodes on 0)."""
    assert allocation.main_stream_num >= 1
    assert all(0 <= s.stream < allocation.main_stream_num for s in allocation.nodes.values())


def _user_labels_share(graph: Graph, allocation: Allocation) -> None:
    """Nodes of one graph with one user stream label share a stream (1.5, 2.2)."""
    partitions = partition_model(graph, default_labels(graph))
    for compute in graph.graphs():
        groups: dict[str, set[int]] = defaultdict(set)
        for node in compute.nodes:
            user = node.attr("_user_stream_label")
            if user and node.name in partitions[compute.name].subgraph_of:
                groups[str(user)].add(allocation.stream(node.name))
        assert all(len(s) == 1 for s in groups.values()), groups


def _hccl_streams_clean(graph: Graph, allocation: Allocation) -> None:
    """An AI Core node shares the stream of an HCCL node still on its independent stream only
    when it was moved there (optimize-ineffective, parallel group "-1" following an HCCL
    producer) or its subgraph continues on its parent's stream, which may itself have been
    moved onto an HCCL stream (skipped-engine, optimize-ineffective)."""
    hccl = {allocation.stream(n.name) for n in graph.all_nodes()
            if n.engine == HCCL and allocation.nodes[n.name].rule == "independent-stream"}
    for node in graph.all_nodes():
        result = allocation.nodes[node.name]
        if node.engine != AIC or result.stream not in hccl:
            continue
        parent = graph.graph(node.graph).parent
        inherited = parent is not None and allocation.stream(parent) == result.stream
        assert inherited or result.rule in ("optimize-ineffective", "parallel-group"), node.name


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(data=st.data())
def test_random_models(mode: str, data: st.DataObject) -> None:
    spec = data.draw(models(mode))
    graph = build(spec)
    allocation = allocate_ge(graph)
    check_invariants(graph, allocation, mode)
    assert allocation_text(allocate_ge(build(spec))) == allocation_text(allocation)
    # GE has no "file order" of subgraphs: declaring them the other way round changes nothing
    assert allocation_text(allocate_ge(build(spec, reverse=True))) == allocation_text(allocation)
    # the partition given explicitly (formats.md 1) is the automatic one: same allocation
    entries = tuple(PartitionEntry(sg.id, sg.engine_name, sg.stream_label, sg.nodes)
                    for part in partition_model(graph, default_labels(graph)).values()
                    for sg in part.subgraphs)
    explicit = allocate_ge(replace(graph, partition=entries))
    assert allocation_text(explicit) == allocation_text(allocation)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=8, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(0, 10_000), hcom=st.booleans(),
       parallel=st.sampled_from(["", "AIcoreEngine:3", "AIcoreEngine:2,DNN_HCCL:2"]))
def test_layered_graphs(mode: str, seed: int, hcom: bool, parallel: str) -> None:
    options = {"ge.hcomParallel": "1"} if hcom else {}
    if parallel:
        options["ge.streamMaxParallelNum"] = parallel
    graph = _layered(seed, mode, options)
    allocation = allocate_ge(graph)
    check_invariants(graph, allocation, mode)
    if mode == "single":
        assert allocation.main_stream_num == 1
