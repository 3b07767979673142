"""The emulator's fast paths give the answers of the slow ones they stand in for.

* `CostModel.kernel` (memoised on `kernel_key`) equals `CostModel.direct_kernel` on every node
  of every real model, on the shipped cost table and on the whole-device one;
* `fast_schema`'s column check of the plan schema is sound: every document it accepts, the
  schema (`jsonschema`) accepts, over thousands of mutated plans; and it accepts real plans;
* the compiler reports the first bad stream entry in stream order, whichever kind it is.
"""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from emu.conftest import EXAMPLES, ge_mode_plan
from real_models import real_models

from streamalloc.errors import InputError
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import default_cost_table, load_cost_table
from streamalloc.runtime_emu.fast_schema import compile_check
from streamalloc.runtime_emu.plan import _plan_check
from streamalloc.schemas import PLAN_SCHEMA, validator

MODELS = real_models()
WHOLE_DEVICE = EXAMPLES / "whole_device_costs.yaml"


@cache
def graph_of(path: Path) -> Graph:
    return load_graph(path)


@pytest.mark.parametrize("path", MODELS, ids=[p.name[:40] for p in MODELS])
def test_the_memoised_kernel_equals_the_direct_one(path: Path) -> None:
    graph = graph_of(path)
    for table in (default_cost_table(), load_cost_table(WHOLE_DEVICE)):
        model = CostModel(graph, table)
        for node in graph.all_nodes():
            assert model.kernel(node) == model.direct_kernel(node), node.name
        assert model.kernel(node) == model.direct_kernel(node)  # again, from the memo


def test_nodes_with_equal_keys_share_one_entry() -> None:
    graph = graph_of(MODELS[-5])  # a transformer: many equal layers
    model = CostModel(graph, default_cost_table())
    computed = [n for n in graph.all_nodes() if n.cost_us is None]
    for node in computed:
        model.kernel(node)
    assert 0 < len(model._memo) < len(computed)


def test_the_plan_schema_has_a_fast_check() -> None:
    # a keyword the column check does not know would silently send every plan the slow way
    assert _plan_check() is not None


def _plans(*models: Path) -> list[dict[str, Any]]:
    """The example plans (events, notifies, activations, StreamActive nodes) and the ge-mode
    plans of `models`."""
    files = sorted(EXAMPLES.glob("*.plan.json"))
    plans = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    return [*plans, *(ge_mode_plan(graph_of(model)) for model in models)]


def test_real_plans_pass_the_fast_check() -> None:
    check = _plan_check()
    assert check is not None
    for plan in _plans(MODELS[-1], MODELS[9]):
        assert validator("plan").is_valid(plan)
        assert check(plan)


_VALUES: list[Any] = [-1, 0, 1, 2**31, 1.0, 1.5, float("nan"), True, None, "", "x", "Send",
                      "StreamActive", "event", [], [1], ["a"], {}, {"a": 1}]


def _places(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in `doc` (a few entries of long lists only)."""
    found = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _places(value, (*path, key))
    elif isinstance(doc, list):
        for i in sorted({0, 1, len(doc) - 1} & set(range(len(doc)))):
            found += _places(doc[i], (*path, i))
    return found


def _mutate(doc: Any, rng: random.Random) -> Any:
    doc = json.loads(json.dumps(doc))
    path = rng.choice(_places(doc))
    if not path:
        return rng.choice(_VALUES)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key, action = path[-1], rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif action < 0.25 and isinstance(parent, dict):
        parent[rng.choice(["zzz", "event", "peer", "kind", "-1", "07"])] = rng.choice(_VALUES)
    elif action < 0.3 and isinstance(parent, list):
        parent.append(rng.choice(_VALUES))
    else:
        parent[key] = rng.choice(_VALUES)
    return doc


def test_the_fast_check_is_sound_on_mutated_plans() -> None:
    # What the column check accepts, the schema accepts: a wrong "yes" would let a malformed
    # plan through without its error. (It may say no to a valid document: check_document
    # then decides, only slower.)
    check, schema = compile_check(PLAN_SCHEMA), validator("plan")
    assert check is not None
    rng = random.Random(13)
    rejected = 0
    for plan in _plans(MODELS[0]):
        for _ in range(300):
            doc = _mutate(_mutate(plan, rng) if rng.random() < 0.3 else plan, rng)
            valid = schema.is_valid(doc)
            if check(doc):
                assert valid, doc
            rejected += not valid
    assert rejected > 500  # the mutations do break plans


def test_the_first_bad_stream_entry_is_reported_whatever_its_kind() -> None:
    graph = load_graph(EXAMPLES / "fork_join.yaml")
    data = json.loads((EXAMPLES / "fork_join.plan.json").read_text(encoding="utf-8"))
    twice_then_ghost = copy.deepcopy(data)
    twice_then_ghost["streams"]["0"].append("a")
    twice_then_ghost["streams"]["1"].append("ghost")
    with pytest.raises(InputError, match=r"streams\['0'\]\[\d+\]: task 'a' is listed twice"):
        emulate(graph, twice_then_ghost)
    ghost_then_twice = copy.deepcopy(data)
    ghost_then_twice["streams"]["0"].append("ghost")
    ghost_then_twice["streams"]["1"].append("a")
    with pytest.raises(InputError, match=r"streams\['0'\]\[\d+\]: 'ghost' is neither"):
        emulate(graph, ghost_then_twice)
