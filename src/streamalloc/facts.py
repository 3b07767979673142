"""GE facts that several layers read, from one table (`ge_facts.yaml`, package data).

>>> INVALID, RESERVED_UNITS, LIMIT_DEFAULTS["streamalloc.max_task_per_stream"]
(-1, 27, 1024)
>>> "HcomAllReduce" in HCCL_TYPES
True
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

# libyaml's loader when PyYAML has it (10x faster): the package's own tables load on every run
YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load() -> Mapping[str, Any]:
    text = resources.files("streamalloc").joinpath("ge_facts.yaml").read_text(encoding="utf-8")
    data: Mapping[str, Any] = yaml.load(text, Loader=YAML_LOADER)
    return data


_FACTS = _load()

INVALID: int = int(_FACTS["invalid_stream"])
LIMIT_DEFAULTS: Mapping[str, int] = MappingProxyType(
    {k: int(v) for k, v in _FACTS["limits"].items()})
PROFILING_UNITS: int = int(_FACTS["task_units"]["profiling"])
RESERVED_UNITS: int = PROFILING_UNITS + int(_FACTS["task_units"]["spare"])
SYNC_UNITS: Mapping[str, int] = MappingProxyType(dict(_FACTS["task_units"]["sync"]))
HCCL_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["hccl"])
ALLREDUCE_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["allreduce"])
ENTER_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["enter"])
LOOP_BACK_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["loop_back"])
NO_ATTACHED_SOURCE_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["no_attached_source"])
VARIABLE_LIKE_TYPES: frozenset[str] = frozenset(_FACTS["op_types"]["variable_like"])
OWNING_ENGINES: frozenset[str] = frozenset(_FACTS["dynamic_allocator"]["owning_engines"])
AICPU_ENGINES: frozenset[str] = frozenset(_FACTS["dynamic_allocator"]["aicpu_engines"])
NO_TASK_ENGINE: str = str(_FACTS["dynamic_allocator"]["no_task_engine"])
INDEPENDENT_AICPU_TYPES: frozenset[str] = frozenset(
    _FACTS["dynamic_allocator"]["independent_aicpu_types"])
HCCL_ENGINE: str = str(_FACTS["hccl_engine"])
ACTIVATOR_ATTRS: tuple[str, ...] = tuple(_FACTS["activation"]["attrs"])
ACTIVATOR_TYPES: frozenset[str] = frozenset(_FACTS["activation"]["types"])
# a runtime without a stream depth: no split, and no per-stream task limit
UNLIMITED_DEPTH = "streamalloc.unlimited_stream_depth"


def is_hccl(op_type: str, engine: str) -> bool:
    """An HCCL task: its units are its _hccl_task_num (sync spec 5.4)."""
    return op_type in HCCL_TYPES or engine == HCCL_ENGINE
