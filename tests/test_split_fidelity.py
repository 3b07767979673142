"""The physical split, built from ge-sync-and-split.md 5 and 6.5: splits that keep every
ordering, GE's stream numbering with RTS tasks and switch branches.

Graphs carry their logical streams (`stream_id`, preset mode), so each case pins the sync layer
alone; expected values follow the spec's rules and anchors (5.4-5.9, 6.3, 6.5). Every plan is
also verified and emulated (each dim of a multi-dims Case).
"""

from __future__ import annotations

from typing import Any

import pytest
from split_graphs import dims

from streamalloc.api import plan, with_options
from streamalloc.errors import AllocationInfeasible, LimitExceeded
from streamalloc.ir import AttrValue, DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan

LABEL = {"_stream_label": AttrValue("string", "L")}
ACTIVATES_L = {"_active_label_list": AttrValue("list_string", ("L",))}


def checked(graph: Graph, **options: str) -> SyncPlan:
    """The preset plan of `graph`, verified and emulated (every dim)."""
    graph = with_options(graph, options)
    result = plan(graph, mode="preset")
    document = result.to_json()
    report = verify_plan(graph, document)
    assert report.ok, report.text()
    for dim in range(dims(graph)):
        emulated = emulate(graph, document, dim=dim)
        assert emulated.status == "ok", (dim, emulated.violations[:3], emulated.deadlock)
    for sync in result.sync_nodes:  # every Send/Recv stays with its node
        if sync.type != "StreamActive" and sync.peer in result.physical:
            assert sync.stream == result.physical[sync.peer], sync
    return result


def graph_nodes(result: SyncPlan, stream: int) -> list[str]:
    """The graph nodes of a physical stream, in order (no Send/Recv)."""
    return [t for t in result.streams[stream] if t in result.physical]


def big_unit(kind: str, builder: GraphBuilder, name: str, inputs: list[str],
             attrs: dict[str, AttrValue]) -> None:
    """A node of 5 units on stream 2: 5 tasks, 1 task of 5 sqes, or HCCL with its own count."""
    refs = [DataInput(i) for i in inputs]
    if kind == "tasks":
        builder.add_node(name, "Relu", inputs=refs, stream_id=2, task_count=5, attrs=attrs)
    elif kind == "sqes":
        builder.add_node(name, "Relu", inputs=refs, stream_id=2, task_count=1,
                         attrs={**attrs, "_node_sqe_num": AttrValue("int", 5)})
    else:  # the HCCL default of 245 task units is replaced by _hccl_task_num (5.4)
        builder.add_node(name, "HcomAllReduce", inputs=refs, stream_id=2,
                         attrs={**attrs, "_hccl_task_num": AttrValue("int", 5)})


def label_activated(kind: str, activator_last: bool, count: int = 400) -> Graph:
    """Three logical streams; stream 2 holds `count` nodes of 5 units, started through label L
    by `act` on stream 1; Data `d` on stream 0 feeds `act` and the first node of stream 2."""
    builder = GraphBuilder("la")
    builder.add_node("d", "Data", stream_id=0)
    if not activator_last:
        builder.add_node("act", "StreamActive", inputs=[DataInput("d")], stream_id=1,
                         attrs=ACTIVATES_L)
    for i in range(count):
        big_unit(kind, builder, f"b{i}", ["d" if i == 0 else f"b{i - 1}"],
                 LABEL if i == 0 else {})
    if activator_last:  # G-order puts the activator after the whole label stream
        builder.add_node("act", "StreamActive", inputs=[DataInput("d")], stream_id=1,
                         attrs=ACTIVATES_L)
    return builder.build()


@pytest.mark.parametrize("activator_last", [False, True])
@pytest.mark.parametrize("kind", ["tasks", "sqes", "hccl"])
def test_a_split_label_stream_keeps_its_activation(kind: str, activator_last: bool) -> None:
    """5.9 anchor (5 units a node: 199 nodes a stream) on a label-activated stream: the event
    d -> b0 goes (3.3: `act` follows d and starts stream 2), and the activator starts every
    piece of stream 2 (6.5 step 2), wherever G-order puts it."""
    result = checked(label_activated(kind, activator_last))
    assert dict(result.split_to_logic) == {0: 0, 1: 1, 2: 2, 3: 2, 4: 2}
    assert [len(graph_nodes(result, s)) for s in (2, 3, 4)] == [199, 199, 2]
    assert result.activations["act"] == (2, 3, 4)
    assert [(e.send, e.recv) for e in result.events] == [
        ("d", "act"), ("b198", "b199"), ("b397", "b398")]
    assert result.units[2] == 199 * 5 + 1  # and the split event's Send


def test_anchor_403_nodes_of_5_units_on_a_stream_of_3() -> None:
    """5.9 anchor: 403 nodes x 5 units on one logical stream of 3: 199 nodes a physical stream,
    +2 streams -> 5."""
    builder = GraphBuilder("a403")
    builder.add_node("s0", "Relu", stream_id=0)
    builder.add_node("s1", "Relu", stream_id=1)
    for i in range(403):
        builder.add_node(f"b{i}", "Relu", inputs=[DataInput(f"b{i - 1}")] if i else [],
                         stream_id=2, task_count=5)
    result = checked(builder.build())
    assert result.physical_stream_count == 5
    assert [len(graph_nodes(result, s)) for s in (2, 3, 4)] == [199, 199, 5]


def multi_dims_case(sqes: int) -> Graph:
    """A multi-dims Case (`_batch_num`) whose two dims each run a -> b -> c over streams 1, 2,
    1 with nodes of `sqes` units: ids inside a dim are shared (4.2), and the nodes force
    splits."""
    builder = GraphBuilder("md")
    builder.add_node("x", "Relu", stream_id=0)
    builder.add_node("case", "Case", inputs=[DataInput("x")], stream_id=0,
                     attrs={"_batch_num": AttrValue("int", 2)},
                     subgraphs=[("branch0", "dim0"), ("branch1", "dim1")])
    builder.add_node("y", "Relu", inputs=[DataInput("case")], stream_id=0)
    for dim in ("dim0", "dim1"):
        builder.add_subgraph(dim)
        builder.add_node(f"{dim}_d", "Data", graph=dim,
                         attrs={"_parent_node_index": AttrValue("int", 0)})
        previous = f"{dim}_d"
        for name, stream in (("a", 1), ("b", 2), ("c", 1)):
            builder.add_node(f"{dim}_{name}", "Relu", graph=dim, stream_id=stream,
                             inputs=[DataInput(previous)], task_count=1,
                             attrs={"_node_sqe_num": AttrValue("int", sqes)})
            previous = f"{dim}_{name}"
    return builder.build()


def test_multi_dims_ids_survive_a_split_of_the_dims() -> None:
    """Nodes of 1000 sqes split every stream the dims use; each dim keeps its shared ids: a Send
    and a Recv per dim for each shared id, each next to its own node (on its stream), so the
    plan verifies and each dim emulates without a stray wait."""
    result = checked(multi_dims_case(1000))
    shared = [n for n in result.sync_nodes if "_Reuse_" in n.name]
    assert {n.type for n in shared} == {"Send", "Recv"}
    assert result.physical_stream_count > 3  # the dims' streams split


def test_multi_dims_without_a_split_still_share_ids() -> None:
    result = checked(multi_dims_case(3))
    assert result.event_count == 2  # a -> b and b -> c, once for both dims (4.2)
    assert result.physical_stream_count == 3


def chain_with_peer(units: list[int], peer_after: int, capacity: str, **kind: Any) -> Graph:
    """n0..nk on stream 0 with `units`; node `peer_after` feeds `m` on stream 1 (`to_m`), or
    `m` feeds it (`from_m`)."""
    builder = GraphBuilder("c")
    if kind.get("from_m"):
        builder.add_node("m", "Relu", stream_id=1, task_count=1)
    for i, u in enumerate(units):
        inputs = [DataInput(f"n{i - 1}")] if i else []
        if kind.get("from_m") and i == peer_after:
            inputs.append(DataInput("m"))
        builder.add_node(f"n{i}", "Relu", inputs=inputs, stream_id=0, task_count=u)
    if kind.get("to_m"):
        builder.add_node("m", "Relu", inputs=[DataInput(f"n{peer_after}")], stream_id=1,
                         task_count=1)
    return with_options(builder.build(), {"streamalloc.max_task_per_stream": capacity})


def test_a_send_that_opens_a_stream_stays_with_its_node() -> None:
    """5.6: with n0 (60) and n1 (13) counted (73 + 27 = 100), n1's Send to m makes 74 and opens
    stream 2 (GE's count, kept); the Send stays after n1 on stream 0 and the split event goes
    from it to n2, the first task of stream 2."""
    result = checked(chain_with_peer([60, 13, 10], 1, "100", to_m=True))
    assert dict(result.split_to_logic) == {0: 0, 1: 1, 2: 0}
    assert result.streams[0] == ("n0", "n1", "c_Send_0", "c_Send_1")
    assert result.streams[2] == ("c_Recv_1", "n2")
    assert [(e.id, e.send, e.recv) for e in result.events] == [(0, "n1", "m"), (1, "c_Send_0",
                                                                                "n2")]


def test_the_recv_of_the_node_that_opens_a_stream_goes_with_it() -> None:
    """n1's Recv (2 units) is counted on stream 0 (50 + 2 = 52), then n1 (40) makes 92 and opens
    stream 2; the Recv goes with n1, after the split event's Recv."""
    result = checked(chain_with_peer([50, 40], 1, "100", from_m=True))
    assert result.streams[0] == ("n0", "c_Send_1")
    assert result.streams[2] == ("c_Recv_1", "c_Recv_0", "n1")


def rts_chain(kind: str) -> Graph:
    """5.9 example 1 with a label node of 30 units between B and C: `LabelSet` on stream 0, or
    a root-graph RTS label node without a stream (its task runs on stream 0, 5.4)."""
    builder = GraphBuilder("rts", options={"streamalloc.max_task_per_stream": "100"})
    previous: str | None = None
    for name in ("A", "B", "L", "C", "D", "E"):
        inputs = [DataInput(previous)] if previous else []
        if name != "L":
            builder.add_node(name, "Relu", inputs=inputs, stream_id=0, task_count=30)
            previous = name
        elif kind == "stream":
            builder.add_node(name, "LabelSet", stream_id=0, task_count=30,
                             control_inputs=[previous] if previous else [])
        else:
            builder.add_node(name, "LabelSet", stream_id=-1, task_count=30,
                             attrs={"_rts_label_node": AttrValue("bool", True)})
    return builder.build()


@pytest.mark.parametrize("kind", ["stream", "streamless"])
def test_example_1_with_an_rts_label_node(kind: str) -> None:
    """5.6 condition 5: the label node is counted (90 after it) but never opens a stream; C
    opens stream 1 (120), E stream 2 (C 30, D 60, E 90): {A, B, L}, {C, D}, {E}."""
    result = checked(rts_chain(kind))
    assert {s: graph_nodes(result, s) for s in result.streams} == {
        0: ["A", "B", "L"], 1: ["C", "D"], 2: ["E"]}
    assert result.physical["L"] == 0
    assert [(e.send, e.recv) for e in result.events] == [("L", "C"), ("D", "E")]


def switch_graph(branch: int) -> Graph:
    """A StreamSwitch on stream 0 activating labels T (stream 1) and F (stream 2), each a chain
    of `branch` nodes; a Merge on stream 3 reads both ends."""
    builder = GraphBuilder("sw")
    builder.add_node("p", "Relu", stream_id=0)
    builder.add_node("switch", "StreamSwitch", inputs=[DataInput("p")], stream_id=0,
                     attrs={"_active_label_list": AttrValue("list_string", ("T", "F"))})
    for label, stream in (("T", 1), ("F", 2)):
        for i in range(branch):
            name = f"{label.lower()}{i}"
            builder.add_node(name, "Relu", stream_id=stream,
                             inputs=[DataInput(f"{label.lower()}{i - 1}")] if i else [],
                             control_inputs=[] if i else ["switch"],
                             attrs={"_stream_label": AttrValue("string", label)})
    builder.add_node("merge", "Merge", stream_id=3,
                     inputs=[DataInput(f"t{branch - 1}"), DataInput(f"f{branch - 1}")])
    return builder.build()


def test_switch_branches_of_700_nodes() -> None:
    """Each branch (700 x 3 units) splits twice: T's pieces 4, 5 then F's 6, 7 (T-order of the
    splits, 5.7); B5 adds them to their label's set (6.5 step 1), so each label now covers three
    streams and gets a StreamActive on a new stream (6.3 in B5): 8 for T, 9 for F; the switch
    activates only those (its list overwritten)."""
    result = checked(switch_graph(700))
    assert dict(result.split_to_logic) == {0: 0, 1: 1, 2: 2, 3: 3, 4: 1, 5: 1, 6: 2, 7: 2}
    assert result.physical_stream_count == 10
    assert result.streams[8] == ("switch_StreamActive_0",)
    assert result.streams[9] == ("switch_StreamActive_1",)
    assert result.activations["switch"] == (8, 9)
    assert result.activations["switch_StreamActive_0"] == (1, 4, 5)
    assert result.activations["switch_StreamActive_1"] == (2, 6, 7)
    assert [len(graph_nodes(result, s)) for s in (1, 4, 5)] == [332, 332, 36]


def test_short_switch_branches_need_no_stream_active() -> None:
    """Without a split each label covers one stream: no StreamActive (6.3), the switch
    activates the branch streams itself."""
    result = checked(switch_graph(10))
    assert result.physical_stream_count == 4
    assert result.activations["switch"] == (1, 2)


def example_1_switch(false_units: list[int]) -> Graph:
    """5.9 example 1 as the true branch of a switch (capacity 100, T: A..E of 30 units on stream
    1), the false branch F on stream 2 with `false_units`; the switch on stream 0."""
    builder = GraphBuilder("ex", options={"streamalloc.max_task_per_stream": "100"})
    builder.add_node("switch", "StreamSwitch", stream_id=0,
                     attrs={"_active_label_list": AttrValue("list_string", ("T", "F"))})
    for label, stream, units in (("T", 1, [30] * 5), ("F", 2, false_units)):
        previous: str | None = None
        for i, u in enumerate(units):
            name = f"{label}{i}"
            builder.add_node(name, "Relu", stream_id=stream, task_count=u,
                             inputs=[DataInput(previous)] if previous else [],
                             control_inputs=[] if previous else ["switch"],
                             attrs={"_stream_label": AttrValue("string", label)})
            previous = name
    return builder.build()


def test_example_1_in_both_switch_branches() -> None:
    """Both branches split as example 1 ({A, B}, {C, D}, {E}): T's pieces 3, 4, then F's 5, 6
    (T-order); after the split each label covers three streams: StreamActives on 7 (T) and 8
    (F), which the switch activates."""
    result = checked(example_1_switch([30] * 5))
    assert {s: graph_nodes(result, s) for s in range(7)} == {
        0: ["switch"], 1: ["T0", "T1"], 2: ["F0", "F1"], 3: ["T2", "T3"], 4: ["T4"],
        5: ["F2", "F3"], 6: ["F4"]}
    assert result.activations["switch"] == (7, 8)
    assert result.activations["switch_StreamActive_0"] == (1, 3, 4)
    assert result.activations["switch_StreamActive_1"] == (2, 5, 6)


def test_a_switch_loses_its_unsplit_branch_after_the_split() -> None:
    """6.3's quirk in B5, reproduced: only T grows to several streams, so the switch's list is
    overwritten with T's new StreamActive alone and F's stream 2 is no longer activated by it.
    GE's plan then races (switch -> F0 is ordered by nothing): the verifier says so."""
    graph = example_1_switch([30])
    result = plan(graph, mode="preset")
    assert result.activations["switch"] == (5,)
    assert result.activations["switch_StreamActive_0"] == (1, 3, 4)
    report = verify_plan(graph, result.to_json())
    assert report.kinds() == {"dependency"}
    assert "control edge switch -> F0" in report.violations[0].message


def test_a_continuous_label_group_that_starts_its_stream_fails_as_ge() -> None:
    """5.7/8: the group's first node is the first task of its logical stream, so GE's split has
    no node before it and fails: exit 4 with that reason (not an internal error)."""
    builder = GraphBuilder("cl", options={"streamalloc.max_task_per_stream": "100"})
    label = {"_continuous_stream_label": AttrValue("string", "X")}
    builder.add_node("L1", "Relu", stream_id=0, task_count=50, attrs=label)
    builder.add_node("L2", "Relu", inputs=[DataInput("L1")], stream_id=0, task_count=60,
                     attrs=label)
    with pytest.raises(AllocationInfeasible, match="first task of logical stream 0") as raised:
        plan(builder.build(), mode="preset")
    assert raised.value.exit_code == 4


def test_a_piece_of_the_huge_stream_over_the_normal_depth_says_why() -> None:
    """Found by an option-matrix run: single-stream mode failed on every training step with
    "a single node larger than a stream cannot be split". GE splits the huge stream 0 at the
    huge depth but creates only stream 0 huge; the message says so and which depth keeps the
    tasks on stream 0, and that depth does."""
    b = GraphBuilder("chain")
    b.add_node("d", "Data")
    for i in range(100):
        b.add_node(f"r{i}", "Relu", inputs=[DataInput(f"r{i - 1}" if i else "d")])
    graph = with_options(b.build(), {"ge.enableSingleStream": "true",
                                     "streamalloc.max_task_per_stream": "100",
                                     "streamalloc.max_task_per_huge_stream": "200"})
    with pytest.raises(LimitExceeded) as err:
        plan(graph)
    assert str(err.value) == (
        "physical stream 1 needs 131 task units + 7 profiling units, over its depth of 100 "
        "(option streamalloc.max_task_per_stream); in single-stream mode GE splits the huge "
        "stream 0 at the huge depth (200), but creates only stream 0 huge, so this piece of it "
        "is a normal stream; stream 0 and its pieces hold 303 task units: "
        "streamalloc.max_task_per_huge_stream=330 or more keeps them all on stream 0")
    kept = plan(with_options(graph, {"streamalloc.max_task_per_huge_stream": "330"})).to_json()
    assert kept["huge_streams"] == [0] and kept["tasks"] == {"0": 300}
