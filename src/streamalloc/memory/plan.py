"""The variable plan of a graph: where each variable and constant lives (formats.md section 6).

`variable_plan(graph)` runs GE's compile-phase driver (compile_driver.py) on a fresh session
manager and records, per node, its key, kind, memory type, offset, size, logical address and the
variable whose memory it reuses. The plan is immutable; `plan_to_json` is its file form
(`streamalloc.vars/v1`), `plan_text` the table that `vars_command` (`streamalloc vars`) prints.

Which nodes: GE's four types (`Variable`, `Constant`, `FileConstant`, `ConstPlaceHolder`) and,
as streamalloc extensions, `VariableV2` (variable-like, as GE's passes treat it) and `Const`
(graph weights: GE's ONNX/TF parsers make them and GE places them in the model's weight area,
not the variable region; streamalloc plans them like `Constant` so that the weight memory of
ONNX models and GE dumps is visible). `include_const=False` gives GE's own set.

Sizes: `size` is the bytes the variable's memory takes (an HBM block `align512(size) + 1024`,
the exact size for RDMA / host); a reusing variable reports the block it shares. `offset` is the
offset in the HBM variable region (logical address minus base), or the pointer for RDMA / host.
`total_size` is GE's `get_var_mem_size` per memory type (HBM without ConstPlaceHolder blocks,
whose memory the user supplies).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.options import check_options
from streamalloc.memory.codes import (
    DEFAULT_DEVICE_MEMORY,
    GIB,
    MemType,
    Status,
    VarGraphError,
    fail,
    mem_type_name,
)
from streamalloc.memory.compile_driver import (
    STATIC_TYPES,
    StaticAssignment,
    assign_static_memory,
    assign_variable_attrs,
    check_build_memory,
)
from streamalloc.memory.context import GeContext
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.manager import VarManager, VarManagerPool
from streamalloc.outputs import write_atomic

PLAN_FORMAT = "streamalloc.vars/v1"
PLAN_TYPES = (*STATIC_TYPES, "VariableV2", "Const")
DEVICE_MEMORY_OPTION = "streamalloc.device_memory_size"
TOTAL_TYPES = (MemType.HBM, MemType.RDMA_HBM, MemType.HOST)
PLAN_RDMA_POOL = GIB  # the planning device's RDMA pool, for `_output_memory_type: 1` variables


@dataclass(frozen=True, slots=True)
class PlannedVariable:
    """One variable or constant of the plan. The last three fields are not written to JSON."""

    name: str
    key: str
    kind: str
    mem_type: str
    offset: int
    size: int
    logical_address: int
    reused_from: str | None
    manager_name: str = ""
    desc: VarDesc = field(default_factory=VarDesc)
    op: VarOp | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry of formats.md section 6, keys in the documented order."""
        return {"key": self.key, "kind": self.kind, "mem_type": self.mem_type,
                "offset": self.offset, "size": self.size,
                "logical_address": self.logical_address, "reused_from": self.reused_from}


@dataclass(frozen=True, slots=True)
class VariablePlan:
    """The variables of one graph in assignment order, totals, and what loading needs.

    `var_window` is the HBM running total including ConstPlaceHolder blocks (the loader's variable
    window W, spec 6.1); `node_offsets` are output offsets the driver set (variables, assigns,
    ref outputs).
    """

    graph: str
    session: int
    variables: Mapping[str, PlannedVariable]
    total_size: Mapping[str, int]
    logic_base: int
    var_window: int
    device_memory_size: int
    node_offsets: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({}))


def _device_memory(graph: Graph, given: int | None) -> tuple[int, bool]:
    """(device memory size, whether it was configured) from the argument or the graph option."""
    if given is not None:
        return given, True
    text = graph.option(DEVICE_MEMORY_OPTION)
    if not text:
        return DEFAULT_DEVICE_MEMORY, False
    if not text.isdigit() or int(text) == 0:
        fail(Status.PARAM_INVALID, f"{graph.source or graph.name}: option {DEVICE_MEMORY_OPTION}"
                                   f" is {text!r}; expected a positive number of bytes",
             VarGraphError)
    return int(text), True


def plan_pool(graph: Graph) -> VarManagerPool:
    """A new manager pool whose context carries the graph's options (what a plan runs in)."""
    return VarManagerPool(GeContext(graph_options=dict(graph.options)))


def variable_plan(graph: Graph, *, session: int = 0, graph_id: int = 0,
                  include_const: bool = True, device_memory_size: int | None = None,
                  pool: VarManagerPool | None = None) -> VariablePlan:
    """Plan the variable memory of `graph` on the session's manager in `pool`.

    Without a pool the plan runs in a new one of its own (`plan_pool(graph)`), so the session
    manager is fresh; a given pool's session manager keeps what earlier graphs registered.
    Without a configured device size the manager keeps GE's defaults (logical base 32 GiB) and
    the build check uses a 32 GiB device; with one (argument or graph option
    `streamalloc.device_memory_size`) the limits are derived from it, which also moves the base
    to 128 GiB as in GE (spec 6.1). Raises VarGraphError (exit 3) for nodes GE cannot size and
    VarMemoryExhausted (exit 4) when the variables do not fit.
    """
    try:
        return _variable_plan(graph, session, graph_id, include_const=include_const,
                              device_memory_size=device_memory_size, pool=pool)
    except VarGraphError as exc:  # the passes name the node; the file is the graph's
        source = graph.source or graph.name
        if exc.detail.startswith(source):
            raise
        raise VarGraphError(exc.status, f"{source}: {exc.detail}") from exc


def _variable_plan(graph: Graph, session: int, graph_id: int, *, include_const: bool,
                   device_memory_size: int | None, pool: VarManagerPool | None
                   ) -> VariablePlan:
    manager = (pool or plan_pool(graph)).get(session)
    manager.init(0, session, 0, 0)
    manager.set_mem_manager(EmulatedMemory(rdma_pool_size=PLAN_RDMA_POOL))
    device_size, configured = _device_memory(graph, device_memory_size)
    if configured:
        manager.set_memory_malloc_size(graph.options, device_size)
    types = PLAN_TYPES if include_const else STATIC_TYPES
    assignments = assign_static_memory(graph, manager, graph_id, types)
    offsets = assign_variable_attrs(graph, manager, graph_id, assignments)
    check_build_memory(manager, 0, device_size)
    hbm = manager.mem_resources.get(MemType.HBM)
    return VariablePlan(
        graph=graph.name, session=session,
        variables=MappingProxyType(_planned(assignments, manager)),
        total_size=MappingProxyType({t.name: manager.get_var_mem_size(t) for t in TOTAL_TYPES}),
        logic_base=manager.var_mem_logic_base,
        var_window=hbm.var_mem_size if hbm is not None else 0,
        device_memory_size=device_size, node_offsets=MappingProxyType(offsets))


def _planned(assignments: tuple[StaticAssignment, ...], manager: VarManager
             ) -> dict[str, PlannedVariable]:
    owners: dict[int, tuple[str, int]] = {}  # logical address -> (first node, its block)
    out = {}
    for a in assignments:
        if a.fresh:
            owners[a.logical] = (a.node, a.block)
        owner, block = owners.get(a.logical, (a.node, a.block))
        offset = a.logical - manager.var_mem_logic_base if a.mem_type == MemType.HBM \
            else a.logical
        out[a.node] = PlannedVariable(
            a.node, manager.require_resource().key(a.manager_name, a.desc), a.kind,
            mem_type_name(a.mem_type), offset, block, a.logical,
            None if owner == a.node else owner, a.manager_name, a.desc, a.op)
    return out


def plan_to_json(plan: VariablePlan) -> dict[str, Any]:
    """The plan file (formats.md section 6); variables sorted by name."""
    return {
        "format": PLAN_FORMAT, "graph": plan.graph, "session": plan.session,
        "variables": {n: plan.variables[n].to_json() for n in sorted(plan.variables)},
        "total_size": {t.name: plan.total_size[t.name] for t in TOTAL_TYPES},
    }


def plan_json_text(plan: VariablePlan) -> str:
    """The plan file's text: byte-identical for the same graph."""
    return json.dumps(plan_to_json(plan), indent=1) + "\n"


def plan_text(plan: VariablePlan) -> str:
    """What `streamalloc vars` prints: a summary line, the variables table, the totals."""
    from streamalloc.report.table import format_table
    rows = [[v.name, v.kind, v.key, v.mem_type, v.offset, v.size, v.logical_address,
             v.reused_from or "-"] for v in plan.variables.values()]
    own = sum(1 for v in plan.variables.values() if v.reused_from is None)
    head = (f"graph {plan.graph}, session {plan.session}: {len(rows)} variables and constants, "
            f"{own} with their own memory; logical base {plan.logic_base}")
    totals = ", ".join(f"{k} {v}" for k, v in plan.total_size.items())
    table = format_table(["name", "kind", "key", "mem_type", "offset", "size", "logical_address",
                          "reused_from"], rows) if rows else "(no variables or constants)"
    return f"{head}\n\n{table}\n\ntotal bytes: {totals}\n"


def vars_command(graph_path: str | Graph, output: str | None = None,
                 settings: Mapping[str, str] | None = None, json_out: bool = False) -> str:
    """`streamalloc vars GRAPH [-o vars.json]`: plan the graph's variables, write the JSON.

    The plan runs in a manager pool of its own. Writes the plan JSON atomically to `output` if
    given and returns the table text to print (with `json_out`, the JSON the file holds).
    `graph_path` may be a graph already loaded; `settings` (`--set`) win over its options.
    Raises GraphLoadError / VarGraphError / OptionError (exit 3) for bad input,
    VarMemoryExhausted (exit 4) when the variables do not fit, UsageError (exit 2)
    when the output cannot be written. Nothing is written when the command fails.
    """
    loaded = graph_path if isinstance(graph_path, Graph) else load_graph(graph_path)
    graph = loaded.with_options(settings or {})
    check_options(graph, settings=settings)
    plan = variable_plan(graph, pool=plan_pool(graph))
    if output is not None:
        write_atomic(Path(output), plan_json_text(plan))
    return plan_json_text(plan) if json_out else plan_text(plan)
