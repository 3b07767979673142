"""Emulated device memory: the stand-in for the runtime's memory manager and allocators.

`EmulatedMemory` plays GE's `MemManager`: per-device HBM (and P2P) memory, a per-device RDMA pool
and a host pool, all with byte contents. Addresses are deterministic (first fit in fixed address
ranges), so runs repeat exactly. `ExpandableAllocator` plays the session's expandable allocator
that maps physical pages of a fixed size (2 MiB, or 1 GiB huge pages).

Address layout: device d's HBM starts at 0x1000_0000_0000 + d * 2^40 and its RDMA pool 512 GiB
above that; the host pool starts at 0x7000_0000_0000. None of these overlap the logical variable
addresses (32 GiB .. 128 GiB + a few GiB).

>>> mem = EmulatedMemory(hbm_size=1 << 20)
>>> a = mem.malloc(2, 1000)   # MemType.HBM
>>> mem.write(a, b"hi"); mem.read(a, 2)
b'hi'
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from streamalloc.memory.codes import GIB, NORMAL_PAGE, MemType

HBM_BASE = 0x1000_0000_0000
DEVICE_STRIDE = 1 << 40
RDMA_OFFSET = 512 * GIB
HOST_BASE = 0x7000_0000_0000
BLOCK_ALIGN = 512
_PAGE = 4096  # granularity of the sparse content store


class MemoryRegion:
    """First-fit allocator over [base, base + capacity); blocks are 512-byte aligned."""

    def __init__(self, name: str, base: int, capacity: int) -> None:
        self.name = name
        self.base = base
        self.capacity = capacity
        self._starts: list[int] = []
        self._sizes: dict[int, int] = {}

    @property
    def used(self) -> int:
        """Bytes currently allocated."""
        return sum(self._sizes.values())

    def allocate(self, size: int) -> int | None:
        """The lowest free address fitting `size` bytes, or None when the region is full."""
        size = max(size, 1)
        cursor = self.base
        for start in self._starts:
            if start - cursor >= size:
                break
            cursor = _align(start + self._sizes[start])
        if cursor + size > self.base + self.capacity:
            return None
        bisect.insort(self._starts, cursor)
        self._sizes[cursor] = size
        return cursor

    def free(self, address: int) -> bool:
        """Release the block starting at `address`; False if there is none."""
        if address not in self._sizes:
            return False
        del self._sizes[address]
        self._starts.remove(address)
        return True

    def block_of(self, address: int) -> tuple[int, int] | None:
        """(start, size) of the block containing `address`, None if unallocated."""
        index = bisect.bisect_right(self._starts, address) - 1
        if index < 0:
            return None
        start = self._starts[index]
        return (start, self._sizes[start]) if address < start + self._sizes[start] else None


def _align(address: int) -> int:
    return (address + BLOCK_ALIGN - 1) // BLOCK_ALIGN * BLOCK_ALIGN


class EmulatedDevice:
    """One device: HBM and an RDMA pool. `rejected_page_sizes` makes physical maps fail."""

    def __init__(self, device_id: int, hbm_size: int, rdma_pool_size: int,
                 rejected_page_sizes: Iterable[int] = ()) -> None:
        base = HBM_BASE + device_id * DEVICE_STRIDE
        self.device_id = device_id
        self.hbm = MemoryRegion(f"device {device_id} HBM", base, hbm_size)
        self.rdma = MemoryRegion(f"device {device_id} RDMA pool", base + RDMA_OFFSET,
                                 rdma_pool_size)
        self.rejected_page_sizes = frozenset(rejected_page_sizes)

    def map_pages(self, size: int, page_size: int) -> int | None:
        """Physical pages for an expandable allocator; None when the page size is rejected."""
        if page_size in self.rejected_page_sizes:
            return None
        pages = -(-max(size, 1) // page_size)
        return self.hbm.allocate(pages * page_size)


class EmulatedMemory:
    """GE's memory manager over emulated devices (created on first use) and a host pool."""

    def __init__(self, *, hbm_size: int = 32 * GIB, rdma_pool_size: int = 0,
                 host_size: int = 64 * GIB, rejected_page_sizes: Iterable[int] = ()) -> None:
        self.hbm_size = hbm_size
        self.rdma_pool_size = rdma_pool_size
        self.rejected_page_sizes = frozenset(rejected_page_sizes)
        self.devices: dict[int, EmulatedDevice] = {}
        self.host = MemoryRegion("host pool", HOST_BASE, host_size)
        self._pages: dict[int, bytearray] = {}

    def device(self, device_id: int) -> EmulatedDevice:
        """The device with this id (created with the memory's sizes on first use)."""
        if device_id not in self.devices:
            self.devices[device_id] = EmulatedDevice(device_id, self.hbm_size,
                                                     self.rdma_pool_size,
                                                     self.rejected_page_sizes)
        return self.devices[device_id]

    def malloc(self, mem_type: int, size: int, device_id: int = 0) -> int | None:
        """Device memory (HBM or P2P_DDR, both from the device's HBM here); None when full."""
        if mem_type not in (MemType.HBM, MemType.P2P_DDR):
            return None
        return self.device(device_id).hbm.allocate(size)

    def free(self, mem_type: int, address: int, device_id: int = 0) -> bool:
        """Free device memory from `malloc`; False for an unknown address."""
        return self.device(device_id).hbm.free(address)

    def rdma_malloc(self, size: int, device_id: int = 0) -> int | None:
        """A block of the device's RDMA pool; None when the pool has no such block."""
        return self.device(device_id).rdma.allocate(size)

    def host_malloc(self, size: int) -> int | None:
        """Zero-filled host memory."""
        address = self.host.allocate(size)
        if address is not None:
            self.write(address, bytes(size))
        return address

    def write(self, address: int, data: bytes) -> None:
        """Store bytes (sparse: only written pages exist)."""
        offset = 0
        while offset < len(data):
            page, inner = divmod(address + offset, _PAGE)
            chunk = data[offset:offset + _PAGE - inner]
            buf = self._pages.setdefault(page, bytearray(_PAGE))
            buf[inner:inner + len(chunk)] = chunk
            offset += len(chunk)

    def read(self, address: int, size: int) -> bytes:
        """Bytes at an address; never-written bytes read as zero."""
        out = bytearray()
        while len(out) < size:
            page, inner = divmod(address + len(out), _PAGE)
            take = min(_PAGE - inner, size - len(out))
            buf = self._pages.get(page)
            out += buf[inner:inner + take] if buf is not None else bytes(take)
        return bytes(out)

    def used(self, device_id: int = 0) -> int:
        """HBM bytes allocated on a device (allocator pages included)."""
        return self.device(device_id).hbm.used


class ExpandableAllocator:
    """A session allocator that maps physical pages of `page_size` and bumps inside them.

    `switch_to_session_mode` is what GE does when it accepts the allocator: no reuse of freed
    blocks and a private physical pool (spec 7).
    """

    supports_expandable = True

    def __init__(self, memory: EmulatedMemory, session_id: int = 0, device_id: int = 0,
                 mem_type: int = MemType.HBM, page_size: int = NORMAL_PAGE) -> None:
        self.memory = memory
        self.session_id = session_id
        self.device_id = device_id
        self.mem_type = mem_type
        self.page_size = page_size
        self.reuse = True
        self.private_pool = False
        self._chunks: list[tuple[int, int]] = []  # (start, size) of mapped pages
        self._cursor = 0
        self._end = 0

    def switch_to_session_mode(self) -> None:
        """No reuse, private physical pool."""
        self.reuse = False
        self.private_pool = True

    def malloc(self, size: int) -> int | None:
        """`size` bytes (512-aligned) from the mapped pages, mapping more when needed."""
        size = _align(max(size, 1))
        if self._cursor + size > self._end:
            start = self.memory.device(self.device_id).map_pages(size, self.page_size)
            if start is None:
                return None
            mapped = -(-size // self.page_size) * self.page_size
            self._chunks.append((start, mapped))
            self._cursor, self._end = start, start + mapped
        address = self._cursor
        self._cursor += size
        return address

    def free_all(self) -> None:
        """Unmap every page."""
        device = self.memory.device(self.device_id)
        for start, _ in self._chunks:
            device.hbm.free(start)
        self._chunks.clear()
        self._cursor = self._end = 0

    @property
    def mapped_bytes(self) -> int:
        """Bytes of physical pages currently mapped."""
        return sum(size for _, size in self._chunks)
