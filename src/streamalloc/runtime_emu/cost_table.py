"""The cost table: device parameters, engine units and per-op formulas, read from YAML.

The default table ships as package data (`costs.yaml`, a typical Ascend 910); `--cost FILE`
replaces it with another file of the same schema. Every mistake is an `InputError` naming
`file:line`, the field, what was expected and what was found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
import yaml

from streamalloc.errors import InputError
from streamalloc.ir.loaders.located import line_of, load_located, yaml_error

NUMBER_MAX = 1e15  # a finite bound on every number of a table (bytes, us, units): NaN,
# infinities and 1e300 pass `>= 0` and broke the emulator's trace and the solver's integers
COSTS_FORMAT = "streamalloc.costs/v1"
# formula -> the parameters it accepts (with defaults)
FORMULAS: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "conv": {}, "matmul": {}, "bytes": {},
    "collective": {"factor": 1.0, "latency_us": 0.0},
    "fixed": {"us": 0.0},
})
DEVICE_TIMES = ("launch_us", "event_record_us", "event_wait_us", "notify_record_us",
                "notify_wait_us")
ENGINE_KEYS = ("units", "flops_per_s", "bytes_per_s", "fallback_us")
OPTIONAL_ENGINE_KEYS = ("min_core_us",)
TOP_KEYS = ("format", "device", "engines", "default_engine", "ops", "default_formula")


class EngineParams(msgspec.Struct, frozen=True):
    """One engine: units and per-unit throughput, bandwidth, fallback time.

    `min_core_us` is the least work per unit worth splitting a kernel for: a task takes
    `ceil(work on one unit / min_core_us)` units (its block dim), at most `units`. None: every
    task takes one unit (engines whose tasks run on one core, link or queue).
    """

    units: int
    flops_per_s: float
    bytes_per_s: float
    fallback_us: float
    min_core_us: float | None = None


class OpFormula(msgspec.Struct, frozen=True):
    """How an op type's execution time is computed (see `cost_model`); `block_dim`, when set,
    is the op's block dim (else the node's attribute or the engine's `min_core_us` decide)."""

    formula: str
    factor: float = 1.0
    latency_us: float = 0.0
    us: float = 0.0
    block_dim: int | None = None


class CostTable(msgspec.Struct, frozen=True):
    """The whole table. `engine(name)` falls back to `default_engine` for unlisted engines."""

    source: str
    device_name: str
    launch_us: float
    event_record_us: float
    event_wait_us: float
    notify_record_us: float
    notify_wait_us: float
    memory: Mapping[str, int]
    engines: Mapping[str, EngineParams]
    default_engine: EngineParams
    ops: Mapping[str, OpFormula]
    default_formula: OpFormula

    def engine(self, name: str) -> EngineParams:
        """The parameters of engine `name`."""
        return self.engines.get(name, self.default_engine)

    def formula(self, op_type: str) -> OpFormula:
        """The formula of an op type."""
        return self.ops.get(op_type, self.default_formula)


class _Reader:
    """Typed field access with `file:line: field: expected ..., found ...` errors."""

    def __init__(self, source: str, document: Any) -> None:
        self.source, self.document = source, document

    def fail(self, path: Sequence[Any], expected: str, found: Any) -> InputError:
        line = line_of(self.document, path)
        where = f"{self.source}:{line}" if line else self.source
        field = ".".join(str(p) for p in path) or "document"
        return InputError(f"{where}: {field}: expected {expected}, found {found!r}; see the "
                          "shipped table streamalloc/runtime_emu/costs.yaml for the schema")

    def mapping(self, value: Any, path: Sequence[Any], allowed: Sequence[str] | None = None
                ) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, "a mapping", value)
        for key in value:
            if allowed is not None and key not in allowed:
                raise self.fail([*path, key], "one of the keys " + ", ".join(allowed), key)
        return value

    def number(self, value: Any, path: Sequence[Any], *, positive: bool = False) -> float:
        ok = isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and value <= NUMBER_MAX
        if not ok or value < 0 or (positive and value == 0):
            expected = ("a number > 0" if positive else "a number >= 0") + \
                f", at most {NUMBER_MAX:g}"
            if isinstance(value, str) and _looks_numeric(value):
                expected += " (YAML reads 8.0e12 as text: write 8.0e+12)"
            raise self.fail(path, expected, value)
        return float(value)

    def count(self, value: Any, path: Sequence[Any]) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(path, "an integer >= 1", value)
        return value


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@cache
def default_cost_table() -> CostTable:
    """The shipped table (a typical Ascend 910), loaded once."""
    text = resources.files("streamalloc.runtime_emu").joinpath("costs.yaml").read_text("utf-8")
    return parse_cost_table(text, "costs.yaml (default)")


def load_cost_table(path: str | Path) -> CostTable:
    """Read a cost table file (InputError with file:line on any mistake)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read the cost table: {reason}") from None
    return parse_cost_table(text, str(path))


def parse_cost_table(text: str, source: str) -> CostTable:
    """Parse and check the YAML text of a cost table."""
    try:
        document = load_located(text)
    except yaml.YAMLError as exc:
        raise InputError(yaml_error(exc, text, source)) from None
    read = _Reader(source, document)
    top = read.mapping(document, [], TOP_KEYS)
    if top.get("format") != COSTS_FORMAT:
        raise read.fail(["format"], repr(COSTS_FORMAT), top.get("format"))
    device = read.mapping(top.get("device", {}), ["device"], ("name", "memory", *DEVICE_TIMES))
    times = {k: read.number(device.get(k, 0.0), ["device", k]) for k in DEVICE_TIMES}
    engines = read.mapping(top.get("engines", {}), ["engines"])
    if "default_engine" not in top:
        raise read.fail(["default_engine"], "the parameters of unlisted engines", None)
    return CostTable(
        source=source, device_name=str(device.get("name", "")), **times,
        memory=_memory(read, device.get("memory", {})),
        engines=MappingProxyType({name: _engine(read, row, ["engines", name])
                                  for name, row in engines.items()}),
        default_engine=_engine(read, top["default_engine"], ["default_engine"]),
        ops=MappingProxyType({op: _formula(read, f, ["ops", op])
                              for op, f in read.mapping(top.get("ops", {}), ["ops"]).items()}),
        default_formula=_formula(read, top.get("default_formula", "bytes"), ["default_formula"]))


def _memory(read: _Reader, raw: Any) -> Mapping[str, int]:
    memory = read.mapping(raw, ["device", "memory"])
    return MappingProxyType({k: int(read.number(v, ["device", "memory", k]))
                             for k, v in memory.items()})


def _engine(read: _Reader, raw: Any, path: list[Any]) -> EngineParams:
    row = read.mapping(raw, path, (*ENGINE_KEYS, *OPTIONAL_ENGINE_KEYS))
    missing = [k for k in ENGINE_KEYS if k not in row]
    if missing:
        raise read.fail(path, "the keys " + ", ".join(ENGINE_KEYS), f"no {missing[0]}")
    min_core = row.get("min_core_us")
    return EngineParams(units=read.count(row["units"], [*path, "units"]),
                        flops_per_s=read.number(row["flops_per_s"], [*path, "flops_per_s"]),
                        bytes_per_s=read.number(row["bytes_per_s"], [*path, "bytes_per_s"],
                                                positive=True),
                        fallback_us=read.number(row["fallback_us"], [*path, "fallback_us"]),
                        min_core_us=None if min_core is None else
                        read.number(min_core, [*path, "min_core_us"], positive=True))


def _formula(read: _Reader, raw: Any, path: list[Any]) -> OpFormula:
    if isinstance(raw, str):
        raw = {"formula": raw}
    row = read.mapping(raw, path)
    name = row.get("formula")
    if not isinstance(name, str) or name not in FORMULAS:
        raise read.fail([*path, "formula"], "one of " + ", ".join(FORMULAS), name)
    params = dict(FORMULAS[name])
    for key, value in row.items():
        if key in ("formula", "block_dim"):
            continue
        if key not in params:
            allowed = ", ".join(params) or "no parameters"
            raise read.fail([*path, key], f"a parameter of {name} ({allowed}) or block_dim",
                            key)
        params[key] = read.number(value, [*path, key])
    block_dim = row.get("block_dim")
    return OpFormula(formula=name, **params, block_dim=None if block_dim is None else
                     read.count(block_dim, [*path, "block_dim"]))
