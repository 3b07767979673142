"""The emulator's variable loader: a variable plan behind `runtime_emu`'s `VariableLoader`.

The emulator calls `loader.load_into(memory)` once before the first task; `memory` is anything
with `place(name, mem_type, offset, size)` (runtime_emu's `DeviceMemory`). `PlanLoader` loads the
plan into emulated device memory with `load_into_device` (real addresses, init values, weights),
places every variable's region, and returns a JSON-able summary for the report. Regions of
variables that share memory overlap on purpose (same offset as the variable they reuse). HBM
offsets are offsets in the variable region; RDMA / host variables are placed at increasing
offsets of their memory type (their pointers are not offsets).

>>> from streamalloc.ir.builder import GraphBuilder
>>> from streamalloc.ir.tensor import TensorDesc
>>> from streamalloc.memory.plan import variable_plan
>>> b = GraphBuilder("g"); b.add_node("w", "Variable", outputs=[TensorDesc((4,), "float32")])
>>> class Sink:
...     def place(self, name, mem_type, offset, size): print(name, mem_type, offset, size)
>>> report = PlanLoader(variable_plan(b.build())).load_into(Sink())
w HBM 0 1536
>>> report["allocated_bytes"]
{'HBM': 1536, 'RDMA_HBM': 0, 'HOST': 0}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.loading import LoadedVariables, load_into_device
from streamalloc.memory.plan import PlannedVariable, VariablePlan

RDMA_POOL = 1 << 30  # the emulated device's RDMA pool when the caller gives no memory


class RegionSink(Protocol):
    """Where regions are placed (runtime_emu.memory.DeviceMemory)."""

    def place(self, name: str, mem_type: str, offset: int, size: int) -> None:
        """Record that `name` occupies [offset, offset + size) of `mem_type`."""


class PlanLoader:
    """Loads one plan; `loaded` holds the device addresses after `load_into`."""

    def __init__(self, plan: VariablePlan, *, device_id: int = 0,
                 memory: EmulatedMemory | None = None, weight_dir: Path | None = None,
                 options: Mapping[str, str] | None = None) -> None:
        self.plan = plan
        self.device_id = device_id
        self.memory = memory or EmulatedMemory(rdma_pool_size=RDMA_POOL)
        self.weight_dir = weight_dir
        self.options = options
        self.loaded: LoadedVariables | None = None

    def load_into(self, memory: RegionSink) -> dict[str, Any]:
        """Load the plan, place every variable's region, return the report's summary."""
        self.loaded = load_into_device(self.plan, self.memory, self.device_id,
                                       weight_dir=self.weight_dir, options=self.options)
        for var, offset in _region_offsets(self.plan):
            memory.place(var.name, var.mem_type, offset, var.size)
        return {
            "graph": self.plan.graph, "session": self.plan.session,
            "device_id": self.device_id, "count": len(self.loaded.variables),
            "own_blocks": sum(1 for v in self.loaded.variables.values()
                              if v.shared_with is None),
            "initialized": sum(1 for v in self.loaded.variables.values() if v.initialized),
            "allocated_bytes": dict(self.loaded.allocated_bytes),
            "total_size": dict(self.plan.total_size), "logic_base": self.plan.logic_base,
        }


def _region_offsets(plan: VariablePlan) -> list[tuple[PlannedVariable, int]]:
    """Each variable's offset in its memory type; a reusing variable takes its owner's."""
    out: list[tuple[PlannedVariable, int]] = []
    by_name: dict[str, int] = {}
    ends: dict[str, int] = {}
    for var in plan.variables.values():
        if var.reused_from is not None:
            offset = by_name[var.reused_from]
        elif var.mem_type == "HBM":
            offset = var.offset
        else:
            offset = ends.get(var.mem_type, 0)
            ends[var.mem_type] = offset + var.size
        by_name[var.name] = offset
        out.append((var, offset))
    return out
