"""The variable plan of a graph: reuse rules through the compile driver, JSON, `vars` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memory.graphs import F32_4, Spec, build, tensor, weight

from streamalloc.errors import InputError, LimitExceeded, UsageError
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.memory import VarGraphError, VarMemoryExhausted
from streamalloc.memory.codes import GIB
from streamalloc.memory.plan import (
    plan_json_text,
    plan_text,
    plan_to_json,
    variable_plan,
    vars_command,
)

BASE = 34359738368


def _vars(*nodes: Spec) -> Graph:
    return build(list(nodes))


def test_constants_with_equal_bytes_share_memory() -> None:
    g = _vars({"name": "c1", "type": "Constant", "outputs": [F32_4], "attrs": {"value":
                                                                             weight(b"a" * 16)}},
              {"name": "c2", "type": "Constant", "outputs": [F32_4], "attrs": {"value":
                                                                             weight(b"a" * 16)}},
              {"name": "c3", "type": "Constant", "outputs": [F32_4], "attrs": {"value":
                                                                             weight(b"b" * 16)}})
    plan = variable_plan(g)
    c1, c2, c3 = (plan.variables[n] for n in ("c1", "c2", "c3"))
    assert c2.logical_address == c1.logical_address and c2.reused_from == "c1"
    assert c2.size == c1.size == 1536 and c2.key == "c22_0"
    assert c3.reused_from is None and c3.offset == 1536
    assert plan.total_size["HBM"] == 3072


def test_file_constants_share_by_path_and_offset() -> None:
    def fc(name: str, location: str, offset: int) -> Spec:
        return {"name": name, "type": "FileConstant", "outputs": [F32_4],
                "attrs": {"location": location, "offset": offset, "length": 16}}
    plan = variable_plan(_vars(fc("a", "w.bin", 0), fc("b", "w.bin", 0), fc("c", "w.bin", 512)))
    assert plan.variables["b"].reused_from == "a"
    assert plan.variables["c"].reused_from is None


def test_src_const_name_and_same_key_quirk() -> None:
    """Two nodes under one manager name: the second (bigger, same key) reuses the small block."""
    plan = variable_plan(_vars(
        {"name": "w_a", "type": "Variable", "outputs": [tensor((4,))],
         "attrs": {"_src_const_name": "w"}},
        {"name": "w_b", "type": "Variable", "outputs": [tensor((4000,))],
         "attrs": {"_src_const_name": "w"}}))
    a, b = plan.variables["w_a"], plan.variables["w_b"]
    assert a.key == b.key == "w2_0" and b.reused_from == "w_a"
    assert plan.total_size["HBM"] == 1536


def test_known_name_with_new_format_aliases() -> None:
    plan = variable_plan(_vars(
        {"name": "w_a", "type": "Variable", "outputs": [tensor((4,), fmt="NCHW")],
         "attrs": {"_src_const_name": "w"}},
        {"name": "w_b", "type": "Variable", "outputs": [tensor((4,), fmt="ND")],
         "attrs": {"_src_const_name": "w"}}))
    assert plan.variables["w_b"].key == "w2_0" and plan.variables["w_b"].reused_from == "w_a"


def test_rdma_output_memory_type() -> None:
    plan = variable_plan(_vars({"name": "r", "type": "Variable", "outputs": [F32_4],
                                "attrs": {"_output_memory_type": 1}}))
    r = plan.variables["r"]
    assert r.mem_type == "RDMA_HBM" and r.offset == r.logical_address and r.size == 64
    assert plan.total_size == {"HBM": 0, "RDMA_HBM": 64, "HOST": 0}


def test_kinds_and_var_refs() -> None:
    g = _vars({"name": "v", "type": "Variable", "outputs": [F32_4]},
              {"name": "v2", "type": "VariableV2", "outputs": [F32_4]},
              {"name": "k", "type": "Const", "outputs": [F32_4]},
              {"name": "ref", "type": "Variable", "outputs": [F32_4], "inputs": ["v"],
               "attrs": {"ref_var_src_var_name": "v"}})
    assert list(variable_plan(g).variables) == ["v", "v2", "k"]
    assert list(variable_plan(g, include_const=False).variables) == ["v"]


def test_json_is_deterministic_and_sorted() -> None:
    g = _vars({"name": "b", "type": "Variable", "outputs": [F32_4]},
              {"name": "a", "type": "Variable", "outputs": [F32_4]})
    text = plan_json_text(variable_plan(g))
    assert text == plan_json_text(variable_plan(g))
    doc = json.loads(text)
    assert list(doc) == ["format", "graph", "session", "variables", "total_size"]
    assert list(doc["variables"]) == ["a", "b"]
    assert doc["variables"]["b"]["offset"] == 0  # assignment order is graph order


def test_device_memory_option_configures_limits_and_base() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [F32_4]}],
              {"streamalloc.device_memory_size": str(GIB)})
    plan = variable_plan(g)
    assert plan.logic_base == 137438953472 and plan.device_memory_size == GIB


def test_out_of_device_memory() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [tensor((1 << 20,), "uint8")]}],
              {"streamalloc.device_memory_size": "1000000"})
    with pytest.raises(VarMemoryExhausted) as err:
        variable_plan(g)
    assert isinstance(err.value, LimitExceeded) and err.value.exit_code == 4
    assert "1000000" in str(err.value) and "1050112" in str(err.value)


@pytest.mark.parametrize("node", [
    {"name": "v", "type": "Variable"},
    {"name": "v", "type": "Variable", "outputs": [tensor((-1, 4))]},
    {"name": "v", "type": "Variable", "outputs": [tensor((4,), fmt="NOPE")]},
])
def test_bad_variables_are_input_errors(node: Spec) -> None:
    with pytest.raises(VarGraphError) as err:
        variable_plan(build([node]))
    assert isinstance(err.value, InputError) and err.value.exit_code == 3
    assert "'v'" in str(err.value)


def test_an_undescribed_broadcast_output_names_the_file_node_and_field(tmp_path: Path) -> None:
    """GE sizes a variable's broadcast from the broadcast node's output too: without that
    output's description the error names the file, the node and what to add."""
    path = tmp_path / "bcast.yaml"
    path.write_text("format: streamalloc.graph/v1\nname: g\nnodes:\n"
                    "- {name: w, type: Variable, outputs: [{shape: [4], dtype: float32}]}\n"
                    "- {name: b, type: HcomBroadcast, inputs: [w]}\n", encoding="utf-8")
    with pytest.raises(VarGraphError) as err:
        variable_plan(load_graph(path))
    assert str(err.value).startswith(f"{path}: node 'b' (HcomBroadcast) broadcasts variable 'w'")
    assert "an `outputs` entry 0 with a shape and dtype" in str(err.value)


def test_bad_device_memory_option() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [F32_4]}],
              {"streamalloc.device_memory_size": "lots"})
    with pytest.raises(InputError):
        variable_plan(g)


def test_plan_text_lists_every_variable() -> None:
    text = plan_text(variable_plan(_vars({"name": "v", "type": "Variable",
                                          "outputs": [F32_4]})))
    assert "1 variables and constants" in text and "v2_0" in text and "HBM 1536" in text


def test_assign_and_broadcast_consumers() -> None:
    g = _vars({"name": "v", "type": "Variable", "outputs": [F32_4]},
              {"name": "val", "type": "Const", "outputs": [F32_4]},
              {"name": "assign", "type": "Assign", "inputs": ["v", "val"], "outputs": [F32_4]},
              {"name": "bc", "type": "HcomBroadcast", "inputs": ["v"], "outputs": [F32_4]})
    plan = variable_plan(g)
    assert plan.node_offsets["assign"] == (BASE,)
    assert plan.variables["v"].logical_address == BASE


def test_vars_command_writes_atomically(tmp_path: Path) -> None:
    graph = tmp_path / "g.yaml"
    graph.write_text("format: streamalloc.graph/v1\nname: g\nnodes:\n"
                     "  - {name: w, type: Variable, outputs: [{shape: [25], dtype: float32}]}\n",
                     encoding="utf-8")
    out = tmp_path / "vars.json"
    text = vars_command(str(graph), str(out))
    assert "w2_0" in text
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc == plan_to_json(variable_plan(load_graph(graph)))
    assert not list(tmp_path.glob("*.tmp"))


def test_vars_command_failures_write_nothing(tmp_path: Path) -> None:
    graph = tmp_path / "g.yaml"
    graph.write_text("format: streamalloc.graph/v1\nname: g\nnodes:\n"
                     "  - {name: w, type: Variable}\n", encoding="utf-8")
    out = tmp_path / "vars.json"
    with pytest.raises(InputError):
        vars_command(str(graph), str(out))
    assert not out.exists()


def test_vars_command_unwritable_output(tmp_path: Path) -> None:
    graph = tmp_path / "ok.yaml"
    graph.write_text("format: streamalloc.graph/v1\nname: g\nnodes:\n"
                     "  - {name: w, type: Variable, outputs: [{shape: [1]}]}\n", encoding="utf-8")
    with pytest.raises(UsageError):
        vars_command(str(graph), str(tmp_path / "missing_dir" / "vars.json"))


def test_example_graph() -> None:
    example = Path(__file__).parents[2] / "examples" / "memory" / "train_vars.yaml"
    plan = variable_plan(load_graph(example))
    assert plan.variables["k2"].reused_from == "k1"
    assert plan.variables["emb_b"].reused_from == "emb_a"
    assert plan.variables["step"].mem_type == "RDMA_HBM"
    assert plan.total_size == {"HBM": 150528, "RDMA_HBM": 64, "HOST": 0}
