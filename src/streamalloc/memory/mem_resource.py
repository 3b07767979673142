"""Memory resources: one running total per memory type and how a new variable gets memory.

HBM is an offset bump allocator in the logical region: each variable takes a block of
`align512(size) + 1024` bytes, `[512 front guard][align512(size) data][512 rear guard]`, at the
running total (spec 4.2). RDMA and host memory take real pointers of exactly `size` bytes from
the manager's pools, no alignment, no guards (spec 4.3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamalloc.memory.codes import U64_MAX, MemType, hbm_block
from streamalloc.memory.status import Status, VarMemoryExhausted, fail

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager

CONST_PLACE_HOLDER = "ConstPlaceHolder"


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


class RdmaMemResource(MemResource):
    """Variables in the RDMA pool of the manager's device."""

    mem_type = MemType.RDMA_HBM

    def allocate(self, manager: VarManager, name: str, size: int, op_type: str) -> int:
        """A pointer of exactly `size` bytes; MEMALLOC_FAILED without memory manager or block."""
        pointer = manager.get_rdma_pool_memory(MemType.RDMA_HBM, size)
        if pointer is None:
            fail(Status.MEMALLOC_FAILED, f"RDMA pool has no {size}-byte block for {name!r}",
                 VarMemoryExhausted)
        self.var_mem_size += size
        return pointer


class HostMemResource(MemResource):
    """Variables in host memory (zero-filled)."""

    mem_type = MemType.HOST

    def allocate(self, manager: VarManager, name: str, size: int, op_type: str) -> int:
        """A zero-filled host pointer of exactly `size` bytes."""
        pointer = manager.get_host_pool_memory(MemType.HOST, size)
        if pointer is None:
            fail(Status.MEMALLOC_FAILED, f"host pool has no {size}-byte block for {name!r}",
                 VarMemoryExhausted)
        self.var_mem_size += size
        return pointer


_RESOURCES: dict[int, type[MemResource]] = {
    MemType.HBM: HbmMemResource, MemType.RDMA_HBM: RdmaMemResource,
    MemType.HOST: HostMemResource,
}


def new_mem_resource(mem_type: int) -> MemResource | None:
    """A fresh resource for a supported memory type, None for any other type."""
    cls = _RESOURCES.get(mem_type)
    return cls() if cls is not None else None
