"""Runtime address resolution: logical variable address -> device address (spec 7), and freeing.

Resolution is checked in GE's order: no memory manager (none), RDMA (the address itself),
external variable memory (base-relative, no per-variable lookup), else auto-malloc: sync the
device table, find the variable (exactly, or strictly inside it), reuse its device address or
allocate its block on first use (session expandable allocator first, then the memory manager
unless the huge-page policy is "1 GiB only"), and copy its `_init_value`. `free_var_memory`
releases what resolution allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from streamalloc.memory.codes import (
    FRONT_GUARD,
    HUGE_PAGE_ONLY,
    MemType,
    Status,
    VarManagerError,
    fail,
    hbm_block,
)
from streamalloc.memory.desc import VarDesc, same_layout
from streamalloc.memory.resource import VarResource
from streamalloc.memory.tables import DevVarInfo

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager


@dataclass
class GraphVarStats:
    """Per-graph statistics: bytes this graph allocated, bytes it used that others allocated."""

    alloc_size: int = 0
    shared_size: int = 0
    addresses: set[int] = field(default_factory=set)


def get_var_memory_addr(manager: VarManager, logical: int, mem_type: int, device_id: int = 0,
                        graph_name: str = "") -> int | None:
    """The device address for `logical`, or None (spec 7; see the module docstring).

    >>> from streamalloc.memory.device import EmulatedMemory
    >>> from streamalloc.memory.manager import VarManagerPool
    >>> m = VarManagerPool().get(0); m.init(0, 0, 0, 0); m.set_mem_manager(EmulatedMemory())
    >>> L = m.assign_var_mem("v", None, VarDesc(size=4128), MemType.HBM)
    >>> inner = m.get_var_memory_addr(L + 100, MemType.HBM)
    >>> m.get_var_memory_addr(L, MemType.HBM) == inner - 100   # block + 512 both times
    True
    """
    if manager.mem_manager is None:
        return None
    if mem_type == MemType.RDMA_HBM:
        return logical  # RDMA addresses are real pointers already
    if manager.external_var_addr is not None and mem_type == MemType.HBM:
        return _external(manager, logical)
    if manager.resource is None:
        return None
    return _auto_malloc(manager, manager.resource, logical, mem_type, device_id=device_id,
                        graph_name=graph_name)


def _external(manager: VarManager, logical: int) -> int | None:
    """External memory: ptr + (logical - base); no front guard, no init value (spec 7 step 3)."""
    base, size = manager.var_mem_logic_base, manager.external_var_size
    if size < manager.get_var_mem_size(MemType.HBM) or logical < base or logical - base >= size:
        return None
    assert manager.external_var_addr is not None
    return manager.external_var_addr + (logical - base)


def _find(resource: VarResource, device_id: int, logical: int) -> tuple[int, int] | None:
    """(variable's logical address, inner offset) of the variable holding `logical`."""
    if logical in resource.dev_info_by_device[device_id]:
        return logical, 0
    try:
        inner, base = resource.check_logic_addr_valid(device_id, logical)
    except VarManagerError:
        return None
    return base, inner


def _auto_malloc(manager: VarManager, resource: VarResource, logical: int, mem_type: int, *,
                 device_id: int, graph_name: str) -> int | None:
    resource.update_dev_var_mgr_info(device_id)
    found = _find(resource, device_id, logical)
    if found is None:
        return None
    base, inner = found
    table = resource.dev_info_by_device[device_id]
    info = table[base]
    block = hbm_block(info.desc.size)
    stats = manager.graph_stats.setdefault(graph_name, GraphVarStats()) if graph_name else None
    if info.device is not None:
        return _cached(info, inner, block, stats)
    device = _malloc(manager, block, mem_type, device_id)
    if device is None:
        return None  # GE: "malloc var caching mem failed"
    _record(manager, table, info, device, stats)
    result = device + inner + FRONT_GUARD
    # QUIRK: on an init-value mismatch the allocation stays recorded, so a later call returns
    # the cached, uninitialized address.
    return result if _init_value(manager, info.desc, result) else None


def _record(manager: VarManager, table: dict[int, DevVarInfo], info: DevVarInfo, device: int,
            stats: GraphVarStats | None) -> None:
    """Book a new allocation: malloc total, the device row, the graph's statistics."""
    block = hbm_block(info.desc.size)
    manager.malloc_total += block
    table[info.logical] = replace(info, device=device)
    if stats is not None:
        stats.alloc_size += block
        stats.addresses.add(device)


def _cached(info: DevVarInfo, inner: int, block: int, stats: GraphVarStats | None) -> int:
    assert info.device is not None
    if stats is not None and info.device not in stats.addresses:
        stats.shared_size += block  # counted again on every such call (spec 7 step 4.3)
    if info.is_external:
        return info.device  # a ConstPlaceHolder's user address; the inner offset is ignored
    return info.device + inner + FRONT_GUARD


def _malloc(manager: VarManager, block: int, mem_type: int, device_id: int) -> int | None:
    if manager.allocator is not None:
        address = manager.allocator.malloc(block)
        if address is not None:
            return address
    if manager.pool.context.huge_page_policy() == HUGE_PAGE_ONLY:
        return None  # 1 GiB pages only: no fallback to normal pages
    manager.allocator = None  # dropped for good once it failed (or was never there)
    assert manager.mem_manager is not None
    return manager.mem_manager.malloc(mem_type, block, device_id)


def _init_value(manager: VarManager, desc: VarDesc, address: int) -> bool:
    """Copy `_init_value` to the variable; False on a dims/dtype/format or size mismatch."""
    value = desc.init_value
    if value is None:
        return True
    if not same_layout(value.desc, desc) or len(value.data) > desc.size:
        return False
    assert manager.mem_manager is not None
    manager.mem_manager.write(address, value.data)
    return True


def free_var_memory(manager: VarManager) -> None:
    """Free the allocator's pages and every non-external device address (spec 7)."""
    memory = manager.mem_manager
    if memory is None:
        fail(Status.FAILED, "cannot free variable memory: no memory manager is attached")
    own_allocator = manager.allocator is not None
    if manager.allocator is not None:
        manager.allocator.free_all()
    tables = manager.resource.dev_info_by_device if manager.resource is not None else {}
    for device_id, table in tables.items():
        for logical, info in table.items():
            if info.device is None or info.is_external:
                continue
            if not own_allocator:
                memory.free(MemType.HBM, info.device, device_id)
            table[logical] = replace(info, device=None)
    manager.malloc_total = 0
    manager.allocator = None
