"""How a variable gets memory: memory resources, reuse and assignment (spec 4, 5).

Memory resources keep one running total per memory type and say how a new variable gets memory.
HBM is an offset bump allocator in the logical region: each variable takes a block of
`align512(size) + 1024` bytes, `[512 front guard][align512(size) data][512 rear guard]`, at the
running total (spec 4.2). RDMA and host memory take real pointers of exactly `size` bytes from
the manager's pools, no alignment, no guards (spec 4.3).

`assign_var_mem` reuses memory by GE's rules or takes a fresh block (spec 5); `restore_var_mem`
re-registers a compiled variable at its output offset (spec 5.3). Both are `VarManager` methods;
the manager is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from streamalloc.memory.codes import (
    CONST_PLACE_HOLDER,
    U64_MAX,
    MemType,
    Status,
    VarManagerError,
    VarMemoryExhausted,
    fail,
    hbm_block,
)
from streamalloc.memory.desc import VarDesc, VarOp, same_layout
from streamalloc.memory.resource import VarResource

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager


class MemResource:
    """Running totals of one memory type: `var_mem_size` and `const_placeholder_size`."""

    mem_type: int = MemType.RESERVED

    def __init__(self) -> None:
        self.var_mem_size = 0
        self.const_placeholder_size = 0  # HBM only; never serialized (spec 13)

    def allocate(self, manager: VarManager, name: str, size: int, op_type: str) -> int:
        """Memory for a variable of recorded size `size`: an offset (HBM) or a pointer."""
        raise NotImplementedError

    def reported_size(self) -> int:
        """`get_var_mem_size` for this type (spec 4.4)."""
        return self.var_mem_size


class HbmMemResource(MemResource):
    """The logical HBM region of a session."""

    mem_type = MemType.HBM

    def allocate(self, manager: VarManager, name: str, size: int, op_type: str) -> int:
        """Bump allocation. No check against var_mem_max_size here (spec 4.2, 11)."""
        block = hbm_block(size)
        offset = self.var_mem_size
        if offset + block > U64_MAX:
            fail(Status.INTERNAL_ERROR, f"HBM variable total overflows 64 bits at {name!r}")
        self.var_mem_size += block
        if op_type == CONST_PLACE_HOLDER:
            self.const_placeholder_size += block
        return offset

    def reported_size(self) -> int:
        """HBM bytes excluding ConstPlaceHolder blocks, whose memory the user supplies."""
        return self.var_mem_size - self.const_placeholder_size


class _PoolMemResource(MemResource):
    """Variables in a memory pool of the manager's device: pointers of exactly their size."""

    pool_name = ""

    def allocate(self, manager: VarManager, name: str, size: int, op_type: str) -> int:
        """A pointer of exactly `size` bytes; MEMALLOC_FAILED without memory manager or block."""
        pointer = self.pool(manager, size)
        if pointer is None:
            fail(Status.MEMALLOC_FAILED, f"{self.pool_name} pool has no {size}-byte block for "
                 f"{name!r}", VarMemoryExhausted)
        self.var_mem_size += size
        return pointer

    def pool(self, manager: VarManager, size: int) -> int | None:
        """A block of the pool, None when there is none."""
        raise NotImplementedError


class RdmaMemResource(_PoolMemResource):
    """Variables in the RDMA pool of the manager's device."""

    mem_type = MemType.RDMA_HBM
    pool_name = "RDMA"

    def pool(self, manager: VarManager, size: int) -> int | None:
        """A block of the RDMA pool."""
        return manager.get_rdma_pool_memory(MemType.RDMA_HBM, size)


class HostMemResource(_PoolMemResource):
    """Variables in host memory (zero-filled)."""

    mem_type = MemType.HOST
    pool_name = "host"

    def pool(self, manager: VarManager, size: int) -> int | None:
        """A zero-filled block of host memory."""
        return manager.get_host_pool_memory(MemType.HOST, size)


_RESOURCES: Mapping[int, type[MemResource]] = MappingProxyType({
    MemType.HBM: HbmMemResource, MemType.RDMA_HBM: RdmaMemResource,
    MemType.HOST: HostMemResource,
})


def new_mem_resource(mem_type: int) -> MemResource | None:
    """A fresh resource for a supported memory type, None for any other type."""
    cls = _RESOURCES.get(mem_type)
    return cls() if cls is not None else None


def _mem_resource_for(manager: VarManager, mem_type: int) -> MemResource:
    """The manager's resource of a memory type, created on first use; PARAM_INVALID if none."""
    if mem_type not in manager.mem_resources:
        created = new_mem_resource(mem_type)
        if created is None:
            fail(Status.PARAM_INVALID, f"memory type {mem_type:#x} cannot hold variables; "
                                       "use HBM (0x2), RDMA_HBM (0x3) or HOST (0x81)")
        manager.mem_resources[mem_type] = created
    resource = manager.mem_resources[mem_type]
    if resource is None:
        fail(Status.INTERNAL_ERROR, f"memory resource slot {mem_type:#x} is empty")
    return resource


# ---- assignment (spec 5) ------------------------------------------------------------------------


def assign_var_mem(manager: VarManager, name: str, op: VarOp | None, desc: VarDesc,
                   mem_type: int) -> int:
    """Give a variable memory (or reuse some) and return its logical address (spec 5).

    Reuse, in GE's order: a known name whose new size fits its current descriptor's size
    (rule 1), FileConstant path:offset (rule 2), Constant bytes (rule 3); else a fresh block
    (rule 4). A hit overrides the requested memory type. QUIRK: a key conflict fails with
    INTERNAL_ERROR after the block was already added to the running total.
    """
    resource = manager.require_resource()
    res = _mem_resource_for(manager, mem_type)
    address, mem_type = _reuse(resource, name, op, desc.size, mem_type)
    if address is None:
        address = _fresh(manager, res, name, op, desc=desc, mem_type=mem_type)
    cur = resource.cur_desc_by_name.get(resource.mapped(name))
    if cur is None or not same_layout(cur, desc):
        resource.set_var_addr(name, desc, address, mem_type, op)
    return address


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


def _fresh(manager: VarManager, res: MemResource, name: str, op: VarOp | None, *,
           desc: VarDesc, mem_type: int) -> int:
    try:
        offset = res.allocate(manager, name, desc.size, op.type if op else "")
        return manager.require_resource().save_var_addr(name, desc, offset, mem_type, op)
    except VarManagerError as exc:  # GE's AssignVarMem reports both as INTERNAL_ERROR
        raise type(exc)(Status.INTERNAL_ERROR, f"assigning {name!r}: {exc.detail}") from None


def restore_var_mem(manager: VarManager, name: str, op: VarOp | None, desc: VarDesc,
                    mem_type: int) -> None:
    """Re-register a compiled variable at its output offset 0 (model load, spec 5.3).

    A variable already known aliases its address when the new descriptor is no larger.
    Restoring never touches the running totals.
    """
    resource = manager.require_resource()
    if desc.size < 0:
        fail(Status.FAILED, f"variable {name!r} has a negative size {desc.size}")
    cur = resource.cur_desc_by_name.get(resource.mapped(name))
    if cur is not None and resource.is_var_exist(name, cur):
        _restore_known(resource, name, op, desc, cur)
        return
    logical_offset = _output_offset(name, op) - manager.var_mem_logic_base
    if logical_offset < 0 or logical_offset + desc.size > manager.var_mem_max_size:
        fail(Status.FAILED, f"restoring {name!r}: offset {logical_offset} + size {desc.size} "
                            f"is outside the variable memory [0, {manager.var_mem_max_size})")
    logical = resource.save_var_addr(name, desc, logical_offset, mem_type, op)
    resource.set_var_addr(name, desc, logical, mem_type, op)


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
