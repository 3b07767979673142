"""The session-scoped variable manager: lifecycle, limits, memory resources, assignment.

Spec sections 5 (assign / restore), 9 (init / destroy), 11 (limits) and 4.4 (reported sizes).
Runtime address resolution lives in runtime_addr.py, the resource-level delegations (with GE's
"not initialized" results) in manager_facade.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from streamalloc.memory import runtime_addr
from streamalloc.memory.codes import (
    ABS_USE_MAX_LIMIT,
    CONFIGURED_LOGIC_BASE,
    DEFAULT_GRAPH_MEM_MAX,
    DEFAULT_LOGIC_BASE,
    DEFAULT_USE_MAX,
    DEFAULT_VAR_MEM_MAX,
    GRAPH_MEMORY_BUFFER,
    GRAPH_RATIO,
    TOTAL_RATIO,
    U64_MAX,
    VAR_RATIO,
    MemType,
    SessionVersion,
    share,
)
from streamalloc.memory.desc import VarDesc, VarOp, same_layout
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.manager_facade import ManagerFacade
from streamalloc.memory.mem_resource import MemResource, new_mem_resource
from streamalloc.memory.resource import VarResource
from streamalloc.memory.runtime_addr import GraphVarStats
from streamalloc.memory.status import Status, VarManagerError, VarOptionsInvalid, fail

if TYPE_CHECKING:
    from streamalloc.memory.pool import VarManagerPool


class VarManager(ManagerFacade):
    """One session's variable manager (GE's `VarManager`).

    >>> from streamalloc.memory.pool import VarManagerPool
    >>> manager = VarManagerPool().get(0)
    >>> manager.init(0, 0, 0, 0)
    >>> manager.assign_var_mem("v1", None, VarDesc(size=100), MemType.HBM)
    34359738368
    >>> manager.get_var_mem_size(MemType.HBM)
    1536
    """

    def __init__(self, session_id: int, pool: VarManagerPool | None = None) -> None:
        if pool is None:
            from streamalloc.memory.pool import default_pool
            pool = default_pool()
        self.pool = pool
        self._session_id = session_id
        self.version = int(SessionVersion.OTHER)
        self.device_id = 0
        self.job_id = 0
        self.graph_mem_max_size = DEFAULT_GRAPH_MEM_MAX
        self.var_mem_max_size = DEFAULT_VAR_MEM_MAX
        self.var_mem_logic_base = DEFAULT_LOGIC_BASE
        self.use_max_mem_size = DEFAULT_USE_MAX
        self.resource: VarResource | None = None
        self.mem_resources: dict[int, MemResource | None] = {}
        self.mem_manager: EmulatedMemory | None = None
        self.external_var_addr: int | None = None
        self.external_var_size = 0
        self.allocator: ExpandableAllocator | None = None
        self.malloc_total = 0
        self.graph_stats: dict[str, GraphVarStats] = {}

    @property
    def session_id(self) -> int:
        """The session id (the constructor's, replaced by `init` and `deserialize`)."""
        return self._session_id

    @session_id.setter
    def session_id(self, value: int) -> None:
        self._session_id = value

    # ---- lifecycle (spec 9) ---------------------------------------------------------------

    def init(self, version: int, session_id: int, device_id: int, job_id: int) -> None:
        """Create the resource on the first call; later calls change nothing (and succeed)."""
        if self.resource is not None:
            return
        if version not in tuple(SessionVersion):
            fail(Status.PARAM_INVALID, f"session version {version} is not 0 (cloud), 1 (mini) "
                                       "or 2 (other)")
        self.version, self._session_id = version, session_id
        self.device_id, self.job_id = device_id, job_id
        self.resource = VarResource(session_id, self.pool)

    def destroy(self) -> None:
        """Free variable memory and reset; QUIRK: the resource (all variables) is kept (spec 9)."""
        if self.mem_manager is not None:
            self.free_var_memory()
        self.version, self._session_id, self.device_id = int(SessionVersion.OTHER), 0, 0
        self.mem_resources.clear()
        self.allocator = None

    def require_resource(self) -> VarResource:
        """The resource; INTERNAL_ERROR when the manager was never initialized."""
        if self.resource is None:
            fail(Status.INTERNAL_ERROR, f"variable manager of session {self._session_id} is not "
                                        "initialized (call init first)")
        return self.resource

    def set_mem_manager(self, memory: EmulatedMemory | None) -> None:
        """Attach the device memory manager runtime resolution allocates from."""
        self.mem_manager = memory

    # ---- limits (spec 11) ------------------------------------------------------------------

    def set_memory_malloc_size(self, options: Mapping[str, str], total_mem_size: int) -> None:
        """Derive the limits from device memory: 26/32 graph, 5/32 variables.

        The options are ignored, including ge.graphMemoryMaxSize and ge.variableMemoryMaxSize,
        which GE lists as accepted but never parses here (spec 11, 19).
        """
        self.graph_mem_max_size = share(total_mem_size, GRAPH_RATIO)
        self.var_mem_max_size = share(total_mem_size, VAR_RATIO)
        self.use_max_mem_size = share(total_mem_size, TOTAL_RATIO)  # replaced just below
        self.set_all_memory_max_value(options)

    def set_all_memory_max_value(self, options: Mapping[str, str] | None = None) -> None:
        """Fix the logical base at 128 GiB and set use_max; over 256 GiB is an options error.

        QUIRK: the base is switched (and use_max stored) even when the limit check then fails.
        """
        if self.graph_mem_max_size > U64_MAX - GRAPH_MEMORY_BUFFER or \
                self.graph_mem_max_size + self.var_mem_max_size > U64_MAX:
            fail(Status.INTERNAL_ERROR, "graph plus variable memory limits overflow 64 bits")
        self.var_mem_logic_base = CONFIGURED_LOGIC_BASE
        self.use_max_mem_size = self.graph_mem_max_size + self.var_mem_max_size
        if self.use_max_mem_size > ABS_USE_MAX_LIMIT:
            fail(Status.GE_GRAPH_OPTIONS_INVALID,
                 f"graph memory {self.graph_mem_max_size} + variable memory "
                 f"{self.var_mem_max_size} = {self.use_max_mem_size} bytes exceeds the limit of "
                 f"{ABS_USE_MAX_LIMIT} (256 GiB)", VarOptionsInvalid)

    def get_var_mem_max_size(self, for_check: bool = False) -> int:
        """The variable limit; 2^64-1 "for check" in evaluate mode."""
        return U64_MAX if for_check and self.pool.context.evaluate_mode() \
            else self.var_mem_max_size

    def get_graph_memory_max_size(self, for_check: bool = False) -> int:
        """The graph (feature-map) limit; 2^64-1 "for check" in evaluate mode."""
        return U64_MAX if for_check and self.pool.context.evaluate_mode() \
            else self.graph_mem_max_size

    def get_use_max_memory_size(self) -> int:
        """The session's total limit; 2^64-1 whenever evaluate mode is on (no for_check flag)."""
        return U64_MAX if self.pool.context.evaluate_mode() else self.use_max_mem_size

    # ---- memory resources and pools (spec 2, 4.4) -------------------------------------------

    def get_var_mem_size(self, mem_type: int) -> int:
        """Variable bytes of a memory type; HBM excludes ConstPlaceHolder blocks; 0 if none."""
        resource = self.mem_resources.get(mem_type)
        return resource.reported_size() if resource is not None else 0

    def get_var_const_placeholder_mem_size(self, mem_type: int) -> int:
        """ConstPlaceHolder bytes (HBM only; 0 for other types)."""
        resource = self.mem_resources.get(mem_type)
        return resource.const_placeholder_size if resource is not None and \
            mem_type == MemType.HBM else 0

    def _mem_resource_for(self, mem_type: int) -> MemResource:
        if mem_type not in self.mem_resources:
            created = new_mem_resource(mem_type)
            if created is None:
                fail(Status.PARAM_INVALID, f"memory type {mem_type:#x} cannot hold variables; "
                                           "use HBM (0x2), RDMA_HBM (0x3) or HOST (0x81)")
            self.mem_resources[mem_type] = created
        resource = self.mem_resources[mem_type]
        if resource is None:
            fail(Status.INTERNAL_ERROR, f"memory resource slot {mem_type:#x} is empty")
        return resource

    def get_rdma_pool_memory(self, mem_type: int, size: int) -> int | None:
        """A block of the RDMA pool of the `init` device; None without a memory manager."""
        if self.mem_manager is None:
            return None
        return self.mem_manager.rdma_malloc(size, self.device_id)

    def get_host_pool_memory(self, mem_type: int, size: int) -> int | None:
        """Zero-filled host memory; None without a memory manager."""
        if self.mem_manager is None:
            return None
        return self.mem_manager.host_malloc(size)

    # ---- assignment (spec 5) ----------------------------------------------------------------

    def assign_var_mem(self, name: str, op: VarOp | None, desc: VarDesc, mem_type: int) -> int:
        """Give a variable memory (or reuse some) and return its logical address (spec 5).

        Reuse, in GE's order: a known name whose new size fits its current descriptor's size
        (rule 1), FileConstant path:offset (rule 2), Constant bytes (rule 3); else a fresh block
        (rule 4). A hit overrides the requested memory type. QUIRK: a key conflict fails with
        INTERNAL_ERROR after the block was already added to the running total.
        """
        resource = self.require_resource()
        res = self._mem_resource_for(mem_type)
        address, mem_type = _reuse(resource, name, op, desc.size, mem_type)
        if address is None:
            address = self._fresh(resource, res, name, op, desc=desc, mem_type=mem_type)
        cur = resource.cur_desc_by_name.get(resource.mapped(name))
        if cur is None or not same_layout(cur, desc):
            resource.set_var_addr(name, desc, address, mem_type, op)
        return address

    def _fresh(self, resource: VarResource, res: MemResource, name: str, op: VarOp | None, *,
               desc: VarDesc, mem_type: int) -> int:
        try:
            offset = res.allocate(self, name, desc.size, op.type if op else "")
            return resource.save_var_addr(name, desc, offset, mem_type, op)
        except VarManagerError as exc:  # GE's AssignVarMem reports both as INTERNAL_ERROR
            raise type(exc)(Status.INTERNAL_ERROR, f"assigning {name!r}: {exc.detail}") from None

    def restore_var_mem(self, name: str, op: VarOp | None, desc: VarDesc, mem_type: int) -> None:
        """Re-register a compiled variable at its output offset 0 (model load, spec 5.3).

        A variable already known aliases its address when the new descriptor is no larger.
        Restoring never touches the running totals.
        """
        resource = self.require_resource()
        if desc.size < 0:
            fail(Status.FAILED, f"variable {name!r} has a negative size {desc.size}")
        cur = resource.cur_desc_by_name.get(resource.mapped(name))
        if cur is not None and resource.is_var_exist(name, cur):
            _restore_known(resource, name, op, desc, cur)
            return
        logical_offset = _output_offset(name, op) - self.var_mem_logic_base
        if logical_offset < 0 or logical_offset + desc.size > self.var_mem_max_size:
            fail(Status.FAILED, f"restoring {name!r}: offset {logical_offset} + size {desc.size} "
                                f"is outside the variable memory [0, {self.var_mem_max_size})")
        logical = resource.save_var_addr(name, desc, logical_offset, mem_type, op)
        resource.set_var_addr(name, desc, logical, mem_type, op)

    # ---- runtime (spec 7) -------------------------------------------------------------------

    def init_expandable_memory_allocator(self, allocator: ExpandableAllocator | None) -> bool:
        """Install the session allocator if none is installed and it supports expandable memory."""
        if self.allocator is not None or allocator is None or not allocator.supports_expandable:
            return False
        allocator.switch_to_session_mode()
        self.allocator = allocator
        return True

    def set_external_var(self, address: int | None, size: int) -> None:
        """Use (or, with None, stop using) user memory for all HBM variables (spec 7 step 3)."""
        self.external_var_addr, self.external_var_size = address, size

    def get_var_memory_addr(self, logical: int, mem_type: int, device_id: int = 0,
                            graph_name: str = "") -> int | None:
        """The device address of a logical address; None when it cannot be resolved (spec 7)."""
        return runtime_addr.get_var_memory_addr(self, logical, mem_type, device_id, graph_name)

    def free_var_memory(self) -> None:
        """Free all variable device memory; FAILED without a memory manager (spec 7)."""
        runtime_addr.free_var_memory(self)


def _reuse(resource: VarResource, name: str, op: VarOp | None, size: int,
           mem_type: int) -> tuple[int | None, int]:
    """(reusable address or None, memory type after a hit) for rules 1-3."""
    cur = resource.cur_desc_by_name.get(resource.mapped(name))
    if cur is not None:
        # Rule 1 fires on the name alone; format equality is not required (spec 19).
        entry = resource.addr_by_key.get(resource.key(name, cur))
        if entry is None:
            return None, mem_type
        return (entry.address if size <= cur.size else None), entry.mem_type
    try:
        return resource.get_reuse_addr(op)
    except VarManagerError:
        return None, mem_type


def _restore_known(resource: VarResource, name: str, op: VarOp | None, desc: VarDesc,
                   cur: VarDesc) -> None:
    if same_layout(desc, cur):
        return
    if desc.size > cur.size:
        fail(Status.FAILED, f"variable {name!r} changed format/dtype/shape and grew from "
                            f"{cur.size} to {desc.size} bytes: the model needs recompilation")
    address, mem_type = resource.get_var_addr(name, cur)
    resource.set_var_addr(name, desc, address, mem_type, op)


def _output_offset(name: str, op: VarOp | None) -> int:
    if op is None or not op.output_offsets:
        fail(Status.FAILED, f"restoring {name!r}: the op has no output offsets")
    return op.output_offsets[0]
