"""Every worked example of the specification (ge-variable-memory.md), as a test.

Sections: 1.3 keys, 4.1 compile sizes, 4.5 A-D block layout, 6.2 the logical-base quirk,
7 runtime resolution (auto-malloc and external memory), 11 limits, 13 the serialization round
trip, and formats.md section 6's plan example.
"""

from __future__ import annotations

import pytest

from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory import (
    EmulatedMemory,
    MemType,
    Status,
    VarDesc,
    VarManager,
    VarManagerError,
    VarManagerPool,
    VarOp,
    Weight,
    var_key,
)
from streamalloc.memory.assignment import MemResource
from streamalloc.memory.codes import FLOAT, GIB, NCHW, ND, UINT8
from streamalloc.memory.desc import round_compile_size
from streamalloc.memory.plan import plan_to_json, variable_plan

HBM = MemType.HBM
BASE32 = 34359738368
BASE128 = 137438953472


def fresh(session: int = 0, memory: EmulatedMemory | None = None) -> VarManager:
    manager = VarManagerPool().get(session)
    manager.init(0, session, 0, 0)
    if memory is not None:
        manager.set_mem_manager(memory)
    return manager


def hbm(manager: VarManager) -> MemResource:
    """The manager's HBM memory resource (it exists once something was assigned)."""
    resource = manager.mem_resources[HBM]
    assert resource is not None
    return resource


def test_1_3_keys() -> None:
    assert var_key("global_step", VarDesc(format=ND, dtype=FLOAT)) == "global_step2_0"
    assert var_key("tmp_var", VarDesc(format=NCHW, dtype=FLOAT)) == "tmp_var0_0"
    assert var_key("const1", VarDesc(format=ND, dtype=UINT8)) == "const12_4"
    assert var_key("tmp_var", VarDesc(format=ND, dtype=16)) == "tmp_var2_16"
    # shape is not part of the key; names ending in digits can collide
    assert var_key("v", VarDesc(shape=(1,))) == var_key("v", VarDesc(shape=(2, 3)))
    assert var_key("v1", VarDesc(format=12)) == var_key("v11", VarDesc(format=2)) == "v112_0"
    assert var_key("b0", VarDesc(), {"b0": "shared"}) == "shared2_0"


def test_4_1_compile_sizes() -> None:
    assert [round_compile_size(n) for n in (100, 4096, 1, 0)] == [160, 4128, 64, 32]


@pytest.mark.parametrize("base_128", [False, True])
def test_4_5_a_three_variables(base_128: bool) -> None:
    manager = fresh()
    if base_128:
        manager.set_memory_malloc_size({}, GIB)
    base = BASE128 if base_128 else BASE32
    got = [manager.assign_var_mem(f"v{i}", None, VarDesc(size=s), HBM)
           for i, s in enumerate((100, 4096, 1), 1)]
    assert got == [base, base + 1536, base + 6656]
    assert hbm(manager).var_mem_size == 8192
    assert manager.get_var_mem_size(HBM) == 8192


def _graph_with_sizes(raw: list[int]) -> Graph:
    b = GraphBuilder("g")
    for i, n in enumerate(raw, 1):
        b.add_node(f"v{i}", "Variable", outputs=[TensorDesc((n,), "uint8")])
    return b.build()


def test_4_5_b_through_the_compiler() -> None:
    plan = variable_plan(_graph_with_sizes([100, 4096, 1]))
    assert [v.desc.size for v in plan.variables.values()] == [160, 4128, 64]
    assert [v.size for v in plan.variables.values()] == [1536, 5632, 1536]
    assert [v.offset for v in plan.variables.values()] == [0, 1536, 7168]
    assert plan.total_size["HBM"] == 8704


def _const(name: str, data: list[int]) -> VarOp:
    desc = VarDesc(shape=(len(data),), dtype=UINT8)
    return VarOp(name, "Constant", (desc,), Weight(UINT8, (len(data),), bytes(data)))


def test_4_5_c_constant_dedup() -> None:
    manager = fresh()
    c1, c2, c3 = _const("const1", [1, 2, 3]), _const("const2", [1, 2, 3]), \
        _const("const3", [1, 2, 3, 4, 5])
    assert manager.assign_var_mem("const1", c1, c1.outputs[0], HBM) == BASE32
    assert hbm(manager).var_mem_size == 1024
    assert manager.assign_var_mem("const2", c2, c2.outputs[0], HBM) == BASE32
    assert hbm(manager).var_mem_size == 1024
    assert manager.assign_var_mem("const3", c3, c3.outputs[0], HBM) == 34359739392
    assert hbm(manager).var_mem_size == 2048


def test_4_5_c_dedup_ignores_dtype_of_equal_width() -> None:
    manager = fresh()
    a = VarOp("a", "Constant", (VarDesc(shape=(1,), dtype=3),), Weight(3, (1,), b"\1\0\0\0"))
    f = VarOp("f", "Constant", (VarDesc(shape=(1,), dtype=FLOAT),), Weight(FLOAT, (1,),
                                                                            b"\1\0\0\0"))
    assert manager.assign_var_mem("a", a, a.outputs[0], HBM) == \
        manager.assign_var_mem("f", f, f.outputs[0], HBM)


def test_4_5_d_const_place_holder() -> None:
    manager = fresh()
    op = VarOp("cph", "ConstPlaceHolder", (VarDesc(shape=(3,), dtype=UINT8, size=24),),
               attrs={"storage_shape": (1, 2, 3), "dtype": "FLOAT", "size": 24, "placement": 1,
                      "addr": 20000})
    manager.assign_var_mem("cph", op, op.outputs[0], HBM)
    assert (hbm(manager).var_mem_size, hbm(manager).const_placeholder_size) == (1536, 1536)
    assert manager.get_var_mem_size(HBM) == 0
    assert manager.get_var_const_placeholder_mem_size(HBM) == 1536


def test_5_quirk_bigger_same_key_fails_after_adding_the_block() -> None:
    manager = fresh()
    manager.assign_var_mem("v", None, VarDesc(shape=(1,), size=100), HBM)
    with pytest.raises(VarManagerError) as err:
        manager.assign_var_mem("v", None, VarDesc(shape=(1000,), size=4000), HBM)
    assert err.value.status == Status.INTERNAL_ERROR
    assert hbm(manager).var_mem_size == 1536 + 5120


def test_5_quirk_known_name_aliases_when_it_fits() -> None:
    manager = fresh()
    first = manager.assign_var_mem("v", None, VarDesc(format=NCHW, size=100), HBM)
    again = manager.assign_var_mem("v", None, VarDesc(format=ND, size=50), HBM)
    assert first == again
    assert manager.get_cur_var_desc("v").format == ND
    assert manager.is_var_exist("v", VarDesc(format=NCHW)) and \
        manager.is_var_exist("v", VarDesc(format=ND))


def test_6_2_quirk_base_of_the_resources_own_session() -> None:
    pool = VarManagerPool()
    manager = pool.get(5)
    manager.init(0, 0, 0, 0)  # slot 5, session id 0
    manager.set_memory_malloc_size({}, GIB)
    assert manager.var_mem_logic_base == BASE128
    assert manager.assign_var_mem("v", None, VarDesc(size=24), HBM) == BASE32
    assert 0 in pool  # the conversion created pool slot 0


def test_7_runtime_worked_example() -> None:
    memory = EmulatedMemory()
    manager = fresh(memory=memory)
    manager.assign_var_mem("a", None, VarDesc(size=100), HBM)  # offset 0, block 1536
    logical = manager.assign_var_mem("b", None, VarDesc(size=4128), HBM)
    assert logical == BASE32 + 1536
    before = memory.used()
    inner = manager.get_var_memory_addr(logical + 100, HBM)
    assert inner is not None and memory.used() - before == 5632
    device = inner - 612
    assert manager.get_var_memory_addr(logical, HBM) == device + 512
    assert manager.malloc_total == 5632


def test_7_runtime_external_memory() -> None:
    memory = EmulatedMemory()
    manager = fresh(memory=memory)
    manager.assign_var_mem("a", None, VarDesc(size=100), HBM)
    logical = manager.assign_var_mem("b", None, VarDesc(size=4128), HBM)
    external = memory.malloc(HBM, 8192)
    assert external is not None
    manager.set_external_var(external, 8192)
    assert manager.get_var_memory_addr(logical, HBM) == external + 1536
    manager.set_external_var(external, 100)  # smaller than the variables: refused
    assert manager.get_var_memory_addr(logical, HBM) is None


def test_11_limits_from_device_memory() -> None:
    manager = VarManagerPool().get(0)
    manager.set_memory_malloc_size({"ge.graphMemoryMaxSize": "1"}, GIB)
    assert (manager.graph_mem_max_size, manager.var_mem_max_size,
            manager.use_max_mem_size) == (872415232, 167772160, 1040187392)
    manager.set_memory_malloc_size({}, 32 * GIB)
    assert (manager.graph_mem_max_size, manager.var_mem_max_size) == (27917287424, 5368709120)


def test_11_limits_over_256_gib() -> None:
    manager = VarManagerPool().get(0)
    manager.graph_mem_max_size, manager.var_mem_max_size = 128 * GIB + 1, 128 * GIB
    with pytest.raises(VarManagerError) as err:
        manager.set_all_memory_max_value()
    assert err.value.status == Status.GE_GRAPH_OPTIONS_INVALID
    assert err.value.exit_code == 3
    assert manager.var_mem_logic_base == BASE128


def test_13_round_trip_example() -> None:
    pool = VarManagerPool()
    one = pool.get(1)
    one.init(1, 1, 0, 0x5A5A)
    one.set_memory_malloc_size({}, GIB)
    one.assign_var_mem("global_step", None, VarDesc(shape=(1, 2, 3, 4), size=24), HBM)
    info = one.serialize()
    assert dict(info.var_resource.var_offset_map) == {BASE128: 2}
    row = info.var_resource.var_addr_mgr_map["global_step2_0"]
    assert (row.address, row.offset, row.memory_type) == (BASE128, 0, 2)
    assert info.mem_resource_map[2].var_mem_size == 1536
    info.session_id = 2
    two = pool.get(2)
    two.deserialize(info)
    assert two.require_resource().addr_by_key.keys() == {"global_step2_0"}
    assert two.assign_var_mem("x", None, VarDesc(size=24), HBM) == 137438955008
    assert hbm(two).var_mem_size == 3072


def test_formats_md_section_6_example() -> None:
    """Three variables whose blocks are 1536, 5120, 1536 bytes: formats.md's totals."""
    plan = variable_plan(_graph_with_sizes([100, 4000, 1]))
    doc = plan_to_json(plan)
    assert doc["format"] == "streamalloc.vars/v1" and doc["session"] == 0
    # GE's key has no separator after the name (spec 1.3 and 19): "v12_4", not "v1_2_4"
    assert doc["variables"]["v1"] == {
        "key": "v12_4", "kind": "Variable", "mem_type": "HBM", "offset": 0, "size": 1536,
        "logical_address": BASE32, "reused_from": None}
    assert doc["total_size"] == {"HBM": 8192, "RDMA_HBM": 0, "HOST": 0}
