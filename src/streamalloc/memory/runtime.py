"""The runtime side: logical variable address -> device address (spec 7), the V1 runtime manager.

Resolution is checked in GE's order: no memory manager (none), RDMA (the address itself),
external variable memory (base-relative, no per-variable lookup), else auto-malloc: sync the
device table, find the variable (exactly, or strictly inside it), reuse its device address or
allocate its block on first use (session expandable allocator first, then the memory manager
unless the huge-page policy is "1 GiB only"), and copy its `_init_value`.

The V1 runtime variable manager (GE's `ModelRtVarManager`, spec 18): at model load the runtime
initializes the session's variable manager (if nobody did), restores the model's `Variable` /
`Constant` nodes from their compiled output offsets, and collects each variable's shape and
runtime address so that kernels can ask for them by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from streamalloc.memory.codes import (
    FRONT_GUARD,
    HUGE_PAGE,
    HUGE_PAGE_FIRST,
    HUGE_PAGE_ONLY,
    NORMAL_PAGE,
    MemType,
    SessionVersion,
    Status,
    VarManagerError,
    fail,
    hbm_block,
)
from streamalloc.memory.desc import VarDesc, VarOp, same_layout
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.resource import VarResource
from streamalloc.memory.tables import DevVarInfo, TransStep

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager, VarManagerPool

RESTORED_TYPES = ("Variable", "Constant")  # other type strings are ignored (spec 18)
PLACEMENT_DEVICE_HBM = "device HBM"


@dataclass
class GraphVarStats:
    """Per-graph statistics: bytes this graph allocated, bytes it used that others allocated."""

    alloc_size: int = 0
    shared_size: int = 0
    addresses: set[int] = field(default_factory=set)


# ---- address resolution (spec 7) --------------------------------------------------------------


def get_var_memory_addr(manager: VarManager, logical: int, mem_type: int, device_id: int = 0,
                        graph_name: str = "") -> int | None:
    """The device address for `logical`, or None (spec 7; see the module docstring).

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


# ---- the V1 runtime variable manager (spec 18) -----------------------------------------------


@dataclass(frozen=True, slots=True)
class RtVarInfo:
    """What the runtime knows about a collected variable."""

    addr: int | None
    size: int
    origin_shape: tuple[int, ...] = ()
    storage_shape: tuple[int, ...] = ()
    placement: str = PLACEMENT_DEVICE_HBM


class RuntimeVarManager:
    """One session's runtime variable manager; `collected` maps variable name -> RtVarInfo."""

    def __init__(self, session_id: int, var_pool: VarManagerPool, memory: EmulatedMemory) -> None:
        self.session_id = session_id
        self.var_pool = var_pool
        self.memory = memory
        self.initialized = False
        self.collected: dict[str, RtVarInfo] = {}

    @property
    def manager(self) -> VarManager:
        """The session's variable manager."""
        return self.var_pool.get(self.session_id)

    def init(self, device_id: int, logic_base: int, total_var_size: int,
             external_addr: int | None = None, external_size: int = 0) -> None:
        """First call only: initialize the variable manager if needed, attach memory, allocator."""
        if self.initialized:
            return
        manager = self.manager
        if manager.resource is None:
            manager.init(SessionVersion.CLOUD, self.session_id, device_id, 0)
            manager.var_mem_logic_base = logic_base
            manager.var_mem_max_size = total_var_size
            manager.set_external_var(external_addr, external_size)
        if manager.mem_manager is None:
            manager.set_mem_manager(self.memory)
        policy = self.var_pool.context.huge_page_policy()
        page = HUGE_PAGE if policy in (HUGE_PAGE_ONLY, HUGE_PAGE_FIRST) else NORMAL_PAGE
        manager.init_expandable_memory_allocator(
            ExpandableAllocator(self.memory, self.session_id, device_id, MemType.HBM, page))
        self.initialized = True

    def _require_init(self) -> VarManager:
        if not self.initialized:
            fail(Status.FAILED, f"runtime variable manager of session {self.session_id} is not "
                                "initialized (call init first)")
        return self.manager

    def restore_device_variables(self, nodes: Iterable[VarOp], graph_id: int, device_id: int,
                                 collect: bool = True) -> None:
        """Register unknown Variable / Constant nodes at their offsets and collect them."""
        manager = self._require_init()
        for op in nodes:
            if op.type not in RESTORED_TYPES:
                continue
            desc = op.outputs[0] if op.outputs else None
            if desc is None:
                fail(Status.FAILED, f"variable {op.name!r} has no output descriptor")
            if not manager.is_var_exist(op.name, desc):
                manager.restore_var_mem(op.name, op, desc, MemType.HBM)
                manager.set_allocated_graph_id(op.name, graph_id)
            if collect and op.name not in self.collected:
                self.collected[op.name] = self._collect(manager, op, device_id)

    def _collect(self, manager: VarManager, op: VarOp, device_id: int) -> RtVarInfo:
        desc = op.outputs[0]
        logical, _ = manager.get_var_addr(op.name, desc)
        address = manager.get_var_memory_addr(logical, MemType.HBM, device_id)  # not checked
        if desc.size <= 0:
            fail(Status.FAILED, f"variable {op.name!r} has recorded size {desc.size}; expected > 0")
        return RtVarInfo(address, desc.size, desc.origin_shape, desc.shape)

    def get_var_shape_and_memory(self, name: str) -> RtVarInfo:
        """The collected shape and memory of a variable; FAILED for an unknown name."""
        self._require_init()
        if name not in self.collected:
            fail(Status.FAILED, f"variable {name!r} was not restored by the runtime")
        return self.collected[name]


class RuntimeVarManagerPool:
    """Session id -> runtime variable manager (created on demand), GE's parallel pool."""

    def __init__(self, var_pool: VarManagerPool, memory: EmulatedMemory) -> None:
        self.var_pool = var_pool
        self.memory = memory
        self._managers: dict[int, RuntimeVarManager] = {}

    def get(self, session_id: int) -> RuntimeVarManager:
        """The session's runtime manager."""
        if session_id not in self._managers:
            self._managers[session_id] = RuntimeVarManager(session_id, self.var_pool,
                                                           self.memory)
        return self._managers[session_id]

    def size(self) -> int:
        """Number of runtime managers."""
        return len(self._managers)

    def remove(self, session_id: int) -> None:
        """Drop a runtime manager, clearing its collected map (the variable manager stays)."""
        manager = self._managers.pop(session_id, None)
        if manager is not None:
            manager.collected.clear()


def take_pending_conversions(manager: VarManager, names: Iterable[str],
                             graph_id: int) -> dict[str, tuple[TransStep, ...]]:
    """Variables whose device data must be converted along their road when `graph_id` loads.

    Spec 8.4: when a variable's changed graph id is the loading graph and differs from the graph
    that allocated it, the loader converts its data along the road and removes the mark. Returns
    name -> road for those variables (the caller converts) and removes their marks.
    """
    out = {}
    for name in names:
        try:
            changed = manager.get_changed_graph_id(name)
            allocated = manager.get_allocated_graph_id(name)
        except VarManagerError:
            continue
        road = manager.get_trans_road(name)
        if changed == graph_id != allocated and road:
            out[name] = road
            manager.remove_changed_graph_id(name)
    return out
