"""MiniDAGStreamPass (ge-logical-streams.md section 6, example 7.14), checked value by value.

The expected streams and scores are computed by hand from the spec and typed in; the graphs
are in tests/goldens/dag/ (each file's comment shows the computation).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.errors import InputError, OptionError
from streamalloc.heuristic import mini_dag
from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.dag.allocate import DagStreams, dag_streams
from streamalloc.heuristic.dag.model import DagNode, MiniDag, build_mini_dag
from streamalloc.heuristic.dag.path_cover import min_path_cover
from streamalloc.heuristic.dag.profiling import Profile, load_profile, parse_csv
from streamalloc.heuristic.dag.residual import residual_graph
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.heuristic.plan import INVALID, ModelPlan
from streamalloc.ir.attrs import infer_attr
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.loaders.yaml_json import load_yaml_json
from streamalloc.ir.partition import partition_model
from streamalloc.passes import PassRecord
from streamalloc.rules.labelling import default_labels
from streamalloc.rules.loader import builtin_rules

DAG = Path(__file__).parent / "goldens" / "dag"
CASES = Path(__file__).parent / "goldens" / "cases"
N = INVALID
MODE = "ge.autoMultistreamParallelMode"


def streams_of(case: str) -> tuple[dict[str, int], tuple[int, ...], int]:
    """Final streams, custom stream ids and main_stream_num of one DAG case."""
    allocation = allocate_ge(load_graph(DAG / f"{case}.yaml"))
    return ({n: s.stream for n, s in allocation.nodes.items()}, allocation.custom_stream_ids,
            allocation.main_stream_num)


def dag_of(graph: Graph, strategy: str, limit: int) -> tuple[DagStreams, list[list[str]]]:
    """The DAG result of the root as the logical passes leave it (data-like nodes -1, else 0),
    with the units' node names."""
    streams = {n.name: INVALID if n.type == "Data" else 0 for n in graph.root.nodes}
    dag = build_mini_dag(graph.root, streams, default_labels(graph), load_profile(graph))
    result = dag_streams(dag, strategy, limit)
    members = residual_graph(dag).members
    names = [[graph.root.nodes[members[i]].name for i in u.nodes] for u in result.units]
    return result, names


def totals(result: DagStreams, unit: int) -> list[tuple[int, float]]:
    """(candidate stream, score) for the unit's decision."""
    decision = next(d for d in result.decisions if d.unit == unit)
    return [(s.stream, s.total) for s in decision.scores]


# --- worked example 7.14 ------------------------------------------------------------------

def test_example_7_14_final_streams() -> None:
    streams, custom, main = streams_of("ex7_14_two_chains")
    assert streams == {"d": N, "out": 0, "x1": 1, "x2": 1, "x3": 1, "y1": 2, "y2": 2, "y3": 2}
    assert ",".join(map(str, custom)) == "1,2,3"
    assert main == 3


def test_example_7_14_routes_and_scores() -> None:
    result, units = dag_of(load_graph(DAG / "ex7_14_two_chains.yaml"), "LoadBalance", 2)
    assert units == [["x1", "x2", "x3", "out"], ["y1", "y2", "y3"]]
    assert totals(result, 0) == [(0, 22.0)]          # the only candidate: a new stream
    assert totals(result, 1) == [(0, 35.0), (1, 25.0)]
    assert result.required == 2


def test_example_7_14_diamond_stays_on_one_dag_stream() -> None:
    streams, custom, main = streams_of("ex7_14_diamond")
    assert streams == {"d": N, "x": 1, "b": 1, "c": 1, "y": 1, "out": 0}
    assert custom == (1, 2) and main == 2
    result, units = dag_of(load_graph(DAG / "ex7_14_diamond.yaml"), "LoadBalance", 2)
    assert units == [["x", "b", "y", "out"], ["c"]]
    assert totals(result, 1) == [(0, 21.0), (1, 25.0)]


def test_explain_shows_the_dag_decision() -> None:
    allocation = allocate_ge(load_graph(DAG / "ex7_14_two_chains.yaml"))
    assert allocation.nodes["y1"].rule == "mini-dag"
    [note] = [t.note for t in allocation.provenance["y1"] if t.note.rule == "mini-dag"]
    assert note.stream == 2 and note.decides
    assert note.reason == "LoadBalance route 1 on DAG stream 1; scores 0: 35, 1 (new): 25"
    assert allocation.nodes["out"].rule != "mini-dag"  # NetOutput keeps its logical stream


# --- the other strategies -------------------------------------------------------------------

def test_main_stream_forced_route_and_a_new_stream() -> None:
    streams, custom, _ = streams_of("main_stream_split")
    assert streams == {"d": N, "a": 1, "b1": 1, "b2": 1, "b3": 1, "j": 1, "c1": 2, "c2": 2,
                       "c3": 2, "out": 0}
    assert custom == (1, 2, 3)
    result, units = dag_of(load_graph(DAG / "main_stream_split.yaml"), "MainStream", 2)
    assert units == [["a", "b1", "b2", "b3", "j", "out"], ["c1", "c2", "c3"]]
    assert totals(result, 0) == []                   # forced: level 0 holds only a
    assert totals(result, 1) == [(0, 12.0), (1, 8.0)]


def test_main_stream_tie_is_broken_by_the_components() -> None:
    streams, _, _ = streams_of("main_stream_tie")
    assert {s for n, s in streams.items() if n not in ("d", "out")} == {1}
    result, _ = dag_of(load_graph(DAG / "main_stream_tie.yaml"), "MainStream", 2)
    assert totals(result, 1) == [(0, 8.0), (1, 8.0)]  # equal totals, 0 cross edges wins


def test_main_stream_single_level_bonus_keeps_stream_zero() -> None:
    streams, custom, _ = streams_of("main_stream_single_levels")
    assert {s for n, s in streams.items() if n not in ("d", "out")} == {1}
    assert custom == (1, 2)
    result, units = dag_of(load_graph(DAG / "main_stream_single_levels.yaml"), "MainStream", 2)
    assert units == [["a", "b1", "b2", "b3", "out"], ["c1", "c2", "c3", "t1", "t2"]]
    assert totals(result, 1) == [(0, 4.0), (1, 8.0)]


def test_weighted_load_balance_from_a_profile() -> None:
    streams, custom, _ = streams_of("weighted_profile")
    assert streams == {"d": N, "x1": 1, "x2": 1, "scope/x3": 1, "y1": 1, "y2": 1, "y3": 1,
                       "out": 0}
    assert custom == (1, 2)
    result, _ = dag_of(load_graph(DAG / "weighted_profile.yaml"), "LoadBalance", 2)
    assert result.strategy == "WeightedLoadBalance"
    assert totals(result, 1) == [(0, 35.0), (1, 70.9375)]


def test_weighted_load_balance_without_profile_is_load_balance() -> None:
    text = (DAG / "ex7_14_two_chains.yaml").read_text()
    graph = load_yaml_json(DAG / "w.yaml", text.replace("LoadBalance:2", "WeightedLoadBalance:2"))
    allocation = allocate_ge(graph)
    assert {n: s.stream for n, s in allocation.nodes.items()} == streams_of("ex7_14_two_chains")[0]


def test_serial_labelled_node_gets_the_label_id() -> None:
    streams, custom, main = streams_of("serial_label")
    # logical: L 0, AIC 1 (next 2); DAG base 2: route [a, b, out] -> 2, label L -> 3
    assert streams == {"d": N, "a": 1, "s": 2, "b": 1, "out": 0}
    assert custom == (2, 3, 4) and main == 3
    graph = load_graph(DAG / "serial_label.yaml")
    streams0 = {n.name: INVALID if n.type == "Data" else 0 for n in graph.root.nodes}
    dag = build_mini_dag(graph.root, streams0, default_labels(graph), Profile())
    assert residual_graph(dag).succs == ((1,), (2,), ())  # a -> b through s, b -> out


def test_known_shape_subgraph_gets_its_own_base() -> None:
    text = (CASES / "subgraph_known_shape.yaml").read_text()
    graph = load_yaml_json(CASES / "x.yaml", text.replace(
        "name: ex7_4\n", "name: ex7_4\nattrs: {ge.autoMultistreamParallelMode: 'LoadBalance:2'}\n"))
    allocation = allocate_ge(graph)
    # logical pc 0, out 0, b1 0, h 1, bout 2 (next 3); root base 3 (pc), body base 5 (b1, h)
    assert allocation.custom_stream_ids == (3, 4, 5, 6)
    assert {n: s.stream for n, s in allocation.nodes.items()} == {
        "d": N, "pc": 2, "bd": N, "b1": 3, "h": 3, "bout": 1, "out": 0}


@pytest.mark.parametrize(("value", "written"), [(True, False), (False, True)])
def test_rts_label_node_keeps_its_stream_when_true(value: bool, written: bool) -> None:
    """The DAG adapter tests the value (the static passes test presence and leave such nodes
    without a stream, so the dynamic flow, where every node has one, shows the difference)."""
    builder = GraphBuilder("rts", options={"ENABLE_DYNAMIC_SHAPE_MULTI_STREAM": "1"},
                           dynamic_shape=True)
    builder.set_graph_attrs({MODE: infer_attr("LoadBalance:2")})
    builder.add_node("d", "Data")
    builder.add_node("a", "Relu", inputs=[DataInput("d")])
    builder.add_node("lbl", "LabelSet", engine="DNN_VM_RTS", control_inputs=["a"],
                     attrs={"_rts_label_node": infer_attr(value)})
    builder.add_node("b", "Relu", inputs=[DataInput("a")], control_inputs=["lbl"])
    allocation = allocate_ge(builder.build())
    notes = [t.note.rule for t in allocation.provenance["lbl"]]
    assert ("mini-dag" in notes) == written


# --- the dynamic flow ----------------------------------------------------------------------

def test_dynamic_flow_recompacts_by_node_ids() -> None:
    streams, custom, main = streams_of("dynamic_two_chains")
    assert streams == {"d": 0, "x1": 0, "x2": 0, "y1": 1, "y2": 1, "out": 0}
    assert custom == (1, 2, 3) and main == 2


def test_dynamic_flow_takes_the_forced_main_rule() -> None:
    graph = load_graph(DAG / "dynamic_two_chains.yaml")
    rules = builtin_rules("ge-dynamic-shape")
    plan = _plan_before(graph, "mini-dag")
    main_rule = rules.rule("dynamic-renumber")
    ctx = ModelContext(graph, partition_model(graph, default_labels(graph)),
                       default_labels(graph), forced_main=main_rule)
    given = mini_dag.MiniDagStream(rules.rule("mini-dag")).apply(ctx, plan).plan
    forced = [n for n in graph.all_nodes() if main_rule.matches(n)]
    assert forced and all(given.graphs[n.graph].streams[n.name] == 0 for n in forced)


def test_dynamic_flow_fails_on_an_invalid_mode() -> None:
    text = (DAG / "dynamic_two_chains.yaml").read_text().replace("LoadBalance:2", "LoadBalance:0")
    with pytest.raises(OptionError):
        allocate_ge(load_yaml_json(DAG / "x.yaml", text))


def _plan_before(graph: Graph, rule_name: str) -> ModelPlan:
    """The model plan just before `rule_name` runs (via the driver's observer)."""
    seen: dict[str, ModelPlan] = {}
    order = [r.name for r in builtin_rules("ge-dynamic-shape").rules]
    previous = order[order.index(rule_name) - 1]

    class Observe:
        def after_pass(self, record: PassRecord) -> None:
            if record.name == previous and isinstance(record.plan, ModelPlan):
                seen["plan"] = record.plan

    allocate_ge(graph, observer=Observe())
    return seen["plan"]


# --- modes ---------------------------------------------------------------------------------

def _graph(options: dict[str, str] | None = None, attr: str | None = None) -> Graph:
    builder = GraphBuilder("modes", options=options or {})
    if attr is not None:
        builder.set_graph_attrs({MODE: infer_attr(attr)})
    builder.add_node("d", "Data")
    builder.add_node("a", "Relu", inputs=[DataInput("d")])
    builder.add_node("b", "Relu", inputs=[DataInput("d")])
    builder.add_node("out", "NetOutput", inputs=[DataInput("a"), DataInput("b")])
    return builder.build()


@pytest.mark.parametrize("mode", ["LoadBalance:0", "LoadBalance:65", "Foo:2", "LoadBalance",
                                  "MainStream:x", "default"])
def test_invalid_mode_from_the_option_is_an_option_error(mode: str) -> None:
    with pytest.raises(OptionError) as error:
        allocate_ge(_graph({MODE: mode}))
    assert error.value.exit_code == 3
    assert "E10001" in str(error.value)


@pytest.mark.parametrize("mode", ["LoadBalance:0", "Foo:2"])
def test_invalid_mode_from_the_attribute_is_an_option_error(mode: str) -> None:
    with pytest.raises(OptionError):
        allocate_ge(_graph(attr=mode))


@pytest.mark.parametrize(("options", "attr"), [({}, None), ({}, "default"), ({MODE: "cv"}, None),
                                              ({}, "cv"), ({MODE: "Foo:2"}, "default")])
def test_no_dag_mode_leaves_the_plan_unchanged(options: dict[str, str], attr: str | None) -> None:
    graph = _graph(options, attr)
    allocation = allocate_ge(graph)
    assert allocation.custom_stream_ids == ()
    assert all(t.note.rule != "mini-dag" for ts in allocation.provenance.values() for t in ts)
    plan = ModelPlan(MappingProxyType({}), 0)
    rule = builtin_rules("ge-static-multi-stream").rule("mini-dag")
    ctx = ModelContext(graph, partition_model(graph, default_labels(graph)),
                       default_labels(graph))
    result = mini_dag.MiniDagStream(rule).apply(ctx, plan)
    assert result.plan is plan and not result.changed


def test_attribute_wins_over_the_option() -> None:
    streams = {n: s.stream for n, s in allocate_ge(_graph({MODE: "Foo:2"}, "LoadBalance:2"))
               .nodes.items()}
    # b's unit scores 15 on stream 0 and 15 on a new one; 0 cross edges decide
    assert streams == {"d": N, "a": 1, "b": 1, "out": 0}


def test_parse_dag_mode() -> None:
    assert mini_dag.parse_dag_mode(_graph({MODE: "MainStream:64"})) == ("MainStream", 64)
    assert mini_dag.parse_dag_mode(_graph(attr="WeightedLoadBalance:1")) == (
        "WeightedLoadBalance", 1)
    assert mini_dag.parse_dag_mode(_graph(attr="default")) is None


# --- profiling -----------------------------------------------------------------------------

def test_profile_matches_full_name_then_last_part() -> None:
    profile = Profile(parse_csv("Op Name,Task Duration(us)\na/b,1\nb,2\nc,3\n", "p.csv"))
    assert (profile.lookup("a/b"), profile.lookup("x/b"), profile.lookup("x/c"),
            profile.lookup("c/x")) == (1.0, 2.0, 3.0, None)


def test_profile_errors_teach(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="Task Duration"):
        parse_csv("name,cycles\na,1\n", "p.csv")
    with pytest.raises(InputError, match=r"p.csv:3: .* 'fast'"):
        parse_csv("Op Name,Task Duration(us)\na,1\nb,fast\n", "p.csv")
    graph = _graph({MODE: "LoadBalance:2", "MINIDAG_PROFILING_PATH": str(tmp_path / "no.csv")})
    with pytest.raises(InputError, match="cannot be read"):
        allocate_ge(graph)


def test_profile_path_is_relative_to_the_graph_file(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert streams_of("weighted_profile")[0]["y1"] == 1


def test_profiled_zero_or_invalid_stream_is_non_weight() -> None:
    graph = _graph()
    streams = {"d": INVALID, "a": 0, "b": 0, "out": 0}
    profile = Profile(parse_csv("Op Name,Task Duration(us)\nd,5\na,0\nb,4\n", "p.csv"))
    dag = build_mini_dag(graph.root, streams, default_labels(graph), profile)
    assert [(n.time, n.weighted) for n in dag.nodes] == [(0.0, False), (0.0, False),
                                                         (4.0, True), (-1.0, True)]


# --- determinism and properties --------------------------------------------------------------

@st.composite
def random_graphs(draw: st.DrawFn) -> Graph:
    """Small random static models: AI Core, AI CPU, HCCL and labelled nodes, control edges."""
    strategy = draw(st.sampled_from(["LoadBalance", "MainStream", "WeightedLoadBalance"]))
    builder = GraphBuilder("random")
    builder.set_graph_attrs({MODE: infer_attr(f"{strategy}:{draw(st.integers(1, 4))}")})
    builder.add_node("d", "Data")
    names = ["d"]
    for i in range(draw(st.integers(1, 14))):
        inputs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        controls = draw(st.lists(st.sampled_from(names[1:] or ["d"]), max_size=1))
        kind = draw(st.sampled_from(["Relu", "Relu", "Add", "NonZero", "HcomAllReduce"]))
        label = draw(st.sampled_from(["", "", "", "L1", "L2"]))
        builder.add_node(f"n{i}", kind, inputs=[DataInput(s) for s in inputs],
                         control_inputs=[c for c in controls if c not in inputs],
                         attrs={"_stream_label": infer_attr(label)} if label else None)
        names.append(f"n{i}")
    builder.add_node("out", "NetOutput", inputs=[DataInput(names[-1])])
    return builder.build()


@settings(max_examples=80, deadline=None)
@given(random_graphs())
def test_property_at_most_n_dag_streams_and_valid_streams(graph: Graph) -> None:
    _, limit = mini_dag.parse_dag_mode(graph) or ("", 0)
    allocation = allocate_ge(graph)
    plain = allocate_ge(_without_mode(graph))
    dag_streams_used = {t.note.stream for ts in allocation.provenance.values() for t in ts
                        if t.note.rule == "mini-dag" and " route " in t.note.reason}
    assert len(dag_streams_used) <= limit
    for name, node in allocation.nodes.items():
        assert (node.stream == INVALID) == (plain.nodes[name].stream == INVALID)
        assert node.stream == INVALID or 0 <= node.stream < allocation.main_stream_num
    assert allocate_ge(graph) == allocation  # deterministic


def _without_mode(graph: Graph) -> Graph:
    return replace(graph, root=replace(graph.root, attrs=MappingProxyType({})))


@st.composite
def mini_dags(draw: st.DrawFn) -> MiniDag:
    """Random mini DAGs: forward edges, some serial and some non-weight nodes."""
    size = draw(st.integers(1, 16))
    nodes = tuple(DagNode(f"v{i}", i, draw(st.sampled_from([-1.0, -1.0, 0.0, 3.0])),
                          draw(st.sampled_from(["", "", "", "L"])), False) for i in range(size))
    succs = tuple(tuple(draw(st.lists(st.integers(i + 1, size - 1), max_size=3)))
                  if i + 1 < size else () for i in range(size))
    return MiniDag(nodes, succs)


@settings(max_examples=150, deadline=None)
@given(mini_dags(), st.sampled_from(["LoadBalance", "MainStream", "WeightedLoadBalance"]),
       st.integers(1, 5))
def test_property_routes_are_a_minimum_path_cover(dag: MiniDag, strategy: str,
                                                   limit: int) -> None:
    residual = residual_graph(dag)
    routes = min_path_cover(residual)
    assert sorted(n for r in routes for n in r) == list(range(len(residual)))
    edges = set(residual.edges())
    assert all((r[k], r[k + 1]) in edges for r in routes for k in range(len(r) - 1))
    split = nx.DiGraph()
    split.add_nodes_from((("L", u) for u in range(len(residual))), bipartite=0)
    split.add_nodes_from((("R", u) for u in range(len(residual))), bipartite=1)
    split.add_edges_from((("L", u), ("R", v)) for u, v in edges)
    top = [("L", u) for u in range(len(residual))]
    matched = len(nx.bipartite.hopcroft_karp_matching(split.to_undirected(), top)) // 2
    assert len(routes) == len(residual) - matched
    result = dag_streams(dag, strategy, limit)
    physical = {result.offsets[residual.members[u]] for u in range(len(residual))}
    assert physical == set(range(len(physical))) and len(physical) <= limit
    labels = {n.serial for n in dag.nodes if n.serial}
    assert result.required == len(physical) + len(labels)


def test_same_input_twice_gives_the_same_output() -> None:
    first = allocate_ge(load_graph(DAG / "main_stream_split.yaml"))
    second = allocate_ge(load_graph(DAG / "main_stream_split.yaml"))
    assert first == second
