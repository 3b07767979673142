"""Loading a variable plan into emulated device memory before the first task; the emulator hook.

`load_into_device(plan, memory, device_id)` does what GE's loader does for a compiled model:
initialize a session manager with the plan's logical base and variable window, restore every
HBM variable at its logical address (spec 5.3), then resolve each through runtime address
resolution (spec 7: auto-malloc of `align512(size) + 1024`-byte blocks, `_init_value` copied).
Constants' weights are copied once per address and device (loaded-constant dedup, spec 8.2),
FileConstants read from their files once per device (ready state, spec 8.1). RDMA / host
variables get fresh pool memory on the emulated device.

`PlanLoader` is the plan behind `runtime_emu`'s `VariableLoader`: the emulator calls
`loader.load_into(memory)` once before the first task; `memory` is anything with
`place(name, mem_type, offset, size)` (runtime_emu's `DeviceMemory`). It loads the plan with
`load_into_device` (real addresses, init values, weights), places every variable's region, and
returns a JSON-able summary for the report. Regions of variables that share memory overlap on
purpose (same offset as the variable they reuse). HBM offsets are offsets in the variable region;
RDMA / host variables are placed at increasing offsets of their memory type (their pointers are
not offsets).

>>> from streamalloc.ir.builder import GraphBuilder
>>> from streamalloc.ir.tensor import TensorDesc
>>> from streamalloc.memory.plan import variable_plan
>>> b = GraphBuilder("g"); b.add_node("w", "Variable", outputs=[TensorDesc((4,), "float32")])
>>> loaded = load_into_device(variable_plan(b.build()), EmulatedMemory(), pool=VarManagerPool())
>>> loaded.allocated_bytes["HBM"], loaded.variables["w"].size
(1536, 1536)
>>> class Sink:
...     def place(self, name, mem_type, offset, size): print(name, mem_type, offset, size)
>>> report = PlanLoader(variable_plan(b.build())).load_into(Sink())
w HBM 0 1536
>>> report["allocated_bytes"]
{'HBM': 1536, 'RDMA_HBM': 0, 'HOST': 0}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from streamalloc.memory.codes import (
    LEGACY_VAR_WINDOW,
    MemType,
    Status,
    VarMemoryExhausted,
    fail,
    hbm_block,
)
from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.file_constant import locate, read_weight
from streamalloc.memory.manager import VarManager, VarManagerPool
from streamalloc.memory.plan import PlannedVariable, VariablePlan

WEIGHT_KINDS = ("Constant", "Const")
RDMA_POOL = 1 << 30  # the emulated device's RDMA pool when the loader is given no memory


@dataclass(frozen=True, slots=True)
class LoadedVariable:
    """One variable on the device: its device address and whether its bytes were written."""

    name: str
    mem_type: str
    logical_address: int
    device_address: int
    size: int
    shared_with: str | None
    initialized: bool


@dataclass(frozen=True)
class LoadedVariables:
    """What `load_into_device` put on the device; `manager` resolves further addresses."""

    graph: str
    device_id: int
    variables: Mapping[str, LoadedVariable]
    allocated_bytes: Mapping[str, int]
    manager: VarManager = field(compare=False, repr=False)

    def address(self, name: str) -> int:
        """The device address of a variable's data."""
        return self.variables[name].device_address

    def summary(self) -> str:
        """One line for the emulation report."""
        own = sum(1 for v in self.variables.values() if v.shared_with is None)
        init = sum(1 for v in self.variables.values() if v.initialized)
        sizes = ", ".join(f"{k} {v}" for k, v in self.allocated_bytes.items())
        return (f"variables: {len(self.variables)} loaded on device {self.device_id} "
                f"({own} own blocks, {init} initialized); bytes allocated: {sizes}")


def _session_manager(plan: VariablePlan, memory: EmulatedMemory, device_id: int,
                     pool: VarManagerPool) -> VarManager:
    manager = pool.get(plan.session)
    manager.init(0, plan.session, device_id, 0)
    manager.var_mem_logic_base = plan.logic_base
    manager.var_mem_max_size = plan.var_window or LEGACY_VAR_WINDOW
    manager.set_mem_manager(memory)
    return manager


def load_into_device(plan: VariablePlan, memory: EmulatedMemory, device_id: int = 0, *,
                     weight_dir: Path | None = None, options: Mapping[str, str] | None = None,
                     pool: VarManagerPool | None = None) -> LoadedVariables:
    """Place the plan's variables in `memory` on `device_id` (see the module docstring).

    The plan's session manager comes from `pool` (a new pool of its own when None).
    `weight_dir` resolves relative FileConstant paths; `options` supplies `ge.exec.value_bins`.
    A FileConstant whose file is missing is loaded uninitialized. Raises VarMemoryExhausted
    (exit 4) when the device has no room, with the numbers.
    """
    manager = _session_manager(plan, memory, device_id, pool or VarManagerPool())
    for var in plan.variables.values():
        if var.mem_type == "HBM" and var.op is not None:
            manager.restore_var_mem(var.manager_name, var.op, var.desc, MemType.HBM)
    loaded: dict[str, LoadedVariable] = {}
    extra = {"RDMA_HBM": 0, "HOST": 0}
    for var in plan.variables.values():
        if var.mem_type == "HBM":
            address = _resolve(manager, memory, plan, var, device_id)
        else:
            address = _pool_address(memory, var, loaded, extra, device_id)
        written = _write_contents(manager, memory, var, address, device_id=device_id,
                                  weight_dir=weight_dir, options=options)
        loaded[var.name] = LoadedVariable(var.name, var.mem_type, var.logical_address, address,
                                          var.size, var.reused_from, written)
    return LoadedVariables(plan.graph, device_id, MappingProxyType(loaded),
                           MappingProxyType({"HBM": manager.malloc_total, **extra}), manager)


def _resolve(manager: VarManager, memory: EmulatedMemory, plan: VariablePlan,
             var: PlannedVariable, device_id: int) -> int:
    address = manager.get_var_memory_addr(var.logical_address, MemType.HBM, device_id,
                                          plan.graph)
    if address is None:
        device = memory.device(device_id).hbm
        fail(Status.MEMALLOC_FAILED,
             f"device {device_id} has no room for variable {var.name!r}: it needs "
             f"{hbm_block(var.desc.size)} bytes, {device.used} of {device.capacity} are in use",
             VarMemoryExhausted)
    return address


def _pool_address(memory: EmulatedMemory, var: PlannedVariable,
                  loaded: dict[str, LoadedVariable], extra: dict[str, int],
                  device_id: int) -> int:
    if var.reused_from is not None and var.reused_from in loaded:
        return loaded[var.reused_from].device_address
    size = var.desc.size
    address = memory.rdma_malloc(size, device_id) if var.mem_type == "RDMA_HBM" \
        else memory.host_malloc(size)
    if address is None:
        fail(Status.MEMALLOC_FAILED, f"the {var.mem_type} pool of device {device_id} has no "
                                     f"{size}-byte block for variable {var.name!r}",
             VarMemoryExhausted)
    extra[var.mem_type] += size
    return address


def _write_contents(manager: VarManager, memory: EmulatedMemory, var: PlannedVariable,
                    address: int, *, device_id: int, weight_dir: Path | None,
                    options: Mapping[str, str] | None) -> bool:
    """Copy a constant's weight or a FileConstant's file; True when the bytes are in place."""
    op = var.op
    if op is None:
        return False
    if var.desc.init_value is not None:
        return True  # copied by runtime resolution
    if var.kind in WEIGHT_KINDS and op.weight is not None and op.weight.data:
        if not manager.check_and_set_var_loaded(op, device_id):
            memory.write(address, op.weight.data)
        return True
    if var.kind == "FileConstant":
        return _load_file(manager, memory, var, address, device_id=device_id,
                          weight_dir=weight_dir, options=options)
    return False


def _load_file(manager: VarManager, memory: EmulatedMemory, var: PlannedVariable, address: int,
               *, device_id: int, weight_dir: Path | None,
               options: Mapping[str, str] | None) -> bool:
    """Read a FileConstant's weight once per device (ready state); False without its file."""
    assert var.op is not None
    if manager.is_var_ready(var.manager_name, var.desc, device_id):
        return True
    where = locate(var.op, options)
    path = Path(where.path)
    if not (path if path.is_absolute() else (weight_dir or Path()) / path).exists():
        return False
    memory.write(address, read_weight(where, weight_dir))
    manager.set_var_is_ready(var.manager_name, var.desc, device_id)
    return True


# ---- the emulator's variable loader --------------------------------------------------------------


class RegionSink(Protocol):
    """Where regions are placed (runtime_emu.memory.DeviceMemory)."""

    def place(self, name: str, mem_type: str, offset: int, size: int) -> None:
        """Record that `name` occupies [offset, offset + size) of `mem_type`."""


class PlanLoader:
    """Loads one plan; `loaded` holds the device addresses after `load_into`.

    The loader's manager pool (`pool`, a new one by default) holds the session manager the plan
    is loaded with; `memory` is the emulated device memory (a new one by default).
    """

    def __init__(self, plan: VariablePlan, *, device_id: int = 0,
                 memory: EmulatedMemory | None = None, weight_dir: Path | None = None,
                 options: Mapping[str, str] | None = None,
                 pool: VarManagerPool | None = None) -> None:
        self.plan = plan
        self.device_id = device_id
        self.memory = memory or EmulatedMemory(rdma_pool_size=RDMA_POOL)
        self.weight_dir = weight_dir
        self.options = options
        self.pool = pool or VarManagerPool()
        self.loaded: LoadedVariables | None = None

    def load_into(self, memory: RegionSink) -> dict[str, Any]:
        """Load the plan, place every variable's region, return the report's summary."""
        self.loaded = load_into_device(self.plan, self.memory, self.device_id,
                                       weight_dir=self.weight_dir, options=self.options,
                                       pool=self.pool)
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
