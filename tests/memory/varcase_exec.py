"""Execute the `steps` of an acceptance case through the Python API (spec appendix A).

Each step's call is looked up in `CALLS` (a spec API call with its arguments converted from the
case vocabulary) or `varcase_harness.HARNESS` (the test-harness manipulations GE's tests do by
poking internals).
A step's outcome is its GE status (SUCCESS, or the status of the `VarManagerError` it raised) and
its value; `out:` names the value for later steps and expectations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.varcase_values import Definitions, parse_mem_type

from streamalloc.memory import (
    BroadcastInfo,
    EmulatedMemory,
    ExpandableAllocator,
    GeContext,
    MemType,
    RtVarInfo,
    RuntimeVarManagerPool,
    Status,
    TransStep,
    VarManager,
    VarManagerError,
    VarManagerPool,
    VarResource,
)
from streamalloc.memory.codes import GIB
from streamalloc.memory.desc import VarDesc

# Addresses the cases leave open ("X is any address that is not a registered logical address").
FREE_SYMBOLS = {"X": 0x7FFD_0000_1000, "Y": 0x7FFD_0000_2000, "P": 0xDEAD_BEE000}
_OPTION = re.compile(r'session option (\S+) = \\?"([^"\\]*)\\?"')


@dataclass
class StepResult:
    """The outcome of one step."""

    status: Status
    value: Any = None


def context_from(environment: str) -> GeContext:
    """Session options the environment text sets (`session option K = "V"`)."""
    return GeContext(session_options=dict(_OPTION.findall(environment)))


def memory_from(environment: str) -> EmulatedMemory:
    """The emulated device memory the environment describes."""
    rejected = [GIB] if "rejects physical allocations that request 1 GiB pages" in environment \
        else []
    return EmulatedMemory(rejected_page_sizes=rejected)


class CaseRun:
    """The state of one case: pools, standalone objects, symbols and step results."""

    def __init__(self, case: dict[str, Any]) -> None:
        setup = case["setup"]
        environment = setup.get("environment", "")
        self.memory = memory_from(environment)
        self.pool = VarManagerPool(context_from(environment))
        self.rt_pool = RuntimeVarManagerPool(self.pool, self.memory)
        self.standalone_managers: dict[int, VarManager] = {}
        self.standalone_resources: dict[int, VarResource] = {}
        self.symbols: dict[str, Any] = {}
        self.results: dict[str, StepResult] = {}
        self.steps: dict[str, dict[str, Any]] = {s["id"]: s for s in setup["steps"]}
        self.allocators: list[ExpandableAllocator] = []
        self.main: Any = None  # the first step target: what unqualified expressions refer to
        self.defs = Definitions(setup.get("definitions") or {}, self.symbol)

    def symbol(self, name: str) -> Any:
        """A symbol's value: produced by a step (`out:`) or one of the free addresses."""
        if name in self.symbols:
            return self.symbols[name]
        if name in FREE_SYMBOLS:
            return FREE_SYMBOLS[name]
        raise KeyError(f"unknown symbol {name!r}")

    def target(self, step: dict[str, Any]) -> Any:
        """The object a step addresses (and remember the case's main object)."""
        obj: Any = None
        if "session" in step:
            obj = self.pool.get(step["session"])
        elif "standalone_manager" in step:
            sid = step["standalone_manager"]
            obj = self.standalone_managers.setdefault(sid, VarManager(sid, self.pool))
        elif "standalone_resource" in step:
            sid = step["standalone_resource"]
            obj = self.standalone_resources.setdefault(sid, VarResource(sid, self.pool))
        if self.main is None and obj is not None:
            self.main = obj
        return obj

    def run(self, step: dict[str, Any]) -> StepResult:
        """Execute one step and record its result (and its `out` symbols)."""
        from memory.varcase_harness import HARNESS
        call = step["call"]
        handler = CALLS.get(call) or HARNESS.get(call)
        assert handler is not None, f"step {step['id']}: unsupported call {call!r}"
        try:
            result = StepResult(Status.SUCCESS, handler(self, step))
        except VarManagerError as exc:
            result = StepResult(exc.status)
        self.results[step["id"]] = result
        self._bind(step.get("out"), result)
        return result

    def _bind(self, out: Any, result: StepResult) -> None:
        if out is None or result.status != Status.SUCCESS:
            return
        if isinstance(out, list):
            self.symbols.update(zip(out, result.value, strict=True))
        else:
            self.symbols[out] = result.value

    def manager_of(self, step: dict[str, Any]) -> VarManager:
        """The manager a step addresses (for steps that need a manager, not a resource)."""
        obj = self.target(step)
        assert isinstance(obj, VarManager), step
        return obj


# ---- argument converters ----------------------------------------------------------------------

Arg = tuple[str, Callable[[CaseRun, Any], Any], Any]
_NO_DEFAULT = object()


def _raw(run: CaseRun, value: Any) -> Any:
    return value


def _num(run: CaseRun, value: Any) -> Any:
    return run.defs.number(value)


def _addr(run: CaseRun, value: Any) -> Any:
    """An address argument; `none` is GE's null pointer, 0."""
    number = run.defs.number(value)
    return 0 if number is None else number


def _desc(run: CaseRun, value: Any) -> VarDesc:
    return run.defs.desc(value)


def _op(run: CaseRun, value: Any) -> Any:
    return run.defs.op(value)


def _mem(run: CaseRun, value: Any) -> int:
    return parse_mem_type(value)


def _road(run: CaseRun, value: Any) -> list[TransStep]:
    return [TransStep(s["node_type"], run.defs.desc(s["input"]), run.defs.desc(s["output"]))
            for s in value]


def _broadcast(run: CaseRun, value: Any) -> BroadcastInfo:
    return BroadcastInfo(**value)


def _arg(key: str, convert: Callable[[CaseRun, Any], Any], default: Any = _NO_DEFAULT) -> Arg:
    return key, convert, default


def _api(method: str, *args: Arg) -> Callable[[CaseRun, dict[str, Any]], Any]:
    """A step that calls `target.<method>(*converted args)`."""
    def call(run: CaseRun, step: dict[str, Any]) -> Any:
        values = []
        for key, convert, default in args:
            if key not in step:
                assert default is not _NO_DEFAULT, f"step {step['id']} lacks {key!r}"
                values.append(default)
            else:
                values.append(convert(run, step[key]))
        return getattr(run.target(step), method)(*values)
    return call


_NAME, _DESC, _OPA, _MEM = (_arg("name", _raw), _arg("desc", _desc), _arg("op", _op),
                            _arg("mem_type", _mem))
_DEVICE, _LOGIC, _GRAPH = (_arg("device_id", _num, 0), _arg("logic_addr", _num),
                           _arg("graph_id", _num))
_REGISTER = (_NAME, _DESC, _arg("address", _addr), _MEM, _OPA)


def _get_var_addr(run: CaseRun, step: dict[str, Any]) -> int:
    # `output_slot: none` (GE's null out-pointer) has no Python counterpart; the unknown key
    # fails the same way (FAILED at resource level).
    address, _ = run.target(step).get_var_addr(step["name"], run.defs.desc(step["desc"]))
    return int(address)


def _renew(run: CaseRun, step: dict[str, Any]) -> None:
    source = run.defs.op(step["op"]) if "op" in step else run.defs.desc(step["desc"])
    run.target(step).renew_cur_var_desc(step["name"], source)


def _session_id(run: CaseRun, step: dict[str, Any]) -> int:
    return int(run.target(step).session_id)


def _set_mem_manager(run: CaseRun, step: dict[str, Any]) -> None:
    run.manager_of(step).set_mem_manager(run.memory)


def _deserialize(run: CaseRun, step: dict[str, Any]) -> None:
    run.manager_of(step).deserialize(run.symbol(step["info"]))


_ALLOCATOR = re.compile(r"session (\d+), device (\d+), (\w+), page size (\d+)")


def _init_allocator(run: CaseRun, step: dict[str, Any]) -> ExpandableAllocator:
    match = _ALLOCATOR.search(step["allocator"])
    assert match, step["allocator"]
    allocator = ExpandableAllocator(run.memory, int(match[1]), int(match[2]), MemType[match[3]],
                                    int(match[4]))
    run.allocators.append(allocator)
    run.manager_of(step).init_expandable_memory_allocator(allocator)
    return allocator


def _rt_init(run: CaseRun, step: dict[str, Any]) -> None:
    run.rt_pool.get(step["session"]).init(
        step["device_id"], _num(run, step["logic_base"]), step["total_var_size"],
        _num(run, step["external_addr"]), step["external_size"])


def _rt_restore(run: CaseRun, step: dict[str, Any]) -> None:
    ops = [run.defs.op(name) for name in run.defs.names(step["nodes"])]
    run.rt_pool.get(step["session"]).restore_device_variables(
        [op for op in ops if op is not None], step["graph_id"], step["device_id"])


def _rt_query(run: CaseRun, step: dict[str, Any]) -> RtVarInfo:
    return run.rt_pool.get(step["session"]).get_var_shape_and_memory(step["name"])


CALLS: dict[str, Callable[[CaseRun, dict[str, Any]], Any]] = {
    "init": _api("init", _arg("version", _num), _arg("session_id", _num), _arg("device_id", _num),
                 _arg("job_id", _num)),
    "set_mem_manager": _set_mem_manager,
    "set_memory_malloc_size": _api("set_memory_malloc_size", _arg("options", _raw),
                                   _arg("total_mem_size", _num)),
    "set_all_memory_max_value": _api("set_all_memory_max_value", _arg("options", _raw)),
    "init_expandable_memory_allocator": _init_allocator,
    "assign_var_mem": _api("assign_var_mem", _NAME, _OPA, _DESC, _MEM),
    "restore_var_mem": _api("restore_var_mem", _NAME, _OPA, _DESC, _MEM),
    "get_var_addr": _get_var_addr,
    "save_var_addr": _api("save_var_addr", *_REGISTER),
    "set_var_addr": _api("set_var_addr", *_REGISTER),
    "get_reuse_addr": _api("get_reuse_addr", _OPA),
    "size_by_output_dtype": _api("size_by_output_dtype", _OPA),
    "get_var_memory_addr": _api("get_var_memory_addr", _LOGIC, _MEM, _DEVICE,
                                _arg("graph_name", _raw, "")),
    "free_var_memory": _api("free_var_memory"),
    "set_external_var": _api("set_external_var", _arg("addr", _num), _arg("size", _num)),
    "get_var_mem_size": _api("get_var_mem_size", _MEM),
    "get_var_mem_max_size": _api("get_var_mem_max_size", _arg("for_check", _raw, False)),
    "get_graph_memory_max_size": _api("get_graph_memory_max_size",
                                      _arg("for_check", _raw, False)),
    "update_dev_var_mgr_info": _api("update_dev_var_mgr_info", _DEVICE),
    "get_var_mgr_info": _api("get_var_mgr_info", _DEVICE, _LOGIC),
    "set_var_mgr_dev_addr": _api("set_var_mgr_dev_addr", _DEVICE, _LOGIC,
                                 _arg("dev_addr", _num)),
    "check_logic_addr_valid": _api("check_logic_addr_valid", _DEVICE, _LOGIC),
    "serialize": _api("serialize"),
    "deserialize": _deserialize,
    "var_desc_info_to_serial": _api("var_desc_info_to_serial"),
    "set_trans_road": _api("set_trans_road", _NAME, _arg("road", _road)),
    "get_trans_road": _api("get_trans_road", _NAME),
    "set_batch_variables_key_name": _api("set_batch_variables_key_name",
                                         _arg("batch_name", _raw), _arg("key_name", _raw)),
    "has_shared_var_mem_between_batch": _api("has_shared_var_mem_between_batch"),
    "save_broadcast_info": _api("save_broadcast_info", _GRAPH, _arg("info", _broadcast)),
    "check_and_set_var_loaded": _api("check_and_set_var_loaded", _OPA, _DEVICE),
    "set_var_is_ready": _api("set_var_is_ready", _NAME, _DESC, _DEVICE),
    "is_var_ready": _api("is_var_ready", _NAME, _DESC, _DEVICE),
    "is_var_exist": _api("is_var_exist", _NAME, _DESC),
    "renew_cur_var_desc": _renew,
    "get_cur_var_desc": _api("get_cur_var_desc", _NAME),
    "record_staged_var_desc": _api("record_staged_var_desc", _GRAPH, _NAME, _DESC),
    "get_staged_var_descs": _api("get_staged_var_descs", _GRAPH),
    "get_changed_var_names": _api("get_changed_var_names", _GRAPH),
    "get_var_mem_type": _api("get_var_mem_type", _LOGIC),
    "set_changed_graph_id": _api("set_changed_graph_id", _NAME, _GRAPH),
    "get_changed_graph_id": _api("get_changed_graph_id", _NAME),
    "remove_changed_graph_id": _api("remove_changed_graph_id", _NAME),
    "set_allocated_graph_id": _api("set_allocated_graph_id", _NAME, _GRAPH),
    "get_allocated_graph_id": _api("get_allocated_graph_id", _NAME),
    "get_all_variables": _api("get_all_variables"),
    "get_rdma_pool_memory": _api("get_rdma_pool_memory", _MEM, _arg("size", _num)),
    "session_id": _session_id,
    "destroy": _api("destroy"),
    "rt.init": _rt_init,
    "rt.restore_device_variables": _rt_restore,
    "rt.get_var_shape_and_memory": _rt_query,
    "rt_pool.size": lambda run, step: run.rt_pool.size(),
    "rt_pool.remove": lambda run, step: run.rt_pool.remove(step["session"]),
}
