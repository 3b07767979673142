"""Full goldens of the 17 real models: the whole allocation and the whole sync plan, in ge mode.

The goldens of test_real_models.py only pin node counts per stream, so a node moved between two
streams of the same size passes them. These pin the result byte for byte, for the default options
and for the parallel options, so that a refactor that must not change any result can prove it:

- `goldens/full/<model>.<options>.alloc.txt`: the canonical allocation text (`allocation_text`);
- `goldens/full/<model>.<options>.plan.json`: the plan JSON (`plan(graph).to_json()`), written
  with `json.dumps(indent=1, sort_keys=True)`, without the keys of `VOLATILE_PLAN_KEYS`.

Rewrite them with `pytest tests/test_full_goldens.py --update-goldens` and review the diff.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from real_models import real_models

from streamalloc.allocation import allocation_text
from streamalloc.api import plan, with_options
from streamalloc.ir.loaders import load_graph

FULL_DIR = Path(__file__).parent / "goldens" / "full"
MODELS = real_models()

OPTION_SETS: dict[str, Mapping[str, str]] = {
    "default": {},
    "parallel": {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
                 "ge.hcomParallel": "1"},
}

# Top-level plan keys left out of the golden. `options`, `rules` (rule-set name and digest),
# `sync` and `solver` describe how the plan was produced rather than the plan itself, and other
# work is about to add or reshape them; excluding them keeps these goldens stable across those
# additions, so that a diff in them always means a changed result. (The rule-set name is still
# pinned by the header of the allocation text.)
VOLATILE_PLAN_KEYS = frozenset({"options", "rules", "sync", "solver"})


def plan_golden_text(plan_json: Mapping[str, Any]) -> str:
    """The plan JSON as stored in the golden: volatile keys dropped, sorted, indented by 1."""
    stable = {key: value for key, value in plan_json.items() if key not in VOLATILE_PLAN_KEYS}
    return json.dumps(stable, indent=1, sort_keys=True) + "\n"


CASES = [pytest.param(model, label, id=f"{model.stem}-{label}")
         for model in MODELS for label in OPTION_SETS]


def test_every_real_model_and_option_set_is_covered() -> None:
    assert len(MODELS) == 17
    assert len(CASES) == 17 * len(OPTION_SETS)
    # No stale golden (of a renamed model or option set) lingers; missing ones fail below.
    expected = {f"{model.stem}.{label}.{kind}" for model in MODELS for label in OPTION_SETS
                for kind in ("alloc.txt", "plan.json")}
    assert {p.name for p in FULL_DIR.iterdir()} <= expected


@pytest.mark.parametrize(("model", "label"), CASES)
def test_full_golden(model: Path, label: str, golden: Callable[[Path, str], None]) -> None:
    graph = with_options(load_graph(model), OPTION_SETS[label])
    result = plan(graph)
    plan_json = result.to_json()
    assert plan_json["mode"] == "ge"
    # The plan's nodes are the allocation's, with the same logical streams and rules.
    assert {name: (n["stream"], n["rule"]) for name, n in plan_json["nodes"].items()} == {
        name: (n.stream, n.rule) for name, n in result.allocation.nodes.items()}
    stem = FULL_DIR / f"{model.stem}.{label}"
    golden(stem.with_name(stem.name + ".alloc.txt"), allocation_text(result.allocation))
    golden(stem.with_name(stem.name + ".plan.json"), plan_golden_text(plan_json))


def test_plan_golden_text_drops_only_volatile_keys() -> None:
    text = plan_golden_text({"b": [1], "rules": "ge", "sync": {}, "options": {}, "solver": 1,
                             "a": {"y": 2, "x": 1}})
    assert text == '{\n "a": {\n  "x": 1,\n  "y": 2\n },\n "b": [\n  1\n ]\n}\n'
