"""The emulated device: run a plan on a discrete-event model of an Ascend-like runtime.

>>> from streamalloc.ir import GraphBuilder, DataInput
>>> from streamalloc.runtime_emu import emulate
>>> b = GraphBuilder("tiny")
>>> b.add_node("x", "Data")
>>> b.add_node("a", "Relu", inputs=[DataInput("x")], cost_us=10)
>>> b.add_node("b", "Relu", inputs=[DataInput("a")], cost_us=5)
>>> plan = {"format": "streamalloc.plan/v1", "graph": "tiny", "streams": {"0": ["a", "b"]}}
>>> result = emulate(b.build(), plan)
>>> result.status, result.makespan_us   # 2 x (2 us launch) + 10 + 5
('ok', 19.0)

Modules: `kernel` (the discrete-event core), `plan` (plan files), `cost_table` / `cost_model`
(the YAML cost table and op formulas), `node_tasks` (a node's engine, time and block dim),
`program` (graph + plan -> task lists), `emulator` (the device and its stream processes),
`streams` (V2 pool, V1 registry), `memory` (variables hook), `bounds`, `results`, `report`,
`trace`, `gantt`. The `emulate` command, which allocates
and verifies a plan when none is given, composes layers and lives in
`streamalloc.commands.emulate`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamalloc.runtime_emu.cost_table import (
        CostTable,
        default_cost_table,
        load_cost_table,
        parse_cost_table,
    )
    from streamalloc.runtime_emu.critical_chain import ChainSummary, chain_spans, chain_summary
    from streamalloc.runtime_emu.emulator import emulate
    from streamalloc.runtime_emu.memory import DeviceMemory, VariableLoader
    from streamalloc.runtime_emu.plan import Plan, load_plan, plan_from_dict
    from streamalloc.runtime_emu.report import report_dict, report_json, report_text
    from streamalloc.runtime_emu.results import EmulationResult
    from streamalloc.runtime_emu.streams import DeviceStreams, StreamPool, StreamRegistry
    from streamalloc.runtime_emu.trace import trace_dict, trace_json

# Name -> its module. Exported lazily (PEP 562): the allocator reads the cost table without
# importing the emulator (a tenth of a second of every `allocate`).
_EXPORTS = {
    "CostTable": "cost_table", "default_cost_table": "cost_table",
    "load_cost_table": "cost_table", "parse_cost_table": "cost_table", "emulate": "emulator",
    "ChainSummary": "critical_chain", "chain_spans": "critical_chain",
    "chain_summary": "critical_chain",
    "DeviceMemory": "memory", "VariableLoader": "memory", "Plan": "plan", "load_plan": "plan",
    "plan_from_dict": "plan", "report_dict": "report", "report_json": "report",
    "report_text": "report", "EmulationResult": "results", "DeviceStreams": "streams",
    "StreamPool": "streams", "StreamRegistry": "streams", "trace_dict": "trace",
    "trace_json": "trace",
}
__all__ = [
    "ChainSummary", "CostTable", "DeviceMemory", "DeviceStreams", "EmulationResult", "Plan",
    "StreamPool", "StreamRegistry", "VariableLoader", "chain_spans", "chain_summary",
    "default_cost_table", "emulate",
    "load_cost_table", "load_plan", "parse_cost_table", "plan_from_dict", "report_dict",
    "report_json", "report_text", "trace_dict", "trace_json",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
