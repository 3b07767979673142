"""The emulator's fast paths give the answers of the slow ones they stand in for.

* `CostModel.kernel` (memoised on `kernel_key`) equals `CostModel.direct_kernel` on every node
  of every real model, on the shipped cost table and on the whole-device one;
* the compiler reports the first bad stream entry in stream order, whichever kind it is;
* a program compiled from the graph's node tasks computed once (`graph_node_tasks`, what the
  optimal search keeps) equals the one compiled from the cost model, on every real model.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import pytest
from emu.conftest import EXAMPLES
from real_models import real_models

from streamalloc.errors import InputError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu import emulate
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import default_cost_table, load_cost_table
from streamalloc.runtime_emu.node_tasks import graph_node_tasks
from streamalloc.runtime_emu.plan import plan_from_dict
from streamalloc.runtime_emu.program import compile_program
from streamalloc.sync.driver import synchronize

MODELS = real_models()
WHOLE_DEVICE = EXAMPLES / "whole_device_costs.yaml"


@cache
def graph_of(path: Path) -> Graph:
    return load_graph(path)


@pytest.mark.parametrize("path", MODELS, ids=[p.name[:40] for p in MODELS])
def test_node_tasks_computed_once_compile_the_same_program(path: Path) -> None:
    graph = graph_of(path)
    for table in (default_cost_table(), load_cost_table(WHOLE_DEVICE)):
        plan = plan_from_dict(synchronize(graph, allocate_ge(graph, default_rule_set(graph)),
                                          sync="minimal").to_json())
        assert compile_program(graph, plan, table, tasks=graph_node_tasks(graph, table)) \
            == compile_program(graph, plan, table)


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
