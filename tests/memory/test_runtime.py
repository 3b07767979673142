"""Runtime address resolution (spec 7): huge pages, devices, init values, statistics, freeing."""

from __future__ import annotations

import pytest

from streamalloc.memory import (
    EmulatedMemory,
    ExpandableAllocator,
    GeContext,
    InitValue,
    MemType,
    RuntimeVarManagerPool,
    Status,
    VarDesc,
    VarManager,
    VarManagerError,
    VarManagerPool,
    VarOp,
)
from streamalloc.memory.codes import GIB, HUGE_PAGE, NORMAL_PAGE

HBM = MemType.HBM


def setup(policy: str = "", rejected: tuple[int, ...] = ()) -> tuple[VarManager, EmulatedMemory]:
    memory = EmulatedMemory(rejected_page_sizes=rejected)
    pool = VarManagerPool(GeContext(session_options={"ge.variableUse1gHugePage": policy}))
    manager = pool.get(0)
    manager.init(0, 0, 0, 0)
    manager.set_mem_manager(memory)
    return manager, memory


def test_policy_1_uses_only_the_huge_page_allocator() -> None:
    manager, memory = setup("1")
    logical = manager.assign_var_mem("v", None, VarDesc(size=24), HBM)
    assert manager.get_var_memory_addr(logical, HBM) is None  # no allocator: no fallback
    allocator = ExpandableAllocator(memory, page_size=HUGE_PAGE)
    assert manager.init_expandable_memory_allocator(allocator)
    address = manager.get_var_memory_addr(logical, HBM)
    assert address is not None and allocator.mapped_bytes == GIB
    assert not allocator.reuse and allocator.private_pool
    assert not manager.init_expandable_memory_allocator(ExpandableAllocator(memory))


def test_policy_1_failing_huge_pages_keeps_the_allocator() -> None:
    manager, memory = setup("1", rejected=(HUGE_PAGE,))
    logical = manager.assign_var_mem("v", None, VarDesc(size=24), HBM)
    allocator = ExpandableAllocator(memory, page_size=HUGE_PAGE)
    assert manager.init_expandable_memory_allocator(allocator)
    assert manager.get_var_memory_addr(logical, HBM) is None
    assert manager.allocator is allocator and allocator.page_size == HUGE_PAGE
    assert allocator.mapped_bytes == 0 and memory.used() == 0  # no fallback to normal memory


@pytest.mark.parametrize("policy", ["2", ""])
def test_policy_2_and_0_fall_back_to_normal_memory(policy: str) -> None:
    manager, memory = setup(policy, rejected=(HUGE_PAGE,))
    logical = manager.assign_var_mem("v", None, VarDesc(size=24), HBM)
    manager.init_expandable_memory_allocator(ExpandableAllocator(memory, page_size=HUGE_PAGE))
    assert manager.get_var_memory_addr(logical, HBM) is not None
    assert manager.allocator is None  # dropped for good
    assert memory.used() == 1536


def test_runtime_manager_picks_the_page_size() -> None:
    for policy, page in (("1", HUGE_PAGE), ("2", HUGE_PAGE), ("", NORMAL_PAGE)):
        pool = VarManagerPool(GeContext(session_options={"ge.variableUse1gHugePage": policy}))
        rt = RuntimeVarManagerPool(pool, EmulatedMemory()).get(7)
        rt.init(0, 0, 4096)
        allocator = pool.get(7).allocator
        assert allocator is not None and allocator.page_size == page


def test_devices_have_their_own_tables_and_addresses() -> None:
    manager, memory = setup()
    logical = manager.assign_var_mem("v", None, VarDesc(size=24), HBM)
    a0 = manager.get_var_memory_addr(logical, HBM, device_id=0)
    a1 = manager.get_var_memory_addr(logical, HBM, device_id=1)
    assert a0 is not None and a1 is not None and a0 != a1
    assert memory.used(0) == memory.used(1) == 1536
    resource = manager.require_resource()
    assert set(resource.dev_info_by_device) == {0, 1}
    manager.set_var_is_ready("v", VarDesc(), 1)
    assert manager.is_var_ready("v", VarDesc(), 1) and not manager.is_var_ready("v", VarDesc(), 0)
    manager.free_var_memory()
    assert memory.used(0) == memory.used(1) == 0 and manager.malloc_total == 0
    assert all(r.device is None for t in resource.dev_info_by_device.values() for r in t.values())


def test_device_table_sync_keeps_existing_addresses() -> None:
    manager, _ = setup()
    first = manager.assign_var_mem("a", None, VarDesc(size=24), HBM)
    address = manager.get_var_memory_addr(first, HBM)
    second = manager.assign_var_mem("b", None, VarDesc(size=24), HBM)
    manager.update_dev_var_mgr_info(0)
    info = manager.get_var_mgr_info(0, first)
    assert info is not None and info.device is not None and address == info.device + 512
    added = manager.get_var_mgr_info(0, second)  # the sync adds the row, without an address yet
    assert added is not None
    assert (added.logical, added.desc.size, added.device) == (second, 24, None)


def test_init_value_mismatch_keeps_the_allocation() -> None:
    manager, memory = setup()
    init = InitValue(VarDesc(shape=(2,)), b"\1" * 8)
    logical = manager.assign_var_mem("v", None, VarDesc(shape=(3,), size=12, init_value=init), HBM)
    assert manager.get_var_memory_addr(logical, HBM) is None
    cached = manager.get_var_memory_addr(logical, HBM)
    assert cached is not None and memory.read(cached, 8) == bytes(8)  # uninitialized


def test_const_place_holder_resolves_to_the_user_address() -> None:
    manager, _ = setup()
    op = VarOp("cph", "ConstPlaceHolder", (VarDesc(shape=(3,), size=24),),
               attrs={"storage_shape": (6,), "dtype": "float32", "size": 24, "placement": 1,
                      "addr": 0xABC000})
    logical = manager.assign_var_mem("cph", op, op.outputs[0], HBM)
    assert manager.get_var_memory_addr(logical, HBM) == 0xABC000
    assert manager.get_var_memory_addr(logical + 4, HBM) == 0xABC000  # inner offset ignored


def test_const_place_holder_attribute_checks() -> None:
    manager, _ = setup()
    op = VarOp("cph", "ConstPlaceHolder", (VarDesc(size=24),),
               attrs={"storage_shape": (100,), "dtype": "float32", "size": 24, "placement": 1,
                      "addr": 1})
    with pytest.raises(VarManagerError) as err:
        manager.assign_var_mem("cph", op, op.outputs[0], HBM)
    assert err.value.status == Status.INTERNAL_ERROR


def test_graph_statistics_count_shared_use() -> None:
    manager, _ = setup()
    logical = manager.assign_var_mem("v", None, VarDesc(size=24), HBM)
    manager.get_var_memory_addr(logical, HBM, graph_name="g1")
    manager.get_var_memory_addr(logical, HBM, graph_name="g2")
    manager.get_var_memory_addr(logical, HBM, graph_name="g2")
    g1, g2 = manager.graph_stats["g1"], manager.graph_stats["g2"]
    assert (g1.alloc_size, g1.shared_size) == (1536, 0)
    assert (g2.alloc_size, g2.shared_size) == (0, 3072)  # counted on every call


def test_rdma_and_host_variables() -> None:
    pool = VarManagerPool()
    manager = pool.get(0)
    manager.init(0, 0, 0, 0)
    manager.set_mem_manager(memory := EmulatedMemory(rdma_pool_size=4096))
    rdma = manager.assign_var_mem("r", None, VarDesc(size=100), MemType.RDMA_HBM)
    host = manager.assign_var_mem("h", None, VarDesc(size=100), MemType.HOST)
    assert memory.device(0).rdma.block_of(rdma) == (rdma, 100)
    assert memory.host.block_of(host) == (host, 100) and memory.read(host, 100) == bytes(100)
    assert manager.get_var_mem_size(MemType.RDMA_HBM) == manager.get_var_mem_size(MemType.HOST)
    assert manager.get_var_memory_addr(rdma, MemType.RDMA_HBM) == rdma
    with pytest.raises(VarManagerError) as err:
        manager.assign_var_mem("big", None, VarDesc(size=8192), MemType.RDMA_HBM)
    assert err.value.status == Status.INTERNAL_ERROR and err.value.exit_code == 4
    with pytest.raises(VarManagerError) as err:
        manager.assign_var_mem("p2p", None, VarDesc(size=8), MemType.P2P_DDR)
    assert err.value.status == Status.PARAM_INVALID


def test_sessions_are_isolated() -> None:
    pool = VarManagerPool()
    a, b = pool.get(1), pool.get(2)
    a.init(0, 1, 0, 0)
    b.init(0, 2, 0, 0)
    assert a.assign_var_mem("v", None, VarDesc(size=8), HBM) == \
        b.assign_var_mem("w", None, VarDesc(size=8), HBM)
    assert not b.is_var_exist("v")
    pool.remove(1)
    assert 1 not in pool and len(pool) == 1
    pool.destroy()
    assert len(pool) == 0


def test_destroy_keeps_the_resource() -> None:
    manager, _ = setup()
    manager.assign_var_mem("v", None, VarDesc(size=8), HBM)
    manager.destroy()
    assert manager.is_var_exist("v") and manager.session_id == 0 and manager.version == 2
    # QUIRK: new allocations restart at offset 0 and overlap the old variable
    assert manager.assign_var_mem("w", None, VarDesc(size=8), HBM) == \
        manager.get_var_addr("v", VarDesc())[0]


def test_evaluate_mode_use_max() -> None:
    pool = VarManagerPool(GeContext(graph_options={"ge.evaluateGraphResourceMode": "1"}))
    manager = pool.get(0)
    assert manager.get_use_max_memory_size() == (1 << 64) - 1
    assert manager.get_var_mem_max_size() == 5 * GIB
