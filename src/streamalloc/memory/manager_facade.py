"""The manager's resource-level calls, each with GE's result for an uninitialized manager.

Spec 12: without a resource most calls fail with INTERNAL_ERROR, boolean queries answer False,
`get_var_mem_type` answers RESERVED, `get_trans_road` None and the staged / changed listings are
empty; `set_var_is_ready` and `remove_changed_graph_id` silently do nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from streamalloc.memory.codes import MemType
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.records import BroadcastInfo, DevVarInfo, TransStep
from streamalloc.memory.status import Status, VarManagerError, fail

if TYPE_CHECKING:
    from streamalloc.ir.proto import var_manager_pb2
    from streamalloc.memory.manager import VarManager
    from streamalloc.memory.resource import VarResource


class ManagerFacade:
    """Delegations to the resource; `require_resource` raises INTERNAL_ERROR when missing."""

    resource: VarResource | None

    def require_resource(self) -> VarResource:
        """The resource (implemented by VarManager)."""
        raise NotImplementedError

    def _as_manager(self) -> VarManager:
        from streamalloc.memory.manager import VarManager
        assert isinstance(self, VarManager)
        return self

    # ---- addresses --------------------------------------------------------------------------

    def get_var_addr(self, name: str, desc: VarDesc) -> tuple[int, int]:
        """(logical address, memory type); INTERNAL_ERROR for an unknown key (spec 5.5)."""
        resource = self.require_resource()
        try:
            return resource.get_var_addr(name, desc)
        except VarManagerError as exc:
            fail(Status.INTERNAL_ERROR, exc.detail)

    def save_var_addr(self, name: str, desc: VarDesc, address: int, mem_type: int,
                      op: VarOp | None) -> int:
        """Register real memory (spec 5.1); returns the logical address."""
        return self.require_resource().save_var_addr(name, desc, address, mem_type, op)

    def set_var_addr(self, name: str, desc: VarDesc, address: int, mem_type: int,
                     op: VarOp | None) -> None:
        """Alias registration (spec 5.2)."""
        self.require_resource().set_var_addr(name, desc, address, mem_type, op)

    def is_var_exist(self, name: str, desc: VarDesc | None = None) -> bool:
        """Key registered (with a descriptor) or name known (without); False uninitialized."""
        return self.resource is not None and self.resource.is_var_exist(name, desc)

    def is_var_addr(self, logical: int) -> bool:
        """Whether `logical` is a registered address; False uninitialized."""
        return self.resource is not None and self.resource.is_var_addr(logical)

    def get_var_mem_type(self, logical: int) -> int:
        """Memory type of a logical address; RESERVED when unknown or uninitialized."""
        return MemType.RESERVED if self.resource is None else \
            self.resource.get_var_mem_type(logical)

    def get_cur_var_desc(self, name: str) -> VarDesc:
        """The variable's current descriptor."""
        return self.require_resource().get_cur_var_desc(name)

    def renew_cur_var_desc(self, name: str, source: VarDesc | VarOp | None) -> None:
        """Renew format / origin format (spec 5.4); `None` is GE's op form with a null op."""
        self.require_resource().renew_cur_var_desc(name, source)

    def get_reuse_addr(self, op: VarOp | None) -> tuple[int, int]:
        """(address, memory type) an op may share by rules 2 and 3; FAILED when none applies."""
        return self.require_resource().get_reuse_addr(op)

    def size_by_output_dtype(self, op: VarOp) -> int:
        """Element size of output 0's dtype; -1 without output 0."""
        return self.require_resource().size_by_output_dtype(op)

    def get_all_variables(self) -> dict[str, VarDesc]:
        """Every variable's descriptor (road input first, spec 5.5)."""
        return self.require_resource().get_all_variables()

    # ---- bookkeeping (spec 8) ---------------------------------------------------------------

    def set_var_is_ready(self, name: str, desc: VarDesc, device_id: int) -> None:
        """Mark a key ready on a device; no-op uninitialized."""
        if self.resource is not None:
            self.resource.set_var_is_ready(name, desc, device_id)

    def is_var_ready(self, name: str, desc: VarDesc, device_id: int) -> bool:
        """Whether the key is ready on the device; False uninitialized."""
        return self.resource is not None and self.resource.is_var_ready(name, desc, device_id)

    def check_and_set_var_loaded(self, op: VarOp, device_id: int) -> bool:
        """Loaded-constant dedup (spec 8.2); False uninitialized."""
        return self.resource is not None and self.resource.check_and_set_var_loaded(op, device_id)

    def save_broadcast_info(self, graph_id: int, info: BroadcastInfo) -> None:
        """Store a broadcast record."""
        self.require_resource().save_broadcast_info(graph_id, info)

    def set_trans_road(self, name: str, road: Sequence[TransStep]) -> None:
        """Store a transformation road (first write wins)."""
        self.require_resource().set_trans_road(name, road)

    def get_trans_road(self, name: str) -> tuple[TransStep, ...] | None:
        """The road, None when absent or uninitialized."""
        return None if self.resource is None else self.resource.get_trans_road(name)

    def set_changed_graph_id(self, name: str, graph_id: int) -> None:
        """Record the graph that changed a variable's format."""
        self.require_resource().set_changed_graph_id(name, graph_id)

    def get_changed_graph_id(self, name: str) -> int:
        """The graph that changed the variable."""
        return self.require_resource().get_changed_graph_id(name)

    def remove_changed_graph_id(self, name: str) -> None:
        """Forget the changed-graph mark; no-op uninitialized."""
        if self.resource is not None:
            self.resource.remove_changed_graph_id(name)

    def get_changed_var_names(self, graph_id: int) -> tuple[str, ...]:
        """Names changed by the graph; empty uninitialized."""
        return () if self.resource is None else self.resource.get_changed_var_names(graph_id)

    def set_allocated_graph_id(self, name: str, graph_id: int) -> None:
        """Record the allocating graph (first write wins)."""
        self.require_resource().set_allocated_graph_id(name, graph_id)

    def get_allocated_graph_id(self, name: str) -> int:
        """The allocating graph."""
        return self.require_resource().get_allocated_graph_id(name)

    def record_staged_var_desc(self, graph_id: int, name: str, desc: VarDesc) -> None:
        """Remember the descriptor a graph saw."""
        self.require_resource().record_staged_var_desc(graph_id, name, desc)

    def get_staged_var_descs(self, graph_id: int) -> dict[str, VarDesc]:
        """The graph's staged descriptors; empty uninitialized."""
        return {} if self.resource is None else self.resource.get_staged_var_descs(graph_id)

    def set_batch_variables_key_name(self, batch_name: str, key_name: str) -> None:
        """Map a batch-branch name onto a shared variable name."""
        self.require_resource().set_batch_variables_key_name(batch_name, key_name)

    def has_shared_var_mem_between_batch(self) -> bool:
        """Whether any batch name is mapped; False uninitialized."""
        return self.resource is not None and self.resource.has_shared_var_mem_between_batch()

    # ---- device tables (spec 10) ------------------------------------------------------------

    def update_dev_var_mgr_info(self, device_id: int) -> None:
        """Create or extend the device's table."""
        self.require_resource().update_dev_var_mgr_info(device_id)

    def get_var_mgr_info(self, device_id: int, logical: int) -> DevVarInfo | None:
        """The device row of a logical address; None when absent or uninitialized."""
        return None if self.resource is None else \
            self.resource.get_var_mgr_info(device_id, logical)

    def set_var_mgr_dev_addr(self, device_id: int, logical: int, device: int | None) -> None:
        """Set a device row's device address; INTERNAL_ERROR when the row is absent."""
        self.require_resource().set_var_mgr_dev_addr(device_id, logical, device)

    def check_logic_addr_valid(self, device_id: int, logical: int) -> tuple[int, int]:
        """(inner offset, variable address) of an address inside a variable."""
        return self.require_resource().check_logic_addr_valid(device_id, logical)

    # ---- serialization (spec 13; the work is in serialize.py) -----------------------------------

    def serialize(self) -> var_manager_pb2.VarManagerInfo:
        """The manager as a `deployer.VarManagerInfo`; INTERNAL_ERROR when uninitialized."""
        from streamalloc.memory.serialize import serialize
        return serialize(self._as_manager())

    def deserialize(self, info: var_manager_pb2.VarManagerInfo, current_device: int = 0) -> None:
        """Merge a `VarManagerInfo` into this manager (spec 13)."""
        from streamalloc.memory.serialize import deserialize
        deserialize(self._as_manager(), info, current_device)

    def var_desc_info_to_serial(self) -> var_manager_pb2.VarDescInfo:
        """Current descriptors and roads as a `deployer.VarDescInfo`."""
        from streamalloc.memory.serialize import var_desc_info_to_serial
        return var_desc_info_to_serial(self._as_manager())
