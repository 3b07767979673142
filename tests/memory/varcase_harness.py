"""The test-harness manipulations of the acceptance cases (spec appendix A).

GE's unit tests poke internals: drop a manager's resource, clear a table, install a device table
or a memory resource, overwrite limits or output offsets, edit a serialized message. The
re-implementation keeps those hooks here, in the tests, not in its public API: the tables and
fields they touch are public attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.varcase_exec import CaseRun, _num
from memory.varcase_values import is_none, parse_mem_type

from streamalloc.memory import MemType, RtVarInfo
from streamalloc.memory.assignment import new_mem_resource
from streamalloc.memory.tables import DevVarInfo


def _drop_resource(run: CaseRun, step: dict[str, Any]) -> None:
    run.manager_of(step).resource = None


def _clear_table(run: CaseRun, step: dict[str, Any]) -> None:
    resource = run.manager_of(step).require_resource()
    getattr(resource, step["table"]).clear()


def _set_device_table(run: CaseRun, step: dict[str, Any]) -> None:
    resource = run.target(step)
    table = {}
    for logical, row in step["entries"].items():
        table[int(logical)] = DevVarInfo(run.defs.desc(row["desc"]), row["logic_addr"],
                                         _num(run, row["dev_addr"]), row["is_external"])
    resource.dev_info_by_device[step["device_id"]] = table


def _set_memory_resource(run: CaseRun, step: dict[str, Any]) -> None:
    mem_type = parse_mem_type(step["mem_type"])
    given = step["resource"]
    run.manager_of(step).mem_resources[mem_type] = None if is_none(given) else \
        new_mem_resource(mem_type)


def _set_limits(run: CaseRun, step: dict[str, Any]) -> None:
    manager = run.manager_of(step)
    manager.graph_mem_max_size = step["graph_mem_max_size"]
    manager.var_mem_max_size = step["var_mem_max_size"]


def _set_output_offsets(run: CaseRun, step: dict[str, Any]) -> None:
    op = run.defs.op(step["op"])
    assert op is not None
    run.defs.ops[step["op"]] = op.with_output_offsets(tuple(_num(run, o)
                                                            for o in step["offsets"]))


def _read(run: CaseRun, step: dict[str, Any]) -> Any:
    from memory.varcase_expect import evaluate
    return evaluate(run, step["value"])


def _edit(run: CaseRun, step: dict[str, Any]) -> None:
    head, _, field = step["target"].rpartition(".")
    setattr(run.symbol(head), field, step["value"])


def _allocate_device_buffer(run: CaseRun, step: dict[str, Any]) -> int | None:
    return run.memory.malloc(MemType.HBM, _num(run, step["size"]))


def _set_graph_options(run: CaseRun, step: dict[str, Any]) -> None:
    run.pool.context.set_graph_options(step["options"])


def _preset_collected(run: CaseRun, step: dict[str, Any]) -> None:
    info = step["info"]
    run.rt_pool.get(step["session"]).collected[step["name"]] = RtVarInfo(
        _num(run, info["addr"]), info["size"], placement=info["placement"])


def _clear_collected(run: CaseRun, step: dict[str, Any]) -> None:
    run.rt_pool.get(step["session"]).collected.clear()


HARNESS: dict[str, Callable[[CaseRun, dict[str, Any]], Any]] = {
    "drop_resource": _drop_resource,
    "clear_table": _clear_table,
    "set_device_table": _set_device_table,
    "set_memory_resource": _set_memory_resource,
    "set_limits": _set_limits,
    "set_output_offsets": _set_output_offsets,
    "read": _read,
    "edit": _edit,
    "allocate_device_buffer": _allocate_device_buffer,
    "set_graph_options": _set_graph_options,
    "rt.preset_collected": _preset_collected,
    "rt.clear_collected": _clear_collected,
}
