"""The session-scoped variable manager and the pool that holds one per session (their options
come from `GeContext`, context.py).

* `VarManager` (GE's `VarManager`): lifecycle (spec 9), limits (11), memory resources and
  reported sizes (2, 4.4); assignment (5, assignment.py), runtime address resolution (7,
  resolve.py) and serialization (13, serialize.py) take the manager as their first argument.
  The resource-level calls forward to its `VarResource`, each with GE's result for an
  uninitialized manager (spec 12): most fail with INTERNAL_ERROR, boolean queries answer False,
  `get_var_mem_type` answers RESERVED, `get_trans_road` None, the staged / changed listings are
  empty; `set_var_is_ready` and `remove_changed_graph_id` silently do nothing.
* `VarManagerPool`: session id -> manager (GE's `VarManagerPool`), created on first request;
  sessions are isolated (offsets restart at 0 per session). There is no process-wide pool: the
  caller (the `vars` command, the emulator's variable loader, a test) creates one and passes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from streamalloc.memory import assignment, resolve
from streamalloc.memory.assignment import MemResource
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
    Status,
    VarManagerError,
    VarOptionsInvalid,
    fail,
    share,
)
from streamalloc.memory.context import GeContext
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.resource import VarResource

if TYPE_CHECKING:
    from streamalloc.ir.proto import var_manager_pb2

P = ParamSpec("P")
R = TypeVar("R")


def _resource_call(method: Callable[Concatenate[VarResource, P], R]
                   ) -> Callable[Concatenate[VarManager, P], R]:
    """A manager method forwarding to the resource; INTERNAL_ERROR when uninitialized."""
    @functools.wraps(method)
    def call(self: VarManager, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(self.require_resource(), *args, **kwargs)
    call.__qualname__ = f"VarManager.{method.__name__}"
    return call


def _resource_query(method: Callable[Concatenate[VarResource, P], R],
                    uninitialized: Callable[[], R]) -> Callable[Concatenate[VarManager, P], R]:
    """A manager method forwarding to the resource; `uninitialized()` when there is none."""
    @functools.wraps(method)
    def call(self: VarManager, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.resource is None:
            return uninitialized()
        return method(self.resource, *args, **kwargs)
    call.__qualname__ = f"VarManager.{method.__name__}"
    return call


class VarManager:
    """One session's variable manager (GE's `VarManager`).

    >>> manager = VarManagerPool().get(0)
    >>> manager.init(0, 0, 0, 0)
    >>> manager.assign_var_mem("v1", None, VarDesc(size=100), MemType.HBM)
    34359738368
    >>> manager.get_var_mem_size(MemType.HBM)
    1536
    """

    def __init__(self, session_id: int, pool: VarManagerPool) -> None:
        self.pool = pool
        self.session_id = session_id  # the constructor's, replaced by init and deserialize
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
        self.graph_stats: dict[str, resolve.GraphVarStats] = {}

    # ---- lifecycle (spec 9) -------------------------------------------------------------------

    def init(self, version: int, session_id: int, device_id: int, job_id: int) -> None:
        """Create the resource on the first call; later calls change nothing (and succeed)."""
        if self.resource is not None:
            return
        if version not in tuple(SessionVersion):
            fail(Status.PARAM_INVALID, f"session version {version} is not 0 (cloud), 1 (mini) "
                                       "or 2 (other)")
        self.version, self.session_id = version, session_id
        self.device_id, self.job_id = device_id, job_id
        self.resource = VarResource(session_id, self.pool)

    def destroy(self) -> None:
        """Free variable memory and reset; QUIRK: the resource (all variables) is kept (spec 9)."""
        if self.mem_manager is not None:
            self.free_var_memory()
        self.version, self.session_id, self.device_id = int(SessionVersion.OTHER), 0, 0
        self.mem_resources.clear()
        self.allocator = None

    def require_resource(self) -> VarResource:
        """The resource; INTERNAL_ERROR when the manager was never initialized."""
        if self.resource is None:
            fail(Status.INTERNAL_ERROR, f"variable manager of session {self.session_id} is not "
                                        "initialized (call init first)")
        return self.resource

    def set_mem_manager(self, memory: EmulatedMemory | None) -> None:
        """Attach the device memory manager runtime resolution allocates from."""
        self.mem_manager = memory

    # ---- limits (spec 11) ---------------------------------------------------------------------

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

    # ---- memory resources and pools (spec 2, 4.4) ---------------------------------------------

    def get_var_mem_size(self, mem_type: int) -> int:
        """Variable bytes of a memory type; HBM excludes ConstPlaceHolder blocks; 0 if none."""
        resource = self.mem_resources.get(mem_type)
        return resource.reported_size() if resource is not None else 0

    def get_var_const_placeholder_mem_size(self, mem_type: int) -> int:
        """ConstPlaceHolder bytes (HBM only; 0 for other types)."""
        resource = self.mem_resources.get(mem_type)
        return resource.const_placeholder_size if resource is not None and \
            mem_type == MemType.HBM else 0

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

    # ---- assignment (spec 5) and runtime resolution (spec 7) ----------------------------------

    def assign_var_mem(self, name: str, op: VarOp | None, desc: VarDesc, mem_type: int) -> int:
        """Give a variable memory (or reuse some); its logical address (assignment.py)."""
        return assignment.assign_var_mem(self, name, op, desc, mem_type)

    def restore_var_mem(self, name: str, op: VarOp | None, desc: VarDesc, mem_type: int) -> None:
        """Re-register a compiled variable at its output offset 0 (assignment.py)."""
        assignment.restore_var_mem(self, name, op, desc, mem_type)

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
        return resolve.get_var_memory_addr(self, logical, mem_type, device_id, graph_name)

    def free_var_memory(self) -> None:
        """Free all variable device memory; FAILED without a memory manager (spec 7)."""
        resolve.free_var_memory(self)

    # ---- serialization (spec 13, serialize.py) ------------------------------------------------

    def serialize(self) -> var_manager_pb2.VarManagerInfo:
        """The manager as a `deployer.VarManagerInfo`; INTERNAL_ERROR when uninitialized."""
        from streamalloc.memory import serialize  # protobuf: loaded when first used
        return serialize.serialize(self)

    def deserialize(self, info: var_manager_pb2.VarManagerInfo, current_device: int = 0) -> None:
        """Merge a `VarManagerInfo` into this manager (spec 13)."""
        from streamalloc.memory import serialize
        serialize.deserialize(self, info, current_device)

    def var_desc_info_to_serial(self) -> var_manager_pb2.VarDescInfo:
        """Current descriptors and roads as a `deployer.VarDescInfo`."""
        from streamalloc.memory import serialize
        return serialize.var_desc_info_to_serial(self)

    # ---- resource calls (spec 12: the result without a resource) ------------------------------

    def get_var_addr(self, name: str, desc: VarDesc) -> tuple[int, int]:
        """(logical address, memory type); INTERNAL_ERROR for an unknown key (spec 5.5)."""
        resource = self.require_resource()
        try:
            return resource.get_var_addr(name, desc)
        except VarManagerError as exc:
            fail(Status.INTERNAL_ERROR, exc.detail)

    save_var_addr = _resource_call(VarResource.save_var_addr)
    set_var_addr = _resource_call(VarResource.set_var_addr)
    get_cur_var_desc = _resource_call(VarResource.get_cur_var_desc)
    renew_cur_var_desc = _resource_call(VarResource.renew_cur_var_desc)
    get_reuse_addr = _resource_call(VarResource.get_reuse_addr)
    size_by_output_dtype = _resource_call(VarResource.size_by_output_dtype)
    get_all_variables = _resource_call(VarResource.get_all_variables)
    save_broadcast_info = _resource_call(VarResource.save_broadcast_info)
    set_trans_road = _resource_call(VarResource.set_trans_road)
    set_changed_graph_id = _resource_call(VarResource.set_changed_graph_id)
    get_changed_graph_id = _resource_call(VarResource.get_changed_graph_id)
    set_allocated_graph_id = _resource_call(VarResource.set_allocated_graph_id)
    get_allocated_graph_id = _resource_call(VarResource.get_allocated_graph_id)
    record_staged_var_desc = _resource_call(VarResource.record_staged_var_desc)
    set_batch_variables_key_name = _resource_call(VarResource.set_batch_variables_key_name)
    update_dev_var_mgr_info = _resource_call(VarResource.update_dev_var_mgr_info)
    set_var_mgr_dev_addr = _resource_call(VarResource.set_var_mgr_dev_addr)
    check_logic_addr_valid = _resource_call(VarResource.check_logic_addr_valid)

    is_var_exist = _resource_query(VarResource.is_var_exist, lambda: False)
    is_var_addr = _resource_query(VarResource.is_var_addr, lambda: False)
    get_var_mem_type = _resource_query(VarResource.get_var_mem_type, lambda: MemType.RESERVED)
    set_var_is_ready = _resource_query(VarResource.set_var_is_ready, lambda: None)
    is_var_ready = _resource_query(VarResource.is_var_ready, lambda: False)
    check_and_set_var_loaded = _resource_query(VarResource.check_and_set_var_loaded,
                                               lambda: False)
    get_trans_road = _resource_query(VarResource.get_trans_road, lambda: None)
    remove_changed_graph_id = _resource_query(VarResource.remove_changed_graph_id, lambda: None)
    get_changed_var_names = _resource_query(VarResource.get_changed_var_names, tuple)
    get_staged_var_descs = _resource_query(VarResource.get_staged_var_descs, dict)
    has_shared_var_mem_between_batch = _resource_query(
        VarResource.has_shared_var_mem_between_batch, lambda: False)
    get_var_mgr_info = _resource_query(VarResource.get_var_mgr_info, lambda: None)


class VarManagerPool:
    """Session id -> variable manager, plus the GE context the managers read options from."""

    def __init__(self, context: GeContext | None = None) -> None:
        self.context = context or GeContext()
        self._managers: dict[int, VarManager] = {}

    def get(self, session_id: int) -> VarManager:
        """The session's manager, created (uninitialized) on first request."""
        manager = self._managers.get(session_id)
        if manager is None:
            manager = VarManager(session_id, self)
            self._managers[session_id] = manager
        return manager

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._managers

    def __len__(self) -> int:
        return len(self._managers)

    def __iter__(self) -> Iterator[int]:
        return iter(self._managers)

    def remove(self, session_id: int) -> None:
        """Remove and destroy a session's manager (no-op when absent)."""
        manager = self._managers.pop(session_id, None)
        if manager is not None:
            manager.destroy()

    def destroy(self) -> None:
        """Destroy every manager and empty the pool."""
        for session_id in list(self._managers):
            self.remove(session_id)
