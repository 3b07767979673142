"""Synchronization and physical split: the examples and test anchors of ge-sync-and-split.md.

Graphs carry their logical streams as `stream_id` and run in preset mode, so each case pins the
sync layer alone. Expected values are typed in from the spec.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.api import plan, with_options
from streamalloc.errors import LimitExceeded
from streamalloc.ir import AttrValue, DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.model import in_n_order
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan


def graph_of(tmp_path: Path, nodes: list[dict[str, Any]], **extra: Any) -> Graph:
    path = tmp_path / "g.yaml"
    doc = {"format": "streamalloc.graph/v1", "name": "g", "nodes": nodes, **extra}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_graph(path)


def preset(graph: Graph, **options: str) -> SyncPlan:
    return plan(with_options(graph, options), mode="preset")


def pairs(result: SyncPlan) -> list[tuple[int, str, str]]:
    return [(e.id, e.send, e.recv) for e in result.events]


def test_by_send_keeps_the_first_receive_per_stream(tmp_path: Path) -> None:
    """3.1: A on s0; C then D on s1; A->C and A->D: one event remains (A->C)."""
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "C", "type": "Relu", "inputs": ["A"], "stream_id": 1},
        {"name": "D", "type": "Relu", "inputs": ["A", "C"], "stream_id": 1}])
    assert pairs(preset(g)) == [(0, "A", "C")]


def test_by_recv_keeps_the_last_send_per_stream(tmp_path: Path) -> None:
    """3.2: A then B on s0, E on s1; A->E, B->E: only B->E remains."""
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 0},
        {"name": "E", "type": "Add", "inputs": ["A", "B"], "stream_id": 1}])
    assert pairs(preset(g)) == [(0, "B", "E")]


def test_transitive_redundancy_is_kept(tmp_path: Path) -> None:
    """3.2: A->D and B->C with A before B on s0 and C before D on s1: GE keeps both."""
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 0},
        {"name": "C", "type": "Relu", "inputs": ["B"], "stream_id": 1},
        {"name": "D", "type": "Add", "inputs": ["C", "A"], "stream_id": 1}])
    assert len(preset(g).events) == 2


def test_by_activation_removes_an_event_the_activation_implies(tmp_path: Path) -> None:
    """3.3: X, Y on s0; ACT on s2 (activates label L, input from Y); R on s3 (label L);
    X->R is implied by Y->ACT->activation of s3, so it is removed."""
    g = graph_of(tmp_path, [
        {"name": "X", "type": "Relu", "stream_id": 0},
        {"name": "Y", "type": "Relu", "inputs": ["X"], "stream_id": 0},
        {"name": "ACT", "type": "StreamActive", "inputs": ["Y"], "stream_id": 2,
         "attrs": {"_active_label_list": ["L"]}},
        {"name": "R", "type": "Relu", "inputs": ["X"], "stream_id": 3,
         "attrs": {"_stream_label": "L"}},
        {"name": "S1", "type": "Relu", "stream_id": 1}])
    result = preset(g)
    assert ("X", "R") not in [(e.send, e.recv) for e in result.events]
    assert result.activations["ACT"] == (3,)


def test_final_ids_follow_sender_name_order(tmp_path: Path) -> None:
    """4.1: senders zeta (inserted first) and alpha: alpha's event becomes 0, zeta's 1."""
    g = graph_of(tmp_path, [
        {"name": "zeta", "type": "Relu", "stream_id": 0},
        {"name": "m", "type": "Relu", "inputs": ["zeta"], "stream_id": 1},
        {"name": "alpha", "type": "Relu", "inputs": ["m"], "stream_id": 1},
        {"name": "z2", "type": "Relu", "inputs": ["alpha"], "stream_id": 0}])
    assert pairs(preset(g)) == [(0, "alpha", "z2"), (1, "zeta", "m")]


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(names=st.lists(st.text(st.characters(exclude_categories=["Cs"]), max_size=4)))
def test_n_order_is_byte_order_in_utf8(names: list[str]) -> None:
    """N-order sorts names byte-wise in UTF-8 (spec 4.1); Python's string order is that order
    (code points), which `in_n_order` relies on instead of encoding every name."""
    assert in_n_order(names) == sorted(names, key=lambda n: n.encode("utf-8"))


def test_final_ids_follow_sender_name_order_beyond_ascii(tmp_path: Path) -> None:
    """4.1 with names past ASCII: the sender "é" (UTF-8 C3 A9) comes before "😀"
    (F0 9F 98 80) and after "z"."""
    g = graph_of(tmp_path, [
        {"name": "😀", "type": "Relu", "stream_id": 0},
        {"name": "m", "type": "Relu", "inputs": ["😀"], "stream_id": 1},
        {"name": "é", "type": "Relu", "inputs": ["m"], "stream_id": 1},
        {"name": "n", "type": "Relu", "inputs": ["é"], "stream_id": 0},
        {"name": "z", "type": "Relu", "inputs": ["n"], "stream_id": 0},
        {"name": "w", "type": "Relu", "inputs": ["z"], "stream_id": 1}])
    assert pairs(preset(g)) == [(0, "z", "w"), (1, "é", "n"), (2, "😀", "m")]


def test_notify_mode_uses_notifies_for_cross_stream_sync(tmp_path: Path) -> None:
    """4.4: ge.event notify: Phase A's pairs become notifies (SendNotify/RecvNotify)."""
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 1}],
        options={"ge.event": "notify"})
    result = preset(g)
    assert (result.event_count, result.notify_count) == (0, 1)
    assert [n.type for n in result.sync_nodes] == ["SendNotify", "RecvNotify"]
    assert [n.name for n in result.sync_nodes] == ["g_Send_Notify_0", "g_Recv_Notify_0"]


def test_send_after_sender_and_recv_before_receiver(tmp_path: Path) -> None:
    """7: names <root>_Send_<id> / <root>_Recv_<id>; placement in the stream order."""
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 1},
        {"name": "C", "type": "Relu", "inputs": ["A"], "stream_id": 0}])
    result = preset(g).to_json()
    assert result["streams"] == {"0": ["A", "g_Send_0", "C"], "1": ["g_Recv_0", "B"]}
    assert result["sync_nodes"][0] == {"name": "g_Send_0", "type": "Send", "stream": 0,
                                       "event": 0, "peer": "A"}


def chain(units: list[int], **options: str) -> Graph:
    builder = GraphBuilder("c", options=options)
    previous = None
    for i, u in enumerate(units):
        builder.add_node(f"n{i}", "Relu", inputs=[DataInput(previous)] if previous else [],
                         task_count=u, stream_id=0)
        previous = f"n{i}"
    return builder.build()


def test_split_example_1() -> None:
    """5.9 example 1: capacity 100, five 30-unit nodes: {A, B}, {C, D}, {E}; 2 events."""
    result = preset(chain([30] * 5), **{"streamalloc.max_task_per_stream": "100"})
    assert {s: [t for t in tasks if not t.startswith("c_")]
            for s, tasks in result.streams.items()} == {0: ["n0", "n1"], 1: ["n2", "n3"],
                                                        2: ["n4"]}
    assert result.event_count == 2
    assert dict(result.split_to_logic) == {0: 0, 1: 0, 2: 0}
    assert pairs(result) == [(0, "n1", "n2"), (1, "n3", "n4")]


def test_split_example_2_continuous_label_double_count() -> None:
    """5.9 example 2: A(30) L1(20, X) L2(30, X) B(10): {A}, {L1, L2}, {B} (GE's double count)."""
    builder = GraphBuilder("c", options={"streamalloc.max_task_per_stream": "100"})
    spec = [("A", 30, None), ("L1", 20, "X"), ("L2", 30, "X"), ("B", 10, None)]
    previous = None
    for name, units, label in spec:
        attrs = {"_continuous_stream_label": AttrValue("string", label)} if label else {}
        builder.add_node(name, "Relu", inputs=[DataInput(previous)] if previous else [],
                         task_count=units, stream_id=0, attrs=attrs)
        previous = name
    result = preset(builder.build())
    assert {s: [t for t in tasks if not t.startswith("c_")]
            for s, tasks in result.streams.items()} == {0: ["A"], 1: ["L1", "L2"], 2: ["B"]}
    assert pairs(result) == [(0, "A", "L1"), (1, "L2", "B")]


def test_anchor_345_nodes_split_at_the_333rd() -> None:
    """5.9 anchor: 345 nodes x 3 units, stub limit 1024: split at the 333rd node, 1 event."""
    result = preset(chain([3] * 345))
    assert result.physical_stream_count == 2 and result.event_count == 1
    assert result.streams[1][1] == "n332"


def test_anchor_oversized_node_splits_twice() -> None:
    """5.6: a node over capacity - 27 opens a stream, and the next node opens another; the
    stream holding it alone (with its split events and 7 profiling units) fits the device."""
    result = preset(chain([10, 90, 10], **{"streamalloc.max_task_per_stream": "100"}))
    assert {s: [t for t in tasks if not t.startswith("c_")]
            for s, tasks in result.streams.items()} == {0: ["n0"], 1: ["n1"], 2: ["n2"]}
    assert result.event_count == 2 and dict(result.units) == {0: 11, 1: 93, 2: 12}


def test_a_node_larger_than_a_stream_is_exit_4() -> None:
    """2 + 95 + 1 units (the node and its split events) + 7 profiling > a depth of 100."""
    with pytest.raises(LimitExceeded, match="over its depth of 100"):
        preset(chain([10, 95, 10], **{"streamalloc.max_task_per_stream": "100"}))


def test_limits_are_exit_4_with_the_numbers(tmp_path: Path) -> None:
    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 1},
        {"name": "C", "type": "Relu", "inputs": ["B"], "stream_id": 2}],
        options={"streamalloc.max_streams": "3", "streamalloc.max_events": "1"})
    with pytest.raises(LimitExceeded) as raised:
        preset(g)
    assert raised.value.exit_code == 4 and str(raised.value) == (
        "the plan needs 3 streams, over the limit of 2 (option streamalloc.max_streams: 3 "
        "slots, less the caller's stream)")


@pytest.mark.parametrize("slots", ["3", "4"])
def test_the_stream_limit_means_one_thing_to_allocate_verify_and_emulate(
        tmp_path: Path, slots: str) -> None:
    """`max_streams` is the runtime's stream pool, slot 0 the caller's: a 3-stream plan fits 4
    slots and not 3, for the sync's check, the verifier and the emulator's load alike (the
    sync and the verifier once allowed as many streams as slots, which the emulator refused)."""
    nodes = [{"name": "A", "type": "Relu", "stream_id": 0},
             {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 1},
             {"name": "C", "type": "Relu", "inputs": ["B"], "stream_id": 2}]
    made = preset(graph_of(tmp_path, nodes)).to_json()
    limited = graph_of(tmp_path, nodes, options={"streamalloc.max_streams": slots})
    fits = slots == "4"
    try:
        preset(limited)
        allocated = True
    except LimitExceeded:
        allocated = False
    try:
        emulate(limited, made)
        loaded = True
    except LimitExceeded:
        loaded = False
    assert (allocated, verify_plan(limited, made).ok, loaded) == (fits, fits, fits)


def test_plan_file_is_byte_identical_across_runs() -> None:
    g = load_graph(Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml")
    assert json.dumps(plan(g).to_json()) == json.dumps(plan(g).to_json())



def test_send_recv_nodes_come_out_as_a_new_graph(tmp_path: Path) -> None:
    """Issue 4 item 4: every event becomes a Send after its sender and a Recv before its
    receiver, in a new graph; the input graph is untouched."""
    from streamalloc.api import synced_graph

    g = graph_of(tmp_path, [
        {"name": "A", "type": "Relu", "stream_id": 0},
        {"name": "B", "type": "Relu", "inputs": ["A"], "stream_id": 1}])
    result = preset(g)
    out = synced_graph(g, result)
    assert [n.name for n in out.root.nodes] == ["A", "g_Send_0", "g_Recv_0", "B"]
    assert out.node("g_Send_0").control_inputs == ("A",)
    assert out.node("B").control_inputs == ("g_Recv_0",)
    assert out.node("g_Recv_0").attr("event_id") == 0 and out.node("g_Recv_0").stream_id == 1
    assert [n.name for n in g.root.nodes] == ["A", "B"] and g.node("B").control_inputs == ()


def test_switch_label_with_two_streams_gets_a_stream_active(tmp_path: Path) -> None:
    """6.3: a switch label covering two streams costs one new stream holding a new StreamActive
    that activates them; the switch then activates only that stream."""
    g = graph_of(tmp_path, [
        {"name": "p", "type": "Relu", "stream_id": 0},
        {"name": "sw", "type": "StreamSwitch", "inputs": ["p"], "stream_id": 0,
         "attrs": {"_active_label_list": ["T", "F"]}},
        {"name": "t1", "type": "Relu", "control_inputs": ["sw"], "stream_id": 1,
         "attrs": {"_stream_label": "T"}},
        {"name": "t2", "type": "Relu", "control_inputs": ["sw"], "stream_id": 2,
         "attrs": {"_stream_label": "T"}},
        {"name": "f1", "type": "Relu", "control_inputs": ["sw"], "stream_id": 3,
         "attrs": {"_stream_label": "F"}},
        {"name": "f2", "type": "Relu", "control_inputs": ["sw"], "stream_id": 4,
         "attrs": {"_stream_label": "F"}}])
    result = preset(g)
    assert result.physical_stream_count == 7
    assert (result.streams[5], result.streams[6]) == (("sw_StreamActive_0",),
                                                      ("sw_StreamActive_1",))
    assert result.activations["sw_StreamActive_0"] == (1, 2)
    assert result.activations["sw_StreamActive_1"] == (3, 4)
    assert result.activations["sw"] == (5, 6)
    assert {n.type for n in result.sync_nodes} == {"StreamActive"}  # a switch never sends
    assert verify_plan(with_options(g, {}), result.to_json()).ok


def test_event_multiplexing_collapses_declared_pairs(tmp_path: Path) -> None:
    """4.3: pairs declaring the same k share one id (applied above the threshold only)."""
    from streamalloc.sync.context import SyncModel
    from streamalloc.sync.insert import insert_cross_stream_pairs
    from streamalloc.sync.model import SyncMaps
    from streamalloc.sync.multiplexing import multiplex_events
    from streamalloc.sync.numbering import renumber

    g = graph_of(tmp_path, [
        {"name": "a", "type": "Relu", "stream_id": 0,
         "attrs": {"_event_multiplexing": ["SendTo;b;0"]}},
        {"name": "c", "type": "Relu", "stream_id": 0,
         "attrs": {"_event_multiplexing": ["SendTo;d;0"]}},
        {"name": "b", "type": "Relu", "inputs": ["a"], "stream_id": 1},
        {"name": "d", "type": "Relu", "inputs": ["c"], "stream_id": 2}])
    model = SyncModel.of(g, {n.name: () for n in g.all_nodes()})
    maps = SyncMaps()
    insert_cross_stream_pairs(model, {n.name: n.stream_id or 0 for n in g.all_nodes()}, {}, maps)
    maps.counter = renumber(maps)
    assert maps.counter == 2
    multiplex_events(model, maps)  # 2 events: under GE's threshold of 65500, nothing changes
    assert maps.counter == 2
    multiplex_events(model, maps, threshold=0)
    assert maps.counter == 1 and maps.send["a"] == maps.send["c"] == [0]
    assert maps.recv["b"] == maps.recv["d"] == [0]


def test_malformed_event_multiplexing_is_an_input_error(tmp_path: Path) -> None:
    from streamalloc.errors import InputError
    from streamalloc.sync.context import SyncModel
    from streamalloc.sync.model import SyncMaps
    from streamalloc.sync.multiplexing import multiplex_events

    g = graph_of(tmp_path, [
        {"name": "a", "type": "Relu", "stream_id": 0, "attrs": {"_event_multiplexing": ["To;b"]}},
        {"name": "b", "type": "Relu", "inputs": ["a"], "stream_id": 1}])
    model = SyncModel.of(g, {"a": (), "b": ()})
    with pytest.raises(InputError, match="SendTo;<peer>;<id>"):
        multiplex_events(model, SyncMaps(counter=1), threshold=0)


@pytest.mark.parametrize(("chain", "named"), [
    ([], "consumer 'b' on stream 1"),
    ([{"name": "x", "type": "Reshape", "inputs": ["n"], "stream_id": -1}],  # task-less, no
     "consumer 'b' on stream 1"),                                          # stream: passes on
])
def test_a_stream_less_node_with_tasks_and_a_neighbour_elsewhere_is_infeasible(
        tmp_path: Path, chain: list[dict[str, Any]], named: str) -> None:
    """B7 puts a stream-less node that issues tasks on stream 0 after the events are made: with
    a consumer on stream 1 nothing would order the two (the verifier's 'not ordered'), so the
    sync layer says why instead of writing that plan."""
    from streamalloc.errors import AllocationInfeasible

    last = chain[-1]["name"] if chain else "n"
    g = graph_of(tmp_path, [
        {"name": "d", "type": "Data"},
        {"name": "n", "type": "Squeeze", "inputs": ["d"], "stream_id": -1, "task_count": 1},
        *chain,
        {"name": "b", "type": "Relu", "inputs": [last], "stream_id": 1},
        {"name": "a", "type": "Relu", "inputs": ["d"], "stream_id": 0}])
    with pytest.raises(AllocationInfeasible, match=f"node 'n' .* issues 1 task.*{named}"):
        preset(g)


def test_a_stream_less_node_with_tasks_among_stream_0_nodes_is_homed(tmp_path: Path) -> None:
    """The same node with its consumer on stream 0 runs there, in T-order, and verifies (its
    producer has no stream: GE synchronizes no stream-less consumer of a streamed node)."""
    g = graph_of(tmp_path, [
        {"name": "d", "type": "Data"},
        {"name": "a", "type": "Relu", "inputs": ["d"], "stream_id": 0},
        {"name": "n", "type": "Squeeze", "inputs": ["d"], "stream_id": -1, "task_count": 1},
        {"name": "b", "type": "Relu", "inputs": ["n", "a"], "stream_id": 0},
        {"name": "c", "type": "Relu", "inputs": ["d"], "stream_id": 1}])
    result = preset(g)
    assert [t for t in result.streams[0] if t in "anb"] == ["a", "n", "b"]
    assert verify_plan(g, result.to_json()).ok
