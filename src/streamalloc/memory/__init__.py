"""Variable memory management: GE's variable manager, its passes, serialization and plans.

Modules, bottom up (the API names are the specification's, ge-variable-memory.md appendix A):

* `codes`: GE's codes and constants: memory types, statuses and their exceptions, format and
  dtype numbers, sizes and limits;
* `desc`: tensor and op descriptors and their compile-time size;
* `desc_convert`: descriptors from graph IR and to / from proto;
* `tables`: the variable key and the rows of the resource's tables;
* `resource`: `VarResource`, one session's tables and the operations on them;
* `assignment`: memory resources per memory type and assigning / restoring variable memory;
* `resolve`: runtime address resolution over emulated device memory, and freeing that memory;
* `runtime`: the V1 runtime manager and its pool;
* `serialize`: var_manager.proto messages: managers, pools, shared content, model-cache matching;
* `manager`: `VarManager`, `VarManagerPool` (created and passed in by whoever needs one: there is
  no process-wide pool) and the `GeContext` options it carries;
* `device`: emulated device memory and the expandable allocator;
* `compile_driver`: static memory for a graph's variables, then ref and variable attributes;
* `plan`: the variable plan of a graph and the `vars` command;
* `loading`: a plan loaded into emulated device memory, the emulator's `PlanLoader`;
* `file_constant`: FileConstant external weights; `passes`: the variable graph passes.
"""

from streamalloc.memory.codes import (
    MemType,
    Status,
    VarGraphError,
    VarManagerError,
    VarMemoryExhausted,
    VarOptionsInvalid,
)
from streamalloc.memory.context import GeContext
from streamalloc.memory.desc import InitValue, VarDesc, VarOp, Weight
from streamalloc.memory.device import EmulatedMemory, ExpandableAllocator
from streamalloc.memory.loading import LoadedVariable, LoadedVariables, PlanLoader, load_into_device
from streamalloc.memory.manager import VarManager, VarManagerPool
from streamalloc.memory.plan import (
    PlannedVariable,
    VariablePlan,
    plan_to_json,
    variable_plan,
    vars_command,
)
from streamalloc.memory.resource import VarResource
from streamalloc.memory.runtime import RtVarInfo, RuntimeVarManager, RuntimeVarManagerPool
from streamalloc.memory.tables import BroadcastInfo, DevVarInfo, TransStep, VarAddr, var_key

__all__ = [
    "BroadcastInfo", "DevVarInfo", "EmulatedMemory", "ExpandableAllocator", "GeContext",
    "InitValue", "LoadedVariable", "LoadedVariables", "MemType", "PlanLoader", "PlannedVariable",
    "RtVarInfo", "RuntimeVarManager", "RuntimeVarManagerPool", "Status", "TransStep", "VarAddr",
    "VarDesc", "VarGraphError", "VarManager", "VarManagerError", "VarManagerPool",
    "VarMemoryExhausted", "VarOp", "VarOptionsInvalid", "VarResource", "VariablePlan", "Weight",
    "load_into_device", "plan_to_json", "var_key", "variable_plan",
    "vars_command",
]
