"""GraphBuilder verification, GE's topological sorts (G-order) and the Graph helpers.

Expected orders are computed by hand from ge-logical-streams.md 1.1 and written out literally.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.errors import GraphLoadError, OptionError
from streamalloc.ir import topo
from streamalloc.ir.builder import GraphBuilder, parse_ref
from streamalloc.ir.engines import default_engine_table
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.tensor import TensorDesc

# A node spec for the helpers: (name, type, inputs, control_inputs); inputs as "node[:port]".
Spec = tuple[str, str, Sequence[str], Sequence[str]]


def n(name: str, type: str, inputs: Sequence[str] = (), ctrl: Sequence[str] = ()) -> Spec:
    """Shorthand for one node spec."""
    return (name, type, inputs, ctrl)


def builder(specs: Sequence[Spec], *, options: dict[str, str] | None = None,
            source: str = "m.yaml") -> GraphBuilder:
    """A builder holding `specs` in the root graph, each node's origin `source:<index>`."""
    b = GraphBuilder("g", source=source, options=options)
    for i, (name, type, inputs, ctrl) in enumerate(specs):
        b.add_node(name, type, inputs=[parse_ref(r) for r in inputs], control_inputs=ctrl,
                   origin=f"{source}:{i + 1}")
    return b


def order_of(specs: Sequence[Spec], order: str = "given", **kw: Any) -> list[str]:
    """The root G-order the builder settles on."""
    return [node.name for node in builder(specs, **kw).build(order=order).root.nodes]


def cycle_in(message: str) -> list[str]:
    """The node list of a "... has a cycle: a -> b -> a" message (closing repeat dropped)."""
    match = re.search(r"has a cycle: (.*)$", message)
    assert match, message
    names = match.group(1).split(" -> ")
    assert names[0] == names[-1], message
    return names[:-1]


def rotations(cycle: list[str]) -> list[list[str]]:
    """Every rotation of a cycle (any start node describes the same cycle)."""
    return [cycle[i:] + cycle[:i] for i in range(len(cycle))]


# ---------------------------------------------------------------------------------------------
# Structural errors
# ---------------------------------------------------------------------------------------------

def test_duplicate_node_name_in_one_graph() -> None:
    b = builder([n("a", "Data")])
    with pytest.raises(GraphLoadError) as err:
        b.add_node("a", "Relu", origin="m.yaml:7")
    msg = str(err.value)
    assert msg.startswith("m.yaml:7: duplicate node name 'a'")
    assert "first defined at m.yaml:1" in msg
    assert "unique across all graphs" in msg


def test_duplicate_node_name_across_root_and_subgraph() -> None:
    b = builder([n("a", "Data")])
    b.add_subgraph("body", origin="m.yaml:20")
    with pytest.raises(GraphLoadError) as err:
        b.add_node("a", "Data", graph="body", origin="m.yaml:22")
    msg = str(err.value)
    assert msg.startswith("m.yaml:22: duplicate node name 'a'")
    assert "first defined at m.yaml:1" in msg


def test_dangling_data_input() -> None:
    b = builder([n("a", "Data"), n("b", "Relu", ["zzz:0"])])
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == ("m.yaml:2: node 'b' input 0 (zzz:0) in graph 'g': "
                              "no node named 'zzz'")


def test_dangling_control_input() -> None:
    b = builder([n("a", "Data"), n("b", "Relu", ["a"], ["ghost"])])
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == ("m.yaml:2: node 'b' control input 'ghost' in graph 'g': "
                              "no node named 'ghost'")


def test_edge_crossing_graphs() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data", origin="m.yaml:1")
    b.add_node("w", "While", inputs=[DataInput("a")], subgraphs=[("body", "body")],
               origin="m.yaml:2")
    b.add_subgraph("body", origin="m.yaml:10")
    b.add_node("x", "Relu", graph="body", inputs=[DataInput("a")], origin="m.yaml:12")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == ("m.yaml:12: node 'x' input 0 (a:0) in graph 'body': 'a' is in "
                              "graph 'g'; edges cannot cross graphs")


def test_control_edge_crossing_graphs() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data", origin="m.yaml:1")
    b.add_node("w", "While", inputs=[DataInput("a")], subgraphs=[("body", "body")])
    b.add_subgraph("body")
    b.add_node("x", "NoOp", graph="body", control_inputs=["a"], origin="m.yaml:12")
    with pytest.raises(GraphLoadError, match=r"^m\.yaml:12: node 'x' control input 'a' in graph "
                                             r"'body': 'a' is in graph 'g'; edges cannot cross"):
        b.build()


def test_output_port_beyond_declared_outputs() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data", outputs=[TensorDesc((1,), "float16")], origin="m.yaml:1")
    b.add_node("b", "Relu", inputs=[DataInput("a", 1)], origin="m.yaml:5")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == "m.yaml:5: node 'b' input 0 (a:1): node 'a' has outputs 0..0, not 1"


def test_output_port_free_when_outputs_not_declared() -> None:
    graph = builder([n("a", "Data"), n("b", "Relu", ["a:5"])]).build()
    assert graph.node("b").inputs == (DataInput("a", 5),)


def test_unknown_engine_lists_known_engines() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data", engine="NoSuchEngine", origin="m.yaml:3")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    msg = str(err.value)
    known = ", ".join(sorted(default_engine_table().engines))
    assert msg == (f"m.yaml:3: node 'a' field 'engine': unknown engine 'NoSuchEngine'; "
                   f"known: {known} (add it under 'engines')")
    assert "AIcoreEngine" in msg and "DNN_HCCL" in msg


def test_empty_graph() -> None:
    with pytest.raises(GraphLoadError) as err:
        GraphBuilder("g", source="m.yaml").build()
    assert str(err.value) == "m.yaml: graph 'g' has no nodes"


def test_subgraph_not_owned() -> None:
    b = builder([n("a", "Data")])
    b.add_subgraph("orphan", origin="m.yaml:9")
    b.add_node("o", "Data", graph="orphan")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == ("m.yaml:9: subgraph 'orphan' is not owned by any node (list it "
                              "under a node's 'subgraphs')")


def test_subgraph_owned_twice() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data")
    b.add_node("w1", "While", inputs=[DataInput("a")], subgraphs=[("body", "body")])
    b.add_node("w2", "While", inputs=[DataInput("a")], subgraphs=[("body", "body")],
               origin="m.yaml:4")
    b.add_subgraph("body")
    b.add_node("x", "Data", graph="body")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == "m.yaml:4: subgraph 'body' is owned by both 'w1' and 'w2'"


def test_node_names_unknown_subgraph() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("a", "Data")
    b.add_node("w", "While", inputs=[DataInput("a")],
               subgraphs=[("cond", "cond"), ("body", "nope")], origin="m.yaml:2")
    b.add_subgraph("cond")
    b.add_node("c", "Data", graph="cond")
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == ("m.yaml:2: node 'w' subgraph 'body' names unknown subgraph "
                              "'nope'; known: ['cond']")


def test_node_names_unknown_subgraph_when_none_declared() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("w", "PartitionedCall", subgraphs=[("f", "f")], origin="m.yaml:2")
    with pytest.raises(GraphLoadError, match=r"unknown subgraph 'f'; known: none$"):
        b.build()


def test_node_placed_in_unknown_graph() -> None:
    b = GraphBuilder("g", source="m.yaml")
    with pytest.raises(GraphLoadError, match=r"node 'x' is placed in unknown graph 'nowhere'"):
        b.add_node("x", "Data", graph="nowhere")


def test_cycle_of_two() -> None:
    b = builder([n("a", "Relu", ["b"]), n("b", "Relu", ["a"])])
    with pytest.raises(GraphLoadError) as err:
        b.build()
    msg = str(err.value)
    assert msg.startswith("m.yaml: graph 'g' has a cycle: ")
    assert cycle_in(msg) in rotations(["a", "b"])


def test_cycle_of_three_with_tail_lists_only_the_cycle() -> None:
    # d -> a -> b -> c -> a, and c -> t: t is stuck behind the cycle but is not on it
    specs = [n("d", "Data"), n("a", "Relu", ["d", "c"]), n("b", "Relu", ["a"]),
             n("c", "Relu", ["b"]), n("t", "Relu", ["c"])]
    for order in ("given", "ge"):
        with pytest.raises(GraphLoadError) as err:
            builder(specs).build(order=order)
        assert cycle_in(str(err.value)) in rotations(["a", "b", "c"])


def test_cycle_through_control_edge() -> None:
    specs = [n("d", "Data"), n("a", "Relu", ["d"], ["c"]), n("b", "Relu", ["a"]),
             n("c", "Relu", ["b"])]
    with pytest.raises(GraphLoadError) as err:
        builder(specs, options={"ge.topoSortingMode": "0"}).build()
    assert cycle_in(str(err.value)) in rotations(["a", "b", "c"])


def test_self_loop() -> None:
    b = builder([n("d", "Data"), n("a", "Relu", ["d", "a"])])
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value) == "m.yaml: graph 'g' has a cycle: a -> a"


def test_cycle_in_subgraph_names_the_subgraph() -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_node("w", "PartitionedCall", subgraphs=[("f", "f")])
    b.add_subgraph("f", origin="m.yaml:5")
    b.add_node("x", "Relu", graph="f", control_inputs=["y"])
    b.add_node("y", "Relu", graph="f", control_inputs=["x"])
    with pytest.raises(GraphLoadError) as err:
        b.build()
    assert str(err.value).startswith("m.yaml:5: graph 'f' has a cycle: ")
    assert cycle_in(str(err.value)) in rotations(["x", "y"])


def test_topo_cycle_error_carries_the_cycle() -> None:
    succ = {"a": ["b"], "b": ["c"], "c": ["a"], "s": ["a"]}
    with pytest.raises(topo.CycleError) as err:
        topo.dfs_order(["s", "a", "b", "c"], succ.__getitem__, dict.fromkeys(succ, "Relu"))
    assert err.value.cycle in rotations(["a", "b", "c"])


# ---------------------------------------------------------------------------------------------
# G-order
# ---------------------------------------------------------------------------------------------

# d feeds p and q on port 0; DFS releases p then q and takes the last released (q) first.
FAN = [n("d", "Data"), n("p", "Relu", ["d"]), n("q", "Relu", ["d"])]


def test_given_topological_order_is_kept() -> None:
    assert order_of(FAN, "given") == ["d", "p", "q"]


def test_given_non_topological_order_is_resorted_with_dfs() -> None:
    specs = [n("p", "Relu", ["d"]), n("d", "Data"), n("q", "Relu", ["d"])]
    assert order_of(specs, "given") == ["d", "q", "p"]


def test_ge_order_always_applies_dfs() -> None:
    assert order_of(FAN, "ge") == ["d", "q", "p"]


def test_dfs_by_hand() -> None:
    # Sources in list order are k (Const), d (Data), e (Data): Data first (d, e), then k.
    # d releases x (port 0) then y (port 1); y was pushed last and runs first. z waits for both.
    # e releases nothing (u still waits for k); k's control edge releases u.
    specs = [n("k", "Const"), n("x", "Relu", ["d:0"]), n("d", "Data"), n("y", "Relu", ["d:1"]),
             n("z", "Add", ["x", "y"]), n("e", "Data"), n("u", "Relu", ["e"], ["k"])]
    assert order_of(specs, "ge") == ["d", "y", "x", "z", "e", "k", "u"]


def test_dfs_control_successors_are_released_after_data_consumers() -> None:
    # d releases p, q (data, link order) then c (control): c runs first, then q, then p.
    specs = [*FAN, n("c", "NoOp", (), ["d"])]
    assert order_of(specs, "ge") == ["d", "c", "q", "p"]


def test_dfs_highest_output_index_first_regardless_of_list_order() -> None:
    # hi reads d:2 and is listed first; lo reads d:0. Release is by port: lo, hi -> hi first.
    specs = [n("d", "Data"), n("hi", "Relu", ["d:2"]), n("lo", "Relu", ["d:0"])]
    assert order_of(specs, "ge") == ["d", "hi", "lo"]
    specs = [n("d", "Data"), n("lo", "Relu", ["d:0"]), n("hi", "Relu", ["d:2"])]
    assert order_of(specs, "ge") == ["d", "hi", "lo"]


def test_dfs_data_like_sources_first() -> None:
    specs = [n("c", "Const"), n("v", "Variable"), n("s", "Recv"), n("d", "Data"),
             n("r", "RefData"), n("a", "AippData")]
    assert order_of(specs, "ge") == ["s", "d", "r", "a", "c", "v"]


def test_dfs_takes_released_nodes_before_the_next_source() -> None:
    specs = [n("d1", "Data"), n("d2", "Data"), n("x", "Relu", ["d1"]), n("y", "Relu", ["x"]),
             n("z", "Relu", ["d2"])]
    assert order_of(specs, "ge") == ["d1", "x", "y", "d2", "z"]


# A loop: Merge reads Enter and NextIteration; the NextIteration edge is a back edge.
LOOP = [n("enter", "Data"), n("merge", "Merge", ["enter", "next"]), n("body", "Add", ["merge"]),
        n("next", "NextIteration", ["body"])]


def test_next_iteration_back_edge_does_not_count() -> None:
    assert order_of(LOOP, "given") == ["enter", "merge", "body", "next"]
    assert order_of(list(reversed(LOOP)), "given") == ["enter", "merge", "body", "next"]
    assert order_of(LOOP, "ge", options={"ge.topoSortingMode": "0"}) == [
        "enter", "merge", "body", "next"]


def test_ref_next_iteration_back_edge_does_not_count() -> None:
    specs = [n("enter", "Data"), n("merge", "RefMerge", ["enter", "next"]),
             n("next", "RefNextIteration", ["merge"])]
    assert order_of(specs, "ge") == ["enter", "merge", "next"]


def test_next_iteration_control_edge_still_counts() -> None:
    specs = [n("enter", "Data"), n("m", "Relu", ["enter"], ["next"]),
             n("next", "NextIteration", ["m"])]
    with pytest.raises(GraphLoadError) as err:
        builder(specs).build()
    assert cycle_in(str(err.value)) in rotations(["m", "next"])


# d releases B, b, a (link order). DFS takes a, b, B; BFS queues them byte-wise: B, a, b.
CASE = [n("d", "Data"), n("B", "Relu", ["d"]), n("b", "Relu", ["d"]), n("a", "Relu", ["d"])]


def test_topo_sorting_mode_0_is_bfs_with_bytewise_names() -> None:
    assert order_of(CASE, "given", options={"ge.topoSortingMode": "0"}) == ["d", "B", "a", "b"]
    assert order_of(CASE, "ge", options={"ge.topoSortingMode": "0"}) == ["d", "B", "a", "b"]


def test_topo_sorting_mode_1_is_dfs() -> None:
    assert order_of(CASE, "given", options={"ge.topoSortingMode": "1"}) == ["d", "a", "b", "B"]
    assert order_of(CASE, "given") == ["d", "B", "b", "a"]  # unset: the given order is kept


def test_bfs_by_hand() -> None:
    # d releases b, A, a -> queue A, a, b. A releases B (queued after b); b releases c.
    specs = [n("d", "Data"), n("b", "Relu", ["d"]), n("A", "Relu", ["d"]), n("a", "Relu", ["d"]),
             n("c", "Relu", ["b"]), n("B", "Relu", ["A"])]
    assert order_of(specs, "ge", options={"ge.topoSortingMode": "0"}) == [
        "d", "A", "a", "b", "B", "c"]
    assert order_of(specs, "ge", options={"ge.topoSortingMode": "1"}) == [
        "d", "a", "A", "B", "b", "c"]


def test_bfs_takes_next_source_only_when_queue_is_empty() -> None:
    specs = [n("s1", "Data"), n("s2", "Data"), n("x", "Relu", ["s1"]), n("y", "Relu", ["x"]),
             n("z", "Relu", ["s2"])]
    assert order_of(specs, "ge", options={"ge.topoSortingMode": "0"}) == [
        "s1", "x", "y", "s2", "z"]


def test_bfs_takes_data_sources_first() -> None:
    # GE's SortNodes seeds both sorts: Data-like sources first (list order), then the others.
    specs = [n("k", "Const"), n("d", "Data"), n("x", "Add", ["k", "d"])]
    assert order_of(specs, "ge", options={"ge.topoSortingMode": "0"}) == ["d", "k", "x"]


def test_bfs_orders_subgraphs_too() -> None:
    b = GraphBuilder("g", options={"ge.topoSortingMode": "0"})
    b.add_node("w", "PartitionedCall", subgraphs=[("f", "f")])
    b.add_subgraph("f")
    for name, type, inputs, ctrl in CASE:
        b.add_node(name, type, graph="f", inputs=[parse_ref(r) for r in inputs],
                   control_inputs=ctrl)
    assert [x.name for x in b.build().graph("f").nodes] == ["d", "B", "a", "b"]


@pytest.mark.parametrize("value", ["4", "bfs", " 0", "-1"])
def test_invalid_topo_sorting_mode(value: str) -> None:
    b = builder(FAN, options={"ge.topoSortingMode": value})
    with pytest.raises(OptionError) as err:
        b.build()
    assert str(err.value) == (f"m.yaml: option ge.topoSortingMode is {value!r}; "
                              "valid: '', '0', '1', '2', '3'")


def test_index_and_adjacency_follow_the_final_order() -> None:
    graph = builder([n("c", "NoOp", (), ["d"]), n("p", "Relu", ["d:1", "d:0"]),
                     n("d", "Data")]).build()
    root = graph.root
    assert [x.name for x in root.nodes] == ["d", "c", "p"]
    assert dict(root.index) == {"d": 0, "c": 1, "p": 2}
    # consumers by output port, then link order; control successors after data consumers
    assert [(c.port, c.node, c.slot) for c in root.consumers["d"]] == [(0, "p", 1), (1, "p", 0)]
    assert root.successors("d") == ("p", "p", "c")


# ---------------------------------------------------------------------------------------------
# Property: GE's sorts on random DAGs
# ---------------------------------------------------------------------------------------------

TYPES = ("Data", "Const", "Relu", "Recv", "Variable")


@st.composite
def random_dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """A DAG over n0..nk (edges go up the hidden numbering), listed in a random order."""
    count = draw(st.integers(1, 9))
    names = [f"n{i}" for i in range(count)]
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=20)) if pairs else []
    succ: dict[str, list[str]] = {name: [] for name in names}
    for i, j in edges:  # repeats allowed: a consumer may read one producer twice
        succ[names[i]].append(names[j])
    types = {name: draw(st.sampled_from(TYPES)) for name in names}
    listed = draw(st.permutations(names))
    return list(listed), succ, types


def respects_edges(order: list[str], succ: dict[str, list[str]]) -> bool:
    position = {name: i for i, name in enumerate(order)}
    return all(position[u] < position[v] for u, vs in succ.items() for v in vs)


@settings(max_examples=150, deadline=None)
@given(random_dags())
def test_sorts_are_deterministic_topological_permutations(
        dag: tuple[list[str], dict[str, list[str]], dict[str, str]]) -> None:
    names, succ, types = dag
    dfs = topo.dfs_order(names, succ.__getitem__, types)
    bfs = topo.bfs_order(names, succ.__getitem__, types)
    for order in (dfs, bfs):
        assert sorted(order) == sorted(names)
        assert respects_edges(order, succ)
    assert topo.dfs_order(list(names), succ.__getitem__, dict(types)) == dfs
    assert topo.bfs_order(list(names), succ.__getitem__, dict(types)) == bfs
    first = [x for x in names if types[x] in topo.FIRST_SOURCE_TYPES
             and not any(x in vs for vs in succ.values())]
    if first:
        assert dfs[0] == first[0]


@settings(max_examples=60, deadline=None)
@given(random_dags(), st.sampled_from(["", "0", "1"]))
def test_builder_order_is_deterministic_and_topological(
        dag: tuple[list[str], dict[str, list[str]], dict[str, str]], mode: str) -> None:
    names, succ, types = dag
    preds: dict[str, list[str]] = {name: [] for name in names}
    for u, vs in succ.items():
        for v in vs:
            preds[v].append(u)

    def build() -> Graph:
        b = GraphBuilder("g", options={"ge.topoSortingMode": mode} if mode else None)
        for name in names:
            b.add_node(name, types[name], inputs=[DataInput(p) for p in preds[name]])
        return b.build(order="ge")

    first, second = build(), build()
    order = [x.name for x in first.root.nodes]
    assert first == second
    assert order == [x.name for x in second.root.nodes]
    assert sorted(order) == sorted(names)
    assert respects_edges(order, succ)


# ---------------------------------------------------------------------------------------------
# Graph helpers
# ---------------------------------------------------------------------------------------------

def nested_model(source: str = "m.yaml") -> Graph:
    """root: a, w(While cond=c body=b), z; b holds i(If then=t else=e). Declared out of order."""
    b = GraphBuilder("root", source=source)
    for sub in ("e", "t", "b", "c"):  # file order differs from T-order on purpose
        b.add_subgraph(sub, origin=f"{source}:{sub}")
    b.add_node("a", "Data", origin=f"{source}:1")
    b.add_node("w", "While", inputs=[DataInput("a")], subgraphs=[("cond", "c"), ("body", "b")])
    b.add_node("z", "Relu", inputs=[DataInput("w")])
    b.add_node("c_in", "Data", graph="c")
    b.add_node("c_op", "Less", graph="c", inputs=[DataInput("c_in")])
    b.add_node("b_in", "Data", graph="b")
    b.add_node("i", "If", graph="b", inputs=[DataInput("b_in")],
               subgraphs=[("then_branch", "t"), ("else_branch", "e")])
    b.add_node("b_out", "Relu", graph="b", inputs=[DataInput("i")])
    b.add_node("t_in", "Data", graph="t")
    b.add_node("e_in", "Data", graph="e")
    return b.build()


def test_all_nodes_is_t_order() -> None:
    graph = nested_model()
    assert [x.name for x in graph.all_nodes()] == [
        "a", "w", "c_in", "c_op", "b_in", "i", "t_in", "e_in", "b_out", "z"]
    assert graph.node_count() == 10


def test_graphs_are_root_then_file_order() -> None:
    graph = nested_model()
    assert [g.name for g in graph.graphs()] == ["root", "e", "t", "b", "c"]
    assert {g.name: g.parent for g in graph.graphs()} == {
        "root": None, "e": "i", "t": "i", "b": "w", "c": "w"}


def test_r_order_reverses_each_owners_subgraphs() -> None:
    assert nested_model().r_order() == ["b", "c", "e", "t"]


def test_r_order_if_then_else() -> None:
    b = GraphBuilder("g")
    b.add_node("p", "Data")
    b.add_node("if", "If", inputs=[DataInput("p")],
               subgraphs=[("then_branch", "then"), ("else_branch", "else")])
    for sub in ("then", "else"):
        b.add_subgraph(sub)
        b.add_node(f"{sub}_in", "Data", graph=sub)
    assert b.build().r_order() == ["else", "then"]


def test_node_lookup_across_graphs() -> None:
    graph = nested_model()
    assert graph.node("e_in").graph == "e"
    assert graph.node("c_op").inputs == (DataInput("c_in", 0),)
    assert graph.node("a").graph == "root"
    assert graph.graph("b").node("i").subgraphs == (("then_branch", "t"), ("else_branch", "e"))
    assert graph.graph("root") is graph.root
    with pytest.raises(KeyError):
        graph.node("nope")
    with pytest.raises(KeyError):
        graph.root.node("e_in")  # a ComputeGraph only knows its own nodes


def test_equality_ignores_source() -> None:
    one, two = nested_model("one.yaml"), nested_model("two.yaml")
    assert one.source == "one.yaml" and two.source == "two.yaml"
    assert one == two


def test_equality_sees_real_differences() -> None:
    base = builder(FAN).build()
    assert builder(FAN).build() == base
    assert builder(FAN, options={"ge.event": "notify"}).build() != base
    assert builder([*FAN[:2], n("q", "Relu", ["p"])]).build() != base
    assert builder(FAN).build(order="ge") != base  # a different G-order is a different graph


def test_default_engines_and_node_defaults() -> None:
    graph = builder([n("d", "Data"), n("ar", "HcomAllReduce", ["d"]), n("x", "Conv2D", ["ar"])
                     ]).build()
    assert [x.engine for x in graph.root.nodes] == ["DNN_VM_GE_LOCAL", "DNN_HCCL", "AIcoreEngine"]
    node = graph.node("x")
    assert (node.stream_id, node.task_count, node.cost_us, node.graph) == (None, None, None, "g")
    assert graph.root.parent is None and graph.subgraphs == {}


def test_parse_ref() -> None:
    assert parse_ref("a") == DataInput("a", 0)
    assert parse_ref("a:3") == DataInput("a", 3)
    assert parse_ref("scope:a:1") == DataInput("scope:a", 1)
    assert parse_ref("scope:a") == DataInput("scope:a", 0)
