"""Dependencies inside and across subgraphs, multi-dims id reuse, edges GE leaves unordered."""

from __future__ import annotations

from typing import Any

from verify.verify_plans import plan, yaml_graph

from streamalloc.verify import VerifyReport, verify_plan


def messages(report: VerifyReport, kind: str) -> list[str]:
    return [v.message for v in report.violations if v.kind == kind]


# a -> call -> c; the subgraph's entry node n has no inputs, e is its end node.
CALL = yaml_graph("""
name: call
nodes:
  - {name: data, type: Data}
  - {name: a, type: Relu, inputs: [data]}
  - {name: p, type: PartitionedCall, inputs: [a], subgraphs: {f: body}}
  - {name: c, type: Relu, inputs: [p]}
subgraphs:
  body:
    nodes:
      - {name: n, type: Relu}
      - {name: e, type: Relu, inputs: [n], attrs: {_subgraph_end_node: true}}
""")


def call_plan(*, entry: bool = True, exit_: bool = True) -> dict[str, Any]:
    """a, c on stream 0, the subgraph on stream 1; an event for the entry and/or the exit."""
    s0, s1, events = ["a"], ["n", "e"], []
    if entry:
        s0.append("call_Send_0")
        s1.insert(0, "call_Recv_0")
        events.append((0, "a", "n"))
    if exit_:
        ident = len(events)
        s0.append(f"call_Recv_{ident}")
        s1.append(f"call_Send_{ident}")
        events.append((ident, "e", "c"))
    return plan(CALL, {0: [*s0, "c"], 1: s1}, events=events)


def test_subgraph_boundary_with_both_events_passes() -> None:
    report = verify_plan(CALL, call_plan())
    assert report.ok, report.text()
    # n -> e inside the subgraph, a -> n (entry), e -> c (exit); p has no stream.
    assert report.stats.dependencies == 3


def test_subgraph_entry_needs_the_parent_s_producers() -> None:
    [message] = messages(verify_plan(CALL, call_plan(entry=False)), "dependency")
    assert message.startswith("subgraph entry edge a -> n is not ordered: a runs on stream 0")


def test_subgraph_exit_orders_the_end_node_before_the_parent_s_consumers() -> None:
    [message] = messages(verify_plan(CALL, call_plan(exit_=False)), "dependency")
    assert message.startswith("subgraph exit edge e -> c is not ordered: e runs on stream 1")


# x has no stream: a -> x -> b still orders a before b.
THROUGH = yaml_graph("""
name: thr
nodes:
  - {name: data, type: Data}
  - {name: a, type: Relu, inputs: [data]}
  - {name: x, type: Reshape, inputs: [a]}
  - {name: b, type: Relu, inputs: [x]}
""")


def test_an_edge_through_a_stream_less_node_is_checked() -> None:
    [message] = messages(verify_plan(THROUGH, plan(THROUGH, {0: ["a"], 1: ["b"]})), "dependency")
    assert message.startswith("data edge a -> b (through x, which has no stream) is not ordered")
    p = plan(THROUGH, {0: ["a", "thr_Send_0"], 1: ["thr_Recv_0", "b"]}, events=[(0, "a", "b")])
    assert verify_plan(THROUGH, p).ok


def test_edges_ge_leaves_unordered_are_not_checked() -> None:
    # Enter -> non-StreamActive (GE pair rule 3) and NextIteration's loop back edge.
    graph = yaml_graph("""
name: loop
nodes:
  - {name: data, type: Data}
  - {name: enter, type: Enter, inputs: [data]}
  - {name: merge, type: Merge, inputs: [enter, nxt]}
  - {name: body, type: Relu, inputs: [merge]}
  - {name: nxt, type: NextIteration, inputs: [body]}
""")
    p = plan(graph, {0: ["enter", "body"], 1: ["merge"], 2: ["nxt"]})
    report = verify_plan(graph, p)
    assert [m.split(" is not")[0] for m in messages(report, "dependency")] == [
        "data edge merge -> body", "data edge body -> nxt"]


def test_edges_inside_ffts_subgraphs_are_not_checked() -> None:
    graph = yaml_graph("""
name: ffts
nodes:
  - {name: data, type: Data}
  - {name: p, type: PartitionedCall, inputs: [data], subgraphs: {f: fsub},
     attrs: {_ffts_plus_sub_graph: "x"}}
subgraphs:
  fsub:
    nodes:
      - {name: u, type: Relu}
      - {name: v, type: Relu, inputs: [u]}
""")
    report = verify_plan(graph, plan(graph, {0: ["v"], 1: ["u"]}))
    assert report.ok and report.stats.dependencies == 0


# A multi-dims Case: each dim's subgraph has a cross-stream pair that shares event id 0.
CASE = yaml_graph("""
name: md
nodes:
  - {name: data, type: Data}
  - {name: case, type: Case, inputs: [data], subgraphs: {b0: dim0, b1: dim1},
     attrs: {_batch_num: 2}}
subgraphs:
  dim0:
    nodes:
      - {name: u0, type: Relu}
      - {name: v0, type: Relu, inputs: [u0]}
  dim1:
    nodes:
      - {name: u1, type: Relu}
      - {name: v1, type: Relu, inputs: [u1]}
""")


def case_plan() -> dict[str, Any]:
    return plan(CASE, {0: ["u0", "md_Send_0", "u1", "md_Send_0_Reuse_1"],
                       1: ["md_Recv_0", "v0", "md_Recv_0_Reuse_1", "v1"]},
                events=[(0, "u0", "v0"), (0, "u1", "v1")])


def test_multi_dims_reuse_shares_an_id_between_case_branches() -> None:
    p = case_plan()
    assert p["event_count"] == 1
    report = verify_plan(CASE, p)
    assert report.ok, report.text()


def test_reuse_pairs_each_recv_with_its_own_branch_s_send() -> None:
    # v1 moved before the Recv of its branch: the shared id is still recorded and waited
    # for once per branch, but u1 -> v1 is no longer ordered.
    p = case_plan()
    p["streams"]["1"] = ["md_Recv_0", "v0", "v1", "md_Recv_0_Reuse_1"]
    [message] = messages(verify_plan(CASE, p), "dependency")
    assert message.startswith("data edge u1 -> v1 is not ordered")


def test_reuse_inside_one_branch_is_reported() -> None:
    graph = yaml_graph("""
name: md
nodes:
  - {name: data, type: Data}
  - {name: case, type: Case, inputs: [data], subgraphs: {b0: dim0}}
subgraphs:
  dim0:
    nodes:
      - {name: u0, type: Relu}
      - {name: v0, type: Relu, inputs: [u0]}
      - {name: u1, type: Relu}
      - {name: v1, type: Relu, inputs: [u1]}
""")
    p = case_plan()
    report = verify_plan(graph, p)
    assert "event-multiple-send" in report.kinds()


def test_an_edge_from_enter_into_a_stream_active_is_checked() -> None:
    graph = yaml_graph("""
name: ent
nodes:
  - {name: data, type: Data}
  - {name: enter, type: Enter, inputs: [data]}
  - {name: act, type: StreamActive, control_inputs: [enter]}
""")
    [message] = messages(verify_plan(graph, plan(graph, {0: ["enter"], 1: ["act"]})),
                         "dependency")
    assert message.startswith("control edge enter -> act is not ordered")
