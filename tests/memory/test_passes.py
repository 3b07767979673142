"""The variable passes: prepare (VarRefs), acceleration (format fusion), VarIsInitialized."""

from __future__ import annotations

import pytest
from memory.graphs import Spec, build, tensor

from streamalloc.ir.graph import DataInput, Graph, Node
from streamalloc.memory import MemType, Status, VarDesc, VarGraphError, VarManager, VarManagerPool
from streamalloc.memory.codes import NC1HWC0, ND
from streamalloc.memory.passes import (
    VAR_PASSES,
    RebuildStateCtrl,
    VariableOpPass,
    VariablePrepareOpPass,
    VarIsInitializedOpPass,
    VarPassContext,
    run_passes,
)

NCHW4 = tensor((1, 2, 3, 4), fmt="NCHW")
HD5 = tensor((1, 1, 3, 4, 16), fmt="NC1HWC0")


def manager() -> VarManager:
    m = VarManagerPool().get(0)
    m.init(0, 0, 0, 0)
    return m


def ctx() -> VarPassContext:
    return VarPassContext(manager())


def node(g: Graph, name: str) -> Node:
    return g.node(name)


# ---- variable-prepare-op ------------------------------------------------------------------------

def _assign_graph(extra: list[Spec] | None = None) -> Graph:
    return build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "val", "type": "Const", "outputs": [NCHW4]},
        {"name": "assign", "type": "Assign", "inputs": ["v", "val"], "outputs": [NCHW4],
         "attrs": {"_stream_label": "s1"}},
        {"name": "use", "type": "Relu", "inputs": ["assign"], "outputs": [NCHW4]},
        *(extra or []),
    ])


def test_prepare_adds_a_var_ref_after_the_writer() -> None:
    result = VariablePrepareOpPass().apply(_assign_graph())
    assert result.changed
    ref = node(result.graph, "v_TO_assign_REF_0")
    assert ref.type == "Variable" and ref.inputs == (DataInput("assign", 0),)
    assert ref.attr("ref_var_src_var_name") == "v" and ref.attr("_stream_label") == "s1"
    assert ref.outputs == (NCHW4,) and ref.input_descs == (NCHW4,)
    assert "v_TO_assign_REF_0" in node(result.graph, "use").control_inputs
    again = VariablePrepareOpPass().apply(result.graph)  # not added twice
    assert not again.changed and again.graph is result.graph


def test_prepare_follows_the_chain_of_writers() -> None:
    g = build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "c", "type": "Const", "outputs": [NCHW4]},
        {"name": "add", "type": "AssignAdd", "inputs": ["v", "c"], "outputs": [NCHW4]},
        {"name": "assign", "type": "Assign", "inputs": ["add", "c"], "outputs": [NCHW4]},
    ])
    names = {n.name for n in VariablePrepareOpPass().apply(g).graph.all_nodes()}
    assert "v_TO_assign_REF_0" in names and "v_TO_add_REF_0" not in names


def test_prepare_middle_writer_with_control_successors_gets_a_var_ref() -> None:
    g = build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "c", "type": "Const", "outputs": [NCHW4]},
        {"name": "add", "type": "AssignAdd", "inputs": ["v", "c"], "outputs": [NCHW4]},
        {"name": "assign", "type": "Assign", "inputs": ["add", "c"], "outputs": [NCHW4]},
        {"name": "after", "type": "NoOp", "control": ["add"]},
    ])
    names = {n.name for n in VariablePrepareOpPass().apply(g).graph.all_nodes()}
    assert {"v_TO_assign_REF_0", "v_TO_add_REF_0"} <= names


def test_prepare_ref_input_without_ref_output_gets_a_ref_identity() -> None:
    ref_desc = tensor((1, 2, 3, 4), fmt="NCHW", ref_port_index=[0])
    g = build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "w", "type": "WriteVar", "inputs": ["v"], "outputs": [NCHW4],
         "input_descs": [ref_desc],
         "attrs": {"_input_name_idx_key": ["x"], "_input_name_idx_value": [0],
                   "_output_name_idx_key": ["y"], "_output_name_idx_value": [0]}},
    ])
    out = VariablePrepareOpPass().apply(g).graph
    ident = node(out, "RefIdentity_v_0_TO_w_0")
    assert ident.type == "RefIdentity" and ident.inputs == (DataInput("v", 0),)
    assert node(out, "w").inputs == (DataInput("RefIdentity_v_0_TO_w_0", 0),)
    ref = node(out, "v_TO_w_REF_0")
    assert ref.inputs == (DataInput("RefIdentity_v_0_TO_w_0", 0),) and "w" in ref.control_inputs


def test_prepare_merge_successor_gets_an_identity() -> None:
    g = _assign_graph([{"name": "merge", "type": "Merge", "inputs": ["assign", "val"]}])
    out = VariablePrepareOpPass().apply(g).graph
    ident = node(out, "Identity_assign_TO_merge_0")
    assert node(out, "merge").inputs[0] == DataInput(ident.name, 0)
    assert "v_TO_assign_REF_0" in ident.control_inputs
    assert "v_TO_assign_REF_0" not in node(out, "merge").control_inputs


def test_prepare_ref_switch_framework_op_gets_no_var_ref() -> None:
    g = build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "p", "type": "Const", "outputs": [tensor((), "bool")]},
        {"name": "sw", "type": "FrameworkOp", "inputs": ["v", "p"], "outputs": [NCHW4, NCHW4],
         "attrs": {"original_type": "RefSwitch"}},
        {"name": "c", "type": "Const", "outputs": [NCHW4]},
        {"name": "assign", "type": "Assign", "inputs": ["c", "c"], "outputs": [NCHW4]},
    ])
    result = VariablePrepareOpPass().apply(g)
    assert not any(n.name.startswith("v_TO_sw") for n in result.graph.all_nodes())


def test_prepare_without_ref_ops_keeps_the_graph() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [NCHW4]},
               {"name": "r", "type": "Relu", "inputs": ["v"]}])
    assert VariablePrepareOpPass().apply(g).graph is g


# ---- variable-op --------------------------------------------------------------------------------

def _trans_graph(*readers: Spec, options: dict[str, str] | None = None) -> Graph:
    return build([{"name": "v", "type": "Variable", "outputs": [NCHW4]}, *readers], options)


TRANS = {"name": "t", "type": "TransData", "inputs": ["v"], "outputs": [HD5]}
CONV = {"name": "conv", "type": "Relu", "inputs": ["t"], "outputs": [HD5]}


def test_variable_op_fuses_trans_data() -> None:
    c = ctx()
    result = VariableOpPass().apply(_trans_graph(TRANS, CONV), c)
    assert result.changed
    g = result.graph
    assert "t" not in {n.name for n in g.all_nodes()}
    assert node(g, "conv").inputs == (DataInput("v", 0),)
    assert node(g, "v").outputs[0].format == "NC1HWC0"
    assert node(g, "v").outputs[0].shape == (1, 1, 3, 4, 16)
    road = c.manager.get_trans_road("v")
    assert road is not None and [s.node_type for s in road] == ["TransData"]
    assert (road[0].input.format, road[0].output.format) == (0, NC1HWC0)
    assert c.manager.get_changed_graph_id("v") == 0
    assert not c.rebuild.is_var_permit_to_change_formats("v")


def test_variable_op_prepends_reformat_when_formats_differ() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [tensor((1, 2, 3, 4))]},
               {**TRANS, "input_descs": [NCHW4]}, CONV])
    c = ctx()
    VariableOpPass().apply(g, c)
    road = c.manager.get_trans_road("v")
    assert road is not None and [s.node_type for s in road] == ["ReFormat", "TransData"]
    assert (road[0].input.format, road[0].output.format) == (ND, 0)


def test_variable_op_fuses_layer_after_layer() -> None:
    half = tensor((1, 2, 3, 4), "float16", "NCHW")
    hd5 = tensor((1, 1, 3, 4, 16), "float16", "NC1HWC0")
    g = _trans_graph({"name": "cast", "type": "Cast", "inputs": ["v"], "outputs": [half]},
                     {"name": "t", "type": "TransData", "inputs": ["cast"], "outputs": [hd5]},
                     {"name": "r", "type": "Relu", "inputs": ["t"], "outputs": [hd5]})
    c = ctx()
    out = VariableOpPass().apply(g, c).graph
    assert node(out, "r").inputs == (DataInput("v", 0),)
    road = c.manager.get_trans_road("v")
    assert road is not None and [s.node_type for s in road] == ["Cast", "TransData"]
    assert node(out, "v").outputs[0].dtype == "float16"


@pytest.mark.parametrize("readers", [
    [TRANS, {"name": "c2", "type": "Cast", "inputs": ["v"],
             "outputs": [tensor((1, 2, 3, 4), "float16", "NCHW")]}],  # two different readers
    [{"name": "r", "type": "Relu", "inputs": ["v"]}],  # not a trans op
    [{"name": "t", "type": "TransData", "inputs": ["v"],
      "outputs": [tensor((1, 2, 3, 4), fmt="NDHWC")]}],  # unsupported conversion
    [{"name": "t", "type": "TransData", "inputs": ["v"],
      "outputs": [tensor((-1, 1, 3, 4, 16), fmt="NC1HWC0")]}],  # unknown output shape
])
def test_variable_op_leaves_unfusable_variables(readers: list[Spec]) -> None:
    g = _trans_graph(*readers)
    assert VariableOpPass().apply(g, ctx()).graph is g


def _var_ref_graph(back_out: object = NCHW4, extra_in: bool = False) -> Graph:
    return build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "t1", "type": "TransData", "inputs": ["v"], "outputs": [HD5]},
        {"name": "val", "type": "Const", "outputs": [HD5]},
        {"name": "assign", "type": "Assign", "inputs": ["t1", "val"], "outputs": [HD5]},
        {"name": "t2", "type": "TransData", "inputs": ["assign"], "outputs": [back_out]},
        {"name": "ref", "type": "Variable", "inputs": ["t2", "val"] if extra_in else ["t2"],
         "outputs": [NCHW4], "attrs": {"ref_var_src_var_name": "v"}},
    ])


def test_variable_op_fuses_through_the_inverse_write_back() -> None:
    out = VariableOpPass().apply(_var_ref_graph(), ctx()).graph
    names = {n.name for n in out.all_nodes()}
    assert "t1" not in names and "t2" not in names
    assert node(out, "assign").inputs[0] == DataInput("v", 0)
    assert node(out, "ref").inputs == (DataInput("assign", 0),)
    assert node(out, "ref").outputs[0].format == "NC1HWC0"
    assert node(out, "ref").input_descs[0].format == "NC1HWC0"


def test_variable_op_refuses_a_write_back_that_is_not_the_inverse() -> None:
    g = _var_ref_graph(back_out=tensor((1, 2, 3, 4), fmt="NHWC"))
    c = ctx()
    assert VariableOpPass().apply(g, c).graph is g
    assert c.manager.get_trans_road("v") is None


def test_variable_op_var_ref_with_two_producers_fails() -> None:
    with pytest.raises(VarGraphError) as err:
        VariableOpPass().apply(_var_ref_graph(extra_in=True), ctx())
    assert err.value.status == Status.GE_GRAPH_VARIABLE_OP_PASS_FAILED


def test_variable_op_changes_a_variable_once_per_session() -> None:
    c = ctx()
    first = _trans_graph(TRANS, CONV)
    c.rebuild.add_graph(1, first)
    c.graph_id = 2
    assert VariableOpPass().apply(first, c).changed
    assert c.rebuild.is_graph_need_rebuild(1)
    second = _trans_graph(TRANS, CONV)
    assert VariableOpPass().apply(second, c).graph is second


@pytest.mark.parametrize("options", [{"ge.exec.variable_acc": "False"},
                                     {"ge.AllowMultiGraphParallelCompile": "1"}])
def test_variable_op_disabled_by_options(options: dict[str, str]) -> None:
    g = _trans_graph(TRANS, CONV, options=options)
    assert VariableOpPass().apply(g, ctx()).graph is g


def test_variable_op_skipped_with_a_batch_map() -> None:
    c = ctx()
    c.manager.set_batch_variables_key_name("v_batch_0", "v")
    g = _trans_graph(TRANS, CONV)
    assert VariableOpPass().apply(g, c).graph is g


def test_variable_op_reshape_road_renews_the_managers_descriptor() -> None:
    c = ctx()
    c.manager.assign_var_mem("v", None, VarDesc(shape=(1, 2, 3, 4), format=0, size=96),
                             MemType.HBM)
    g = _trans_graph({"name": "rs", "type": "Reshape", "inputs": ["v"],
                      "outputs": [tensor((24,), fmt="ND")]},
                     {"name": "r", "type": "Relu", "inputs": ["rs"]})
    VariableOpPass().apply(g, c)
    assert c.manager.get_cur_var_desc("v").format == ND
    assert c.manager.is_var_exist("v", VarDesc(shape=(1, 2, 3, 4), format=ND))
    assert c.manager.get_staged_var_descs(0)["v"].format == 0


# ---- var-is-initialized-op ----------------------------------------------------------------------

def _query_graph(control: bool) -> Graph:
    return build([
        {"name": "v", "type": "Variable", "outputs": [NCHW4]},
        {"name": "val", "type": "Const", "outputs": [NCHW4]},
        {"name": "assign", "type": "Assign", "inputs": ["v", "val"], "outputs": [NCHW4]},
        {"name": "q", "type": "VarIsInitializedOp", "inputs": ["v"],
         "control": ["assign"] if control else [], "outputs": [tensor((), "bool")]},
        {"name": "use", "type": "LogicalNot", "inputs": ["q"]},
    ])


@pytest.mark.parametrize(("control", "known", "expected"), [
    (True, False, 1), (False, False, 0), (False, True, 1)])
def test_var_is_initialized_folds_to_a_const(control: bool, known: bool, expected: int) -> None:
    c = ctx()
    if known:
        c.manager.assign_var_mem("v", None, VarDesc(size=96), MemType.HBM)
    out = VarIsInitializedOpPass().apply(_query_graph(control), c).graph
    q = node(out, "q")
    assert q.type == "Const" and q.inputs == () and q.control_inputs[0] == "v"
    assert q.attrs["value"].value.data == bytes([expected])
    assert node(out, "use").inputs == (DataInput("q", 0),)


def test_var_is_initialized_needs_a_variable_input() -> None:
    g = build([{"name": "c", "type": "Const", "outputs": [NCHW4]},
               {"name": "q", "type": "IsVariableInitialized", "inputs": ["c"]}])
    with pytest.raises(VarGraphError) as err:
        VarIsInitializedOpPass().apply(g, ctx())
    assert err.value.status == Status.FAILED


def test_registry_and_runner() -> None:
    assert list(VAR_PASSES) == ["variable-prepare-op", "variable-op", "var-is-initialized-op",
                                "file-constant-export"]
    result = run_passes(_assign_graph(), ["variable-prepare-op", "variable-op"], ctx())
    assert result.changed
    with pytest.raises(ValueError, match="known: variable-prepare-op"):
        run_passes(_assign_graph(), ["nope"], ctx())


def test_a_change_flags_the_graphs_using_the_variable_and_the_one_compiling() -> None:
    """Spec 15's GraphRebuildStateCtrl: a format change flags every graph whose resources hold
    the variable and the graph being compiled, until its build ends; a variable changes at
    most once; removing a graph forgets its resources and its flag."""
    rebuild = RebuildStateCtrl()
    rebuild.add_graph(1, names=["w"])
    rebuild.add_graph(2, names=["other"])
    rebuild.start_build(3)
    assert rebuild.is_var_permit_to_change_formats("w")
    rebuild.set_state_changed("w")
    assert not rebuild.is_var_permit_to_change_formats("w")
    assert [rebuild.is_graph_need_rebuild(g) for g in (1, 2, 3)] == [True, False, True]
    rebuild.set_graph_build_end(3)
    assert not rebuild.is_graph_need_rebuild(3)
    rebuild.set_state_changed("other")  # no graph compiling now: only graph 2
    assert [rebuild.is_graph_need_rebuild(g) for g in (1, 2, 3)] == [True, True, False]
    rebuild.remove_graph(1)
    assert not rebuild.is_graph_need_rebuild(1)
    rebuild.set_state_changed("w")
    assert not rebuild.is_graph_need_rebuild(1)
