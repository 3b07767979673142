"""Evaluate and check the `expect` (and `derived`) entries of an acceptance case.

`{at, status}`, `{at, returns}`, `{at, effect}` look at a step result. `{value, equals}` and
`{value, is}` evaluate an expression written in the case vocabulary: first a table of phrases
("size of X", "X keys", "manager(2) HBM var_mem_size", "const1: key / offset / logical", ...),
then arithmetic over symbols, definitions, `manager(N)`, and the fields and tables of the case's
main object. A trailing "before sN" / "after sN" / "at sN" says when to evaluate it.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.message import Message
from memory.varcase_exec import CaseRun
from memory.varcase_values import Evaluator

from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory import MemType, Status, VarDesc, VarManager, VarResource
from streamalloc.memory.codes import FRONT_GUARD, dtype_code, format_code

WHEN = re.compile(r"^(.*?)\s+\(?(before|after|at) (s\d+)\)?$")
ENTRY = re.compile(r"^(\w+):? (key / offset / logical|key / logical|offset / logical|logical)"
                   r"(?: \(.*\))?$")
Phrase = Callable[[CaseRun, re.Match[str]], Any]


def when(text: str) -> tuple[str, str | None, str | None]:
    """(expression, "before"/"after" or None, step id or None)."""
    match = WHEN.match(text)
    if match is None:
        return text, None, None
    return match[1], "before" if match[2] == "before" else "after", match[3]


def _manager(run: CaseRun) -> VarManager:
    main = run.main
    assert isinstance(main, VarManager), "this expression needs a manager as the main target"
    return main


def _resource(run: CaseRun) -> VarResource:
    main = run.main
    return main if isinstance(main, VarResource) else _manager(run).require_resource()


def _names(run: CaseRun) -> Callable[[str], Any]:
    """Name lookup: symbols, definitions, manager(N), memory types, main object's fields."""
    def lookup(name: str) -> Any:
        if name in run.symbols:
            return run.symbols[name]
        if name in run.defs.raw:
            return run.defs.desc(name)
        if name == "manager":
            return run.pool.get
        if name in MemType.__members__:
            return MemType[name]
        for obj in (run.main, getattr(run.main, "resource", None)):
            if obj is not None and hasattr(obj, name):
                return getattr(obj, name)
        return run.symbol(name)
    return lookup


def _entry_fields(run: CaseRun, match: re.Match[str]) -> Any:
    """`NAME: key / offset / logical` and its shorter forms, for the name's current desc."""
    resource = _resource(run)
    key = resource.key(match[1], resource.get_cur_var_desc(match[1]))
    entry = resource.addr_by_key[key]
    values = {"key": key, "offset": entry.offset, "logical": entry.address}
    fields = match[2].split(" / ")
    return [values[f] for f in fields] if len(fields) > 1 else values[fields[0]]


def _step_entry(run: CaseRun, match: re.Match[str]) -> list[int]:
    """`sN offset / logical address`: where the variable assigned at step sN went."""
    step = run.steps[match[1]]
    resource = run.pool.get(step["session"]).require_resource()
    entry = resource.addr_by_key[resource.key(step["name"], run.defs.desc(step["desc"]))]
    return [entry.offset, entry.address]


def _logical_offset(run: CaseRun, match: re.Match[str]) -> int:
    """`sN logical offset ...`: output offset 0 of the step's op minus the manager's base."""
    step = run.steps[match[1]]
    op = run.defs.op(step["op"])
    assert op is not None
    return op.output_offsets[0] - run.pool.get(step["session"]).var_mem_logic_base


def _is_var_exist(run: CaseRun, match: re.Match[str]) -> bool:
    import yaml
    target = Evaluator(_names(run)).eval(match[1])
    return bool(target.is_var_exist(match[2], run.defs.desc(yaml.safe_load(match[3]))))


def _floats(run: CaseRun, match: re.Match[str]) -> list[float]:
    count = int(match[1])
    data = run.memory.read(run.symbol(match[2]), 4 * count)
    return list(struct.unpack(f"<{count}f", data))


def _rt_manager(run: CaseRun) -> Any:
    (session,) = {s["session"] for s in run.steps.values() if s["call"].startswith("rt.")}
    return run.rt_pool.get(session)


def _each_var(run: CaseRun, check: Callable[[VarManager, str, VarDesc, int], bool],
              low: int = 0) -> bool:
    """True when `check(manager, name, desc, i)` holds for every var<i> of the case."""
    manager = _rt_manager(run).manager
    names = [n for n in run.defs.raw if re.fullmatch(r"var\d+", n)]
    for name in names:
        i = int(name[3:])
        op = run.defs.op(name)
        assert op is not None
        if i >= low and not check(manager, name, op.outputs[0], i):
            return False
    return True


def _var_logical(run: CaseRun, match: re.Match[str]) -> bool:
    return _each_var(run, lambda m, n, d, i: m.get_var_addr(n, d)[0] == 2048 * i)


def _var_graph_id(run: CaseRun, match: re.Match[str]) -> int:
    """The allocated graph id all var<i> share."""
    manager = _rt_manager(run).manager
    (graph_id,) = {manager.get_allocated_graph_id(n) for n in run.defs.raw
                   if re.fullmatch(r"var\d+", n)}
    return graph_id


def _var_collected(run: CaseRun, match: re.Match[str]) -> bool:
    rt, base = _rt_manager(run), run.symbol("E")
    return _each_var(run, lambda m, n, d, i: rt.collected[n].addr == base + 2048 * i, low=1)


def _restore_bound(run: CaseRun, match: re.Match[str]) -> bool:
    return 18432 + 64 == 18496 <= _rt_manager(run).manager.var_mem_max_size


def _allocated_block(run: CaseRun, match: re.Match[str]) -> int:
    """"allocated block + 512": the device address recorded for the one allocated variable."""
    rows = [r for table in _resource(run).dev_info_by_device.values() for r in table.values()
            if r.device is not None]
    assert len(rows) == 1, rows
    assert rows[0].device is not None
    return rows[0].device + FRONT_GUARD


def _keys(value: Any) -> list[Any]:
    """Keys of a map, or of the one map field a message holds (BroadcastMultiInfo)."""
    if isinstance(value, Message):
        fields = [f.name for f, _ in value.ListFields()]
        value = getattr(value, fields[0]) if fields else {}
    return sorted(value.keys())


def _length(value: Any) -> int:
    """Length of a list, or of a road message's steps."""
    return len(value.node_info) if isinstance(value, pb.TransNodeMultiInfo) else len(value)


def _current_desc(run: CaseRun, match: re.Match[str]) -> VarDesc:
    (desc,) = _resource(run).cur_desc_by_name.values()
    return desc


PHRASES: list[tuple[re.Pattern[str], Phrase]] = [
    (re.compile(r"^allocator created$"), lambda run, m: run.allocators[-1]),
    (re.compile(r"^size of (.+)$"), lambda run, m: len(evaluate(run, m[1]))),
    (re.compile(r"^number of memory resources in (.+)$"),
     lambda run, m: sum(r is not None for r in evaluate(run, m[1]).mem_resources.values())),
    (re.compile(r"^(manager\(\d+\)) (\w+) var_mem_size$"),
     lambda run, m: evaluate(run, m[1]).mem_resources[MemType[m[2]]].var_mem_size),
    (re.compile(r"^(HBM|RDMA_HBM|HOST) (var_mem_size|const_placeholder_size)$"),
     lambda run, m: getattr(_manager(run).mem_resources[MemType[m[1]]], m[2])),
    (re.compile(r"^(.+)\.is_var_exist\((\w+), (\{.*\})\)$"), _is_var_exist),
    (re.compile(r"^(s\d+) road\[(\d+)\]\.(\w+)$"),
     lambda run, m: getattr(run.results[m[1]].value[int(m[2])], m[3])),
    (re.compile(r"^(s\d+) offset / logical address$"), _step_entry),
    (re.compile(r"^(s\d+) logical offset .*$"), _logical_offset),
    (re.compile(r"^(s\d+) memory size / placement$"),
     lambda run, m: [run.results[m[1]].value.size, run.results[m[1]].value.placement]),
    (re.compile(r"^(\d+) float32 values read at (\w+)$"), _floats),
    (re.compile(r"^(.+) keys$"), lambda run, m: _keys(evaluate(run, m[1]))),
    (re.compile(r"^(.+) length$"), lambda run, m: _length(evaluate(run, m[1]))),
    (ENTRY, _entry_fields),
    (re.compile(r"^keys$"), lambda run, m: {k: e.address
                                            for k, e in _resource(run).addr_by_key.items()}),
    (re.compile(r"^current descriptor$"), _current_desc),
    (re.compile(r"^logic base$"), lambda run, m: _manager(run).var_mem_logic_base),
    (re.compile(r"^bytes allocated$"), lambda run, m: _manager(run).malloc_total),
    (re.compile(r"^graph statistics for '(\w+)' \(alloc_size, shared_size\)$"),
     lambda run, m: [_manager(run).graph_stats[m[1]].alloc_size,
                     _manager(run).graph_stats[m[1]].shared_size]),
    (re.compile(r"^has_shared_var_mem_between_batch\(session (\d+)\)$"),
     lambda run, m: run.pool.get(int(m[1])).has_shared_var_mem_between_batch()),
    (re.compile(r"^use_max_mem_size computed$"), lambda run, m: _manager(run).use_max_mem_size),
    (re.compile(r"^logical address of var<i>$"), _var_logical),
    (re.compile(r"^restore bound check for var9$"), _restore_bound),
    (re.compile(r"^allocated graph id of each var$"), _var_graph_id),
    (re.compile(r"^collected address of var<i> \(i = 1\.\.9\) from a fresh state$"),
     _var_collected),
    (re.compile(r"^allocated block \+ 512$"), _allocated_block),
]

# `equals` texts that state a fact about every var<i> rather than a value.
FACTS = {"2048*i (var0 at 0)", "18432 + 64 = 18496 <= var_mem_max_size", "E + 2048*i"}


def evaluate(run: CaseRun, text: str) -> Any:
    """The value of an expression in the case vocabulary (see the module docstring)."""
    for pattern, phrase in PHRASES:
        match = pattern.match(text)
        if match:
            return phrase(run, match)
    return Evaluator(_names(run)).eval(text)


def expected_value(run: CaseRun, expected: Any) -> Any:
    """An `equals` operand: strings are expressions (`manager(1).x`, `L1`, `desc_nd`) or, when
    they are not, literal text (`TransData`)."""
    if not isinstance(expected, str):
        return expected
    if expected in FACTS:
        return True
    try:
        return evaluate(run, expected)
    except (KeyError, SyntaxError):
        return expected


def matches(actual: Any, expected: Any) -> bool:
    """Structural comparison of an API value with a case value."""
    if isinstance(actual, VarDesc) and isinstance(expected, Mapping):
        return actual.shape == tuple(expected.get("shape", ())) and \
            actual.format == format_code(expected.get("format")) and \
            actual.dtype == dtype_code(expected.get("dtype"))
    if isinstance(expected, Mapping):
        return _matches_mapping(actual, expected)
    if isinstance(expected, list):
        items = list(actual)
        return len(items) == len(expected) and all(
            matches(a, e) for a, e in zip(items, expected, strict=True))
    return bool(actual == expected)


def _matches_mapping(actual: Any, expected: Mapping[Any, Any]) -> bool:
    if isinstance(actual, Message) and not hasattr(actual, "keys"):
        return all(matches(getattr(actual, k), v) for k, v in expected.items())
    keys = set(actual.keys())
    return keys == set(expected) and all(matches(actual[k], v) for k, v in expected.items())


def check_value(run: CaseRun, item: Mapping[str, Any]) -> None:
    """Assert one `{value, equals | is}` entry."""
    expression, _, _ = when(item["value"])
    actual = evaluate(run, expression)
    if "is" in item:
        assert item["is"] == "not_none", item
        assert actual is not None, f"{item['value']!r} is none"
        return
    expected = expected_value(run, item["equals"])
    assert matches(actual, expected), f"{item['value']!r}: {actual!r} != {expected!r}"


def check_step(run: CaseRun, item: Mapping[str, Any]) -> None:
    """Assert one `{at, status | returns | effect}` entry."""
    result = run.results[item["at"]]
    where = f"step {item['at']}"
    if "status" in item:
        want = item["status"]
        if want == "not SUCCESS":
            assert result.status != Status.SUCCESS, f"{where}: expected a failure"
        else:
            assert result.status == Status(want), f"{where}: {result.status} != {want}"
    if "returns" in item:
        assert result.status == Status.SUCCESS, f"{where} failed with {result.status}"
        assert _returns(run, result.value, item["returns"]), \
            f"{where} returned {result.value!r}, expected {item['returns']!r}"
    if "effect" in item:
        assert result.status == Status.SUCCESS, f"{where}: {item['effect']}"


def _returns(run: CaseRun, value: Any, expected: Any) -> bool:
    if expected == "none":
        return value is None
    if expected == "not_none":
        return value is not None
    if expected in ("empty map", "empty set"):
        return len(value) == 0
    if isinstance(expected, bool):
        return value is expected
    if isinstance(expected, str):
        return bool(value == run.symbol(expected))
    return bool(value == expected)
