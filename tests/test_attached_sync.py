"""Attached streams end to end: from the attributes in preset mode (logical-streams 5), their
dependency events (sync spec 2.6), their NetOutput events (2.7), the sync ids kernels reserve
(4.5), their split (5.7, 5.9 anchor) and a ge-mode graph with one huge node.

Expected values are computed from the spec by hand; every plan is verified and emulated.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamalloc.api import plan, with_options
from streamalloc.errors import AllocationInfeasible, InputError
from streamalloc.ir import AttrValue, DataInput, GraphBuilder, NamedAttrs
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan


def attached(*, force: bool = False, required: bool = True, depends: tuple[int, ...] = (),
             resources: tuple[tuple[str, str, str], ...] = (), name: str = "aux"
             ) -> dict[str, AttrValue]:
    """`_attached_stream_info_list` with one entry named `name` (and
    `_attached_sync_res_info_list` entries (name, type, reuse key) when `resources` are
    given)."""
    entry: dict[str, AttrValue] = {
        "_attached_resource_name": AttrValue("string", name),
        "_attached_resource_required_flag": AttrValue("bool", required),
        "_attached_resource_force_reuse": AttrValue("bool", force)}
    if depends:
        entry["_attached_resource_depend_value_list_int"] = AttrValue("list_int", depends)
    attrs = {"_attached_stream_info_list": AttrValue("list_named_attrs",
                                                     (NamedAttrs("", entry),))}
    if resources:
        attrs["_attached_sync_res_info_list"] = AttrValue("list_named_attrs", tuple(
            NamedAttrs("", {"_attached_resource_name": AttrValue("string", name),
                            "_attached_resource_type": AttrValue("string", kind),
                            "_attached_resource_reuse_key": AttrValue("string", key),
                            "_attached_resource_required_flag": AttrValue("bool", True)})
            for name, kind, key in resources))
    return attrs


def checked(graph: Graph, mode: str = "preset", **options: str) -> SyncPlan:
    graph = with_options(graph, options)
    result = plan(graph, mode=mode)
    document = result.to_json()
    report = verify_plan(graph, document)
    assert report.ok, report.text()
    assert emulate(graph, document).status == "ok"
    return result


def events(result: SyncPlan) -> list[tuple[int, str, str, int, int]]:
    return [(e.id, e.send, e.recv, e.send_stream, e.recv_stream) for e in result.events]


def test_preset_attached_streams_follow_example_7_13() -> None:
    """7.13 in preset mode: keys aux_stream_0 < aux_stream_1 give 2 and 3; forced reuse shares
    one; without the required flag nothing is assigned."""
    for kwargs, expected in (({}, ((2,), (3,), 4)), ({"force": True}, ((2,), (2,), 3)),
                             ({"required": False}, ((), (), 2))):
        builder = GraphBuilder("m")
        builder.add_node("m1", "MatMul", stream_id=0, attrs=attached(**kwargs))
        builder.add_node("m2", "MatMul", inputs=[DataInput("m1")], stream_id=1,
                         attrs=attached(**kwargs))
        allocation = plan(builder.build(), mode="preset").allocation
        assert (allocation.nodes["m1"].attached, allocation.nodes["m2"].attached,
                allocation.total_stream_num) == expected, kwargs


def dependency_graph(src_attached: bool, dst: dict[str, AttrValue], **extra: Any) -> Graph:
    """p (stream 0, with an attached stream or not) -> m (stream 1, depends on input 0)."""
    builder = GraphBuilder("dep")
    builder.add_node("d", "Data")
    builder.add_node("p", "Relu", inputs=[DataInput("d")], stream_id=0,
                     attrs=attached() if src_attached else {})
    builder.add_node("m", "MatMul", inputs=[DataInput("p")], stream_id=1, attrs=dst, **extra)
    return builder.build()


def test_dependency_from_a_main_stream_to_an_attached_one() -> None:
    """2.6: p (main stream 0) -> m's attached stream 2: a Send after p on 0, a Recv before m on
    2. Event 0 is Phase A's p -> m (main streams); 2.6's comes next, never renumbered."""
    result = checked(dependency_graph(False, attached(depends=(0,))))
    assert result.allocation.nodes["m"].attached == (2,)
    assert events(result) == [(0, "p", "m", 0, 1), (1, "p", "m", 0, 2)]


def test_an_attached_stream_with_sync_tasks_counts_once_against_the_stream_limit() -> None:
    """The plan above requests 3 streams: main streams 0 and 1, and m's attached stream 2,
    which holds the Recv and so has a task list, one of the 3 physical streams. With 4 slots
    (one the caller's) it fits: the sync layer, the verifier and the emulator agree (the
    verifier and the emulator counted stream 2 twice, physical and attached, and refused a
    plan the sync layer had fitted to the limit); with 3 slots it does not."""
    graph = dependency_graph(False, attached(depends=(0,)))
    result = checked(graph, **{"streamalloc.max_streams": "4"})
    document = result.to_json()
    assert sorted(document["streams"]) == ["0", "1", "2"]
    assert (document["physical_stream_count"], document["attached_stream_count"]) == (3, 1)
    with pytest.raises(AllocationInfeasible, match="the plan needs 3 streams, over the limit"):
        plan(with_options(graph, {"streamalloc.max_streams": "3"}), mode="preset")


def test_dependency_between_attached_streams() -> None:
    """Both ends have an attached stream (keys aux_stream_0, aux_stream_1: 2 and 3): the event
    goes from p's attached stream to m's; the last users of 2 and 3 have no NetOutput."""
    result = checked(dependency_graph(True, attached(depends=(0,))))
    assert events(result)[1] == (1, "p", "m", 2, 3)


def test_dependency_from_an_attached_stream_to_a_main_one() -> None:
    """m asks for no stream (required flag off) but declares the dependency: from p's attached
    stream 2 to m's main stream 1."""
    result = checked(dependency_graph(True, attached(required=False, depends=(0,))))
    assert events(result)[1] == (1, "p", "m", 2, 1)


def test_no_dependency_event_between_equal_streams_or_from_data() -> None:
    """Same attached stream at both ends (forced reuse) or a Data source: nothing."""
    builder = GraphBuilder("same")
    builder.add_node("d", "Data")
    builder.add_node("p", "Relu", inputs=[DataInput("d")], stream_id=0,
                     attrs=attached(force=True, depends=(0,)))
    builder.add_node("m", "MatMul", inputs=[DataInput("p")], stream_id=0,
                     attrs=attached(force=True, depends=(0,)))
    assert events(checked(builder.build())) == []


def test_a_variable_s_in_place_writer_and_the_first_active_node_stand_in() -> None:
    """2.6: a Variable source is replaced by its latest consumer marked `reference` (up to the
    node); a source before the graph's first-active StreamActive by that StreamActive."""
    builder = GraphBuilder("stand")
    builder.add_node("v", "Variable", stream_id=-1)
    builder.add_node("first", "StreamActive", stream_id=0,
                     attrs={"subgraph_first_active": AttrValue("bool", True)})
    builder.add_node("assign", "Assign", inputs=[DataInput("v")], stream_id=0,
                     attrs={"reference": AttrValue("bool", True)})
    builder.add_node("m", "MatMul", inputs=[DataInput("v")], stream_id=0,
                     control_inputs=["assign"], attrs=attached(depends=(0,)))
    result = checked(builder.build())
    assert (0, "assign", "m", 0, 1) in events(result)

    before = GraphBuilder("early")
    before.add_node("p", "Relu", stream_id=0)
    before.add_node("first", "StreamActive", inputs=[DataInput("p")], stream_id=0,
                    attrs={"subgraph_first_active": AttrValue("bool", True)})
    before.add_node("m", "MatMul", inputs=[DataInput("p")], stream_id=0,
                    attrs=attached(depends=(0,)))
    assert (0, "first", "m", 0, 1) in events(checked(before.build()))


def test_dependency_errors_are_ge_s() -> None:
    """Unknown input index: the attribute is wrong (exit 3); an end with two attached streams:
    GE fails (exit 4)."""
    with pytest.raises(InputError, match="input 3"):
        plan(dependency_graph(False, attached(depends=(3,))), mode="preset")
    two = {**attached(depends=(0,))}
    entries = two["_attached_stream_info_list"].value
    two["_attached_stream_info_list"] = AttrValue("list_named_attrs", (*entries, NamedAttrs(
        "", {"_attached_resource_name": AttrValue("string", "aux2"),
             "_attached_resource_required_flag": AttrValue("bool", True)})))
    with pytest.raises(AllocationInfeasible, match="more than one attached stream"):
        plan(dependency_graph(False, two), mode="preset")


def resource_graph(dynamic_sub: bool = False) -> Graph:
    """Root: a (two event resources, keys k and none), b (event resource with key k, a notify
    resource); subgraph body of pc: c (event resource key k: another graph, no sharing)."""
    builder = GraphBuilder("res")
    builder.add_subgraph("body", attrs={"unknown_shape": AttrValue("bool", dynamic_sub)})
    builder.add_node("a", "Relu", stream_id=0,
                     attrs=attached(resources=(("ev", "event", "k"), ("ev", "event", ""))))
    builder.add_node("b", "Relu", inputs=[DataInput("a")], stream_id=0,
                     attrs=attached(resources=(("ev", "event", "k"), ("nt", "notify", ""))))
    builder.add_node("pc", "PartitionedCall", inputs=[DataInput("b")], stream_id=0,
                     subgraphs=[("f", "body")])
    builder.add_node("bd", "Data", graph="body",
                     attrs={"_parent_node_index": AttrValue("int", 0)})
    builder.add_node("c", "Relu", graph="body", inputs=[DataInput("bd")], stream_id=0,
                     attrs=attached(resources=(("ev", "event", "k"),)))
    return builder.build()


def test_attached_sync_resources_are_counted_without_send_or_recv() -> None:
    """4.5: per graph, each distinct key gets its ids: root {evk, ev<a>} = 2 events, body
    {evk} = 1, one notify; no Send/Recv for them; they come after Phase A's events and before
    the split's."""
    result = checked(resource_graph())
    assert (result.event_count, result.notify_count) == (3, 1)
    assert result.events == ()
    assert result.sync_nodes == ()


def test_the_event_pass_skips_unknown_shape_subgraphs() -> None:
    result = checked(resource_graph(dynamic_sub=True))
    assert (result.event_count, result.notify_count) == (2, 1)


def chain_with_attached(count: int) -> Graph:
    builder = GraphBuilder("att")
    for i in range(count):
        builder.add_node(f"n{i}", "Relu", inputs=[DataInput(f"n{i - 1}")] if i else [],
                         stream_id=0, attrs=attached())
    builder.add_node("out", "NetOutput", inputs=[DataInput(f"n{count - 1}")], stream_id=0)
    return builder.build()


def test_anchor_345_nodes_with_one_attached_stream() -> None:
    """5.9 anchor: 345 nodes x 3 units with one attached stream (3 units each on both): both
    split at the 333rd node, main into 2 and attached into 3, stream_num 4, events 1 (2.7's
    NetOutput event) + 2 (the splits); the NetOutput event leaves the attached stream's last
    piece."""
    result = checked(chain_with_attached(345))
    assert dict(result.split_to_logic) == {0: 0, 1: 1, 2: 0, 3: 1}
    assert events(result) == [(0, "n344", "out", 3, 2), (1, "n331", "n332", 0, 2),
                              (2, "n331", "n332", 1, 3)]
    assert result.units[1] == 332 * 3 + 1 and result.units[3] == 13 * 3 + 2 + 1


def test_ge_mode_attached_streams_and_one_huge_node() -> None:
    """A MatMul chain with attached streams (ge mode: AssignAttachedStreamPass) and one node of
    990 units: it opens a stream on its main and on its attached stream (30 + 990 + 27 > 1024),
    the two 3-unit nodes after it still fit (996 + 27 <= 1024), the third opens the next one;
    each piece (nodes, split events, 7 profiling units) fits the stream depth."""
    builder = GraphBuilder("huge")
    builder.add_node("d", "Data")
    for i in range(30):
        builder.add_node(f"m{i}", "MatMul", inputs=[DataInput(f"m{i - 1}" if i else "d")],
                         task_count=990 if i == 10 else 3, attrs=attached())
    builder.add_node("out", "NetOutput", inputs=[DataInput("m29")])
    result = checked(builder.build(), mode="ge")
    assert dict(result.split_to_logic) == {0: 0, 1: 1, 2: 0, 3: 1, 4: 0, 5: 1}
    assert [t for t in result.streams[2] if t in result.physical] == ["m10", "m11", "m12"]
    assert result.units[2] == result.units[3] == 990 + 2 * 3 + 2 + 1
