"""The compile-phase driver (spec 14) and the build-time memory limit (spec 11)."""

from __future__ import annotations

import pytest
from memory.graphs import F32_4, build, tensor

from streamalloc.memory import (
    MemType,
    Status,
    VarDesc,
    VarManager,
    VarManagerPool,
    VarMemoryExhausted,
)
from streamalloc.memory.codes import U64_MAX
from streamalloc.memory.compile_driver import (
    assign_static_memory,
    assign_variable_attrs,
    available_memory,
    check_build_memory,
)

BASE = 34359738368


def manager() -> VarManager:
    m = VarManagerPool().get(0)
    m.init(0, 0, 0, 0)
    return m


def test_static_memory_records_sizes_offsets_and_graph_ids() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [tensor((25,))]},
               {"name": "k", "type": "Const", "outputs": [F32_4]}])
    m = manager()
    (v,) = assign_static_memory(g, m, graph_id=7)  # GE's four types: no Const
    assert (v.desc.size, v.logical, v.block, v.fresh) == (160, BASE, 1536, True)
    assert v.op.output_offsets == (BASE,)
    assert m.get_allocated_graph_id("v") == 7


def test_src_var_name_registers_under_the_source_descriptor() -> None:
    g = build([{"name": "src", "type": "Variable", "outputs": [tensor((4,), "float32")]},
               {"name": "half", "type": "Variable", "outputs": [tensor((4,), "float16")],
                "attrs": {"_src_var_name": "src"}}])
    m = manager()
    assign_static_memory(g, m)
    src_addr, _ = m.get_var_addr("src", m.get_cur_var_desc("src"))
    assert m.get_cur_var_desc("half").dtype == 0  # the source's float32 descriptor
    assert m.is_var_exist("half", m.get_cur_var_desc("src"))
    assert m.get_var_addr("half", m.get_cur_var_desc("src"))[0] == src_addr


def test_unknown_src_var_name_is_an_input_error() -> None:
    g = build([{"name": "half", "type": "Variable", "outputs": [F32_4],
                "attrs": {"_src_var_name": "nope"}}])
    with pytest.raises(Exception, match="'nope' is not a known variable") as err:
        assign_static_memory(g, manager())
    assert getattr(err.value, "exit_code", None) == 3


def test_broadcast_info_and_assign_chains() -> None:
    g = build([
        {"name": "v", "type": "Variable", "outputs": [F32_4]},
        {"name": "c", "type": "Const", "outputs": [F32_4]},
        {"name": "a1", "type": "Assign", "inputs": ["v", "c"], "outputs": [F32_4]},
        {"name": "a2", "type": "AssignAdd", "inputs": ["a1", "c"], "outputs": [F32_4]},
        {"name": "bc", "type": "HcomBroadcast", "inputs": ["v"], "outputs": [F32_4]},
        {"name": "out", "type": "TensorMove", "outputs": [F32_4], "inputs": [],
         "attrs": {}},
    ])
    m = manager()
    done = assign_static_memory(g, m)
    offsets = assign_variable_attrs(g, m, 3, done, {"bc": [BASE + 4096]})
    assert offsets["a1"] == (BASE,) and offsets["a2"] == (BASE,)
    info = m.require_resource().broadcast_by_graph[3]["v"]
    assert (info.broadcast_name, info.idx, info.input_size, info.output_size) == ("bc", 0, 64, 64)
    assert info.input_offset == info.output_offset == BASE + 4096


def test_broadcast_sizes_must_match() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [F32_4]},
               {"name": "bc", "type": "HcomBroadcast", "inputs": ["v"],
                "outputs": [tensor((400,))]}])
    m = manager()
    with pytest.raises(Exception, match="input 0 has 64 bytes but output 0 has 1632") as err:
        assign_variable_attrs(g, m, 0, assign_static_memory(g, m))
    assert getattr(err.value, "status", None) == Status.FAILED


def test_ref_attr_outputs_take_the_source_address() -> None:
    g = build([{"name": "v", "type": "Variable", "outputs": [F32_4]},
               {"name": "w", "type": "Variable", "outputs": [F32_4]},
               {"name": "op", "type": "ScatterUpdate", "inputs": ["w"],
                "outputs": [tensor((4,), ref_var_src_var_name="w")]}])
    m = manager()
    offsets = assign_variable_attrs(g, m, 0, assign_static_memory(g, m))
    assert offsets["op"] == (BASE + 1536,)


def test_build_check_and_available_memory() -> None:
    m = manager()
    m.assign_var_mem("v", None, VarDesc(size=1000), MemType.HBM)
    check_build_memory(m, 100, 2048 + 100)
    with pytest.raises(VarMemoryExhausted) as err:
        check_build_memory(m, 101, 2048 + 100)
    assert err.value.status == Status.ACL_ERROR_GE_MEMORY_ALLOCATION
    assert "by 1" in str(err.value)
    expected = m.use_max_mem_size - m.var_mem_max_size - 10
    assert available_memory(m, [10]) == expected
    assert available_memory(m, [m.use_max_mem_size]) == (expected + 10 - m.use_max_mem_size
                                                         ) & U64_MAX
