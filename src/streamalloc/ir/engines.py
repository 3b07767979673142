"""The engine table: GE's engines with their flags, and which engine runs each op type.

The default table ships as package data (`engines.yaml`); graph files add to or override it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import msgspec
import yaml
from msgspec.structs import replace

from streamalloc.facts import YAML_LOADER

ENGINE_FIELDS = ("name", "independent", "attach", "skip_assign_stream", "scheduler_id",
                 "compute_cost", "default_task_count")


class Engine(msgspec.Struct, frozen=True):
    """One engine row: GE's flags (1.3), its scheduler, compute cost (lower wins) and task count.

    `compute_cost` None: the engine has no registered cost (a row in a graph file without one);
    GE then ranks no candidate at all (spec 2.4.2) and rejects it in dynamic renumbering (4.4).
    """

    name: str
    independent: bool = False
    attach: bool = False
    skip_assign_stream: bool = False
    scheduler_id: str = "TS_1"
    compute_cost: int | None = None
    default_task_count: int = 1

    def to_plain(self) -> dict[str, Any]:
        """The row as written in a graph or engine file."""
        return {f: getattr(self, f) for f in ENGINE_FIELDS if getattr(self, f) is not None}


class EngineTable(msgspec.Struct, frozen=True):
    """Engines by name, the op-type map and the engine of unmapped op types."""

    engines: Mapping[str, Engine]
    op_engines: Mapping[str, str]
    default_engine: str

    def engine_for(self, op_type: str) -> str:
        """The engine an op type runs on when the node does not say."""
        return self.op_engines.get(op_type, self.default_engine)

    def get(self, name: str) -> Engine | None:
        """The engine called `name`, or None."""
        return self.engines.get(name)

    def extended(self, engines: Iterable[Engine] = (), op_engines: Mapping[str, str] | None = None
                 ) -> EngineTable:
        """A new table with `engines` added or replaced and `op_engines` entries added."""
        rows = dict(self.engines)
        rows.update((e.name, e) for e in engines)
        mapping = dict(self.op_engines)
        mapping.update(op_engines or {})
        return replace(self, engines=MappingProxyType(rows), op_engines=MappingProxyType(mapping))

    def changes_from(self, base: EngineTable) -> tuple[list[Engine], dict[str, str]]:
        """Engine rows and op mappings that differ from `base` (what a graph file must carry)."""
        rows = [e for n, e in self.engines.items() if base.engines.get(n) != e]
        mapping = {t: e for t, e in self.op_engines.items() if base.op_engines.get(t) != e}
        return rows, mapping


def engine_from_plain(row: Mapping[str, Any]) -> Engine:
    """An Engine from its plain form; unknown keys are the caller's to reject (schema)."""
    return Engine(**{k: row[k] for k in ENGINE_FIELDS if k in row})


@cache
def default_engine_table() -> EngineTable:
    """GE's default engine table, loaded once from the package data."""
    text = resources.files("streamalloc.ir").joinpath("engines.yaml").read_text("utf-8")
    data = yaml.load(text, Loader=YAML_LOADER)
    engines = {row["name"]: engine_from_plain(row) for row in data["engines"]}
    mapping = {op: engine for engine, ops in data["op_engines"].items() for op in ops}
    return EngineTable(MappingProxyType(engines), MappingProxyType(mapping), data["default_engine"])
