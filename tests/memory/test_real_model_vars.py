"""`streamalloc vars` on the 17 real models: formats.md section 6, invariants, goldens, loading.

The golden per model pins the summary (variables, own blocks, reused, totals) and the SHA-256 of
the plan file, so any change of the byte-identical output shows up as a reviewed diff
(`pytest --update-goldens`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from real_models import real_models

from streamalloc.ir.loaders import load_graph
from streamalloc.memory.codes import hbm_block
from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.loading import load_into_device
from streamalloc.memory.plan import VariablePlan, plan_json_text, plan_to_json, variable_plan

GOLDENS = Path(__file__).parent / "goldens" / "real_models"
MODELS = real_models()

ENTRY = {
    "type": "object", "additionalProperties": False,
    "required": ["key", "kind", "mem_type", "offset", "size", "logical_address", "reused_from"],
    "properties": {
        "key": {"type": "string"},
        "kind": {"enum": ["Variable", "VariableV2", "Const", "Constant", "FileConstant",
                          "ConstPlaceHolder"]},
        "mem_type": {"enum": ["HBM", "RDMA_HBM", "HOST"]},
        "offset": {"type": "integer", "minimum": 0},
        "size": {"type": "integer", "minimum": 0},
        "logical_address": {"type": "integer", "minimum": 0},
        "reused_from": {"type": ["string", "null"]},
    },
}
SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["format", "graph", "session", "variables", "total_size"],
    "properties": {
        "format": {"const": "streamalloc.vars/v1"},
        "graph": {"type": "string"},
        "session": {"type": "integer"},
        "variables": {"type": "object", "additionalProperties": ENTRY},
        "total_size": {"type": "object", "additionalProperties": False,
                       "required": ["HBM", "RDMA_HBM", "HOST"],
                       "properties": {k: {"type": "integer", "minimum": 0}
                                      for k in ("HBM", "RDMA_HBM", "HOST")}},
    },
}


@cache
def plan_of(model: Path) -> VariablePlan:
    return variable_plan(load_graph(model))


def summary(plan: VariablePlan, text: str) -> str:
    own = [v for v in plan.variables.values() if v.reused_from is None]
    kinds: dict[str, int] = {}
    for v in plan.variables.values():
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
    return (f"graph {plan.graph}: {len(plan.variables)} variables and constants "
            f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'}), "
            f"{len(own)} own blocks, {len(plan.variables) - len(own)} reused\n"
            f"total_size {dict(plan.total_size)}\n"
            f"sha256 {hashlib.sha256(text.encode()).hexdigest()}\n")


def check_invariants(plan: VariablePlan, doc: dict[str, Any]) -> None:
    own = sorted((v.offset, v.size) for v in plan.variables.values()
                 if v.reused_from is None and v.mem_type == "HBM")
    for (a, size), (b, _) in pairwise(own):
        assert a + size <= b, "two variables with their own memory overlap"
    assert sum(size for _, size in own) == plan.total_size["HBM"]
    for v in plan.variables.values():
        assert v.logical_address == plan.logic_base + v.offset
        assert v.size == hbm_block(v.desc.size)
        if v.reused_from is not None:
            owner = plan.variables[v.reused_from]
            assert owner.logical_address == v.logical_address and owner.reused_from is None
    assert list(doc["variables"]) == sorted(plan.variables)


def test_all_seventeen_models() -> None:
    assert len(MODELS) == 17
    # One golden per model: none missing, none stale.
    assert sorted(p.name for p in GOLDENS.iterdir()) == sorted(f"{m.stem}.vars" for m in MODELS)


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_vars_plan(model: Path, golden: Callable[[Path, str], None]) -> None:
    plan = plan_of(model)
    text = plan_json_text(plan)
    doc = plan_to_json(plan)
    jsonschema.validate(doc, SCHEMA)
    check_invariants(plan, doc)
    assert text == plan_json_text(variable_plan(load_graph(model)))  # byte-identical
    golden(GOLDENS / f"{model.stem}.vars", summary(plan, text))


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_plan_loads_into_the_emulated_device(model: Path) -> None:
    plan = plan_of(model)
    memory = EmulatedMemory()
    loaded = load_into_device(plan, memory)
    assert loaded.allocated_bytes["HBM"] == plan.total_size["HBM"]
    assert memory.used() >= plan.total_size["HBM"]
    addresses = {v.device_address for v in loaded.variables.values() if v.shared_with is None}
    assert len(addresses) == sum(1 for v in plan.variables.values() if v.reused_from is None)
    for v in loaded.variables.values():
        if v.shared_with is not None:
            assert v.device_address == loaded.address(v.shared_with)
    assert f"{len(plan.variables)} loaded" in loaded.summary()
