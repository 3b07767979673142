"""Emulated device memory and the hook that loads the variable memory plan before the first task.

The variable memory package (`streamalloc.memory`) provides a `VariableLoader`: the emulator
calls `load_into(memory)` once at model load, before any stream runs; the loader places every
variable with `DeviceMemory.place`, and what it returns is copied into the report under
`variables.loader`. Loading takes no emulated time (GE copies variables at model load).

>>> mem = DeviceMemory({"HBM": 1024})
>>> mem.place("w1", "HBM", offset=0, size=512)
>>> mem.place("w2", "HBM", offset=512, size=256)
>>> mem.summary()
{'count': 2, 'bytes': {'HBM': 768}, 'extent': {'HBM': 768}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from streamalloc.errors import InputError, LimitExceeded


@dataclass(frozen=True, slots=True)
class Region:
    """One placed variable: memory type, byte offset and size."""

    name: str
    mem_type: str
    offset: int
    size: int


class DeviceMemory:
    """Memory types with capacities (bytes; a type without one is unbounded) and placed regions.

    Regions may overlap: the variable plan reuses memory between variables on purpose.
    """

    def __init__(self, capacity: Mapping[str, int] | None = None) -> None:
        self.capacity = dict(capacity or {})
        self.regions: dict[str, Region] = {}

    def place(self, name: str, mem_type: str, offset: int, size: int) -> None:
        """Put variable `name` at `offset` of `mem_type` (LimitExceeded past the capacity)."""
        if name in self.regions:
            raise InputError(f"variable {name!r} is placed twice in emulated device memory")
        if offset < 0 or size < 0:
            raise InputError(f"variable {name!r}: offset {offset} and size {size} must be >= 0")
        limit = self.capacity.get(mem_type)
        if limit is not None and offset + size > limit:
            raise LimitExceeded(f"variable {name!r} ends at byte {offset + size} of {mem_type}, "
                                f"past the device's {limit} bytes (cost table device.memory)")
        self.regions[name] = Region(name, mem_type, offset, size)

    def summary(self) -> dict[str, Any]:
        """Count, bytes per memory type (a block variables share counted once) and extent
        (highest end) per memory type, sorted."""
        total: dict[str, int] = {}
        extent: dict[str, int] = {}
        blocks = {(r.mem_type, r.offset, r.size) for r in self.regions.values()}
        for mem_type, _, size in blocks:
            total[mem_type] = total.get(mem_type, 0) + size
        for region in self.regions.values():
            end = region.offset + region.size
            extent[region.mem_type] = max(extent.get(region.mem_type, 0), end)
        return {"count": len(self.regions), "bytes": dict(sorted(total.items())),
                "extent": dict(sorted(extent.items()))}


@runtime_checkable
class VariableLoader(Protocol):
    """Loads a variable memory plan into emulated device memory; returns a JSON-able summary."""

    def load_into(self, memory: DeviceMemory) -> Mapping[str, Any]:
        """Place every variable with `memory.place`; return what the report should show."""
        ...


def load_variables(loader: VariableLoader | None, memory: DeviceMemory) -> dict[str, Any] | None:
    """Run the loader (if any) and return the report's `variables` entry."""
    if loader is None:
        return None
    returned = loader.load_into(memory)
    return {**memory.summary(), "loader": dict(returned)}
