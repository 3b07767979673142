"""The V1 runtime variable manager (GE's `ModelRtVarManager`, spec 18) and its pool.

At model load the runtime initializes the session's variable manager (if nobody did), restores
the model's `Variable` / `Constant` nodes from their compiled output offsets, and collects each
variable's shape and runtime address so that kernels can ask for them by name. Also here: the
variables whose data a loading graph must convert along their road (spec 8.4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamalloc.memory.codes import (
    HUGE_PAGE,
    HUGE_PAGE_FIRST,
    HUGE_PAGE_ONLY,
    NORMAL_PAGE,
    MemType,
    SessionVersion,
    Status,
    VarManagerError,
    fail,
)
from streamalloc.memory.desc import VarOp
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.tables import TransStep

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager, VarManagerPool

RESTORED_TYPES = ("Variable", "Constant")  # other type strings are ignored (spec 18)
PLACEMENT_DEVICE_HBM = "device HBM"


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
