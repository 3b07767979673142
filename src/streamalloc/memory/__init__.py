"""Variable memory management: GE's variable manager, its passes, serialization and plans.

Layers, bottom up:

* descriptors and keys (`desc`), GE codes (`codes`, `ge_codes`), statuses and errors (`status`);
* the session-scoped manager (`VarManager`) with its resource (`VarResource`) and memory
  resources, pooled per session (`VarManagerPool`), the V1 runtime manager (`rt_manager`);
* runtime address resolution over emulated device memory (`runtime_addr`, `device`);
* serialization to var_manager.proto (`serialize`);
* the compile-time driver and the variable plan of a graph (`compile_driver`, `plan`), the
  `vars` command (`command`), and loading a plan into emulated device memory (`loading`; the
  emulator's `VariableLoader` adapter is `emu_loader.PlanLoader`);
* the graph passes (`passes`) and FileConstant external weights (`file_constant`).

The API names are the specification's (ge-variable-memory.md, appendix A).
"""

from streamalloc.memory.codes import MemType
from streamalloc.memory.command import vars_command
from streamalloc.memory.context import GeContext
from streamalloc.memory.desc import InitValue, VarDesc, VarOp, Weight, var_key
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.emu_loader import PlanLoader
from streamalloc.memory.loading import LoadedVariable, LoadedVariables, load_into_device
from streamalloc.memory.manager import VarManager
from streamalloc.memory.plan import PlannedVariable, VariablePlan, plan_to_json, variable_plan
from streamalloc.memory.pool import VarManagerPool, default_pool
from streamalloc.memory.records import BroadcastInfo, DevVarInfo, TransStep, VarAddr
from streamalloc.memory.resource import VarResource
from streamalloc.memory.rt_manager import RtVarInfo, RuntimeVarManager, RuntimeVarManagerPool
from streamalloc.memory.serialize import deserialize, serialize
from streamalloc.memory.status import (
    Status,
    VarGraphError,
    VarManagerError,
    VarMemoryExhausted,
    VarOptionsInvalid,
)

__all__ = [
    "BroadcastInfo", "DevVarInfo", "EmulatedMemory", "ExpandableAllocator", "GeContext",
    "InitValue", "LoadedVariable", "LoadedVariables", "MemType", "PlanLoader", "PlannedVariable",
    "RtVarInfo", "RuntimeVarManager", "RuntimeVarManagerPool", "Status", "TransStep", "VarAddr",
    "VarDesc", "VarGraphError", "VarManager", "VarManagerError", "VarManagerPool",
    "VarMemoryExhausted", "VarOp", "VarOptionsInvalid", "VarResource", "VariablePlan", "Weight",
    "default_pool", "deserialize", "load_into_device", "plan_to_json", "serialize",
    "var_key", "variable_plan", "vars_command",
]
