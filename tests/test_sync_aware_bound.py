"""The sync-aware bound (`optimal/bounds.py`) against emulated plans: never above the makespan
of any verified plan of random small graphs under random stream assignments, and the Send and
Recv a fork-join forces counted exactly where the best plan pays them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.bounds import graph_sync_aware_bound
from streamalloc.optimal.evaluate import evaluate, task_dag
from streamalloc.optimal.search import Evaluator
from streamalloc.rules import builtin_rules, default_rule_set
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate

COSTS = default_cost_table()


def _graph(tmp_path: Path, name: str, nodes: list[str]) -> Graph:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"format: streamalloc.graph/v1\nname: {name}\nnodes:\n"
                    + "".join(f"  - {n}\n" for n in nodes))
    return load_graph(path)


def _random_nodes(rng: random.Random, size: int) -> list[str]:
    """A random DAG: each node reads one to three earlier ones; some take no device work (a
    NOP on its stream), the others a random time and block dim (wide ones contend)."""
    nodes, names = ["{name: x, type: Data}"], []
    for i in range(size):
        inputs = ", ".join(rng.sample(names, min(len(names), rng.choice([1, 2, 2, 3]))) or ["x"])
        if rng.random() < 0.1:
            nodes.append(f"{{name: n{i}, type: Reshape, inputs: [{inputs}], task_count: 0}}")
        else:
            nodes.append(f"{{name: n{i}, type: Add, inputs: [{inputs}], "
                         f"cost_us: {rng.choice([1, 2, 3, 5, 8, 13, 20])}, "
                         f"attrs: {{block_dim: {rng.choice([1, 4, 16, 20, 32])}}}}}")
        names.append(f"n{i}")
    return [*nodes, f"{{name: out, type: NetOutput, inputs: [{', '.join(names)}]}}"]


@pytest.mark.parametrize("seed", range(40))
def test_bound_holds_for_random_plans_of_random_graphs(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    graph = _graph(tmp_path, f"random{seed}", _random_nodes(rng, rng.randint(4, 12)))
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    dag = task_dag(graph, baseline.allocation)
    evaluator = Evaluator(graph, dag, baseline, OptimalOptions(objective="makespan"), COSTS)
    bound = graph_sync_aware_bound(graph, COSTS).bound_us
    for _ in range(8):
        streams = [rng.randrange(rng.choice([2, 3, 5])) for _ in range(dag.size)]
        outcome = evaluator.outcome(streams)  # synchronized and verified
        assert outcome is not None
        assert bound <= outcome.makespan_us + 1e-9
    assert baseline.makespan_us >= bound - 1e-9


FORK_JOIN = [
    "{name: x, type: Data}",
    "{name: p, type: Relu, inputs: [x], cost_us: 10}",
    "{name: a1, type: Relu, inputs: [p], cost_us: 20}",
    "{name: a2, type: Relu, inputs: [a1], cost_us: 20}",
    "{name: b, type: Relu, inputs: [p], cost_us: 5}",
    "{name: j, type: Add, inputs: [a2, b], cost_us: 5}",
    "{name: out, type: NetOutput, inputs: [j]}",
]


def test_an_unbalanced_fork_join_pays_a_send_and_a_recv(tmp_path: Path) -> None:
    graph = _graph(tmp_path, "unbalanced", FORK_JOIN)
    bound = graph_sync_aware_bound(graph, COSTS)
    plan, _ = allocate_optimal(graph, builtin_rules("free"),
                               OptimalOptions(objective="makespan", time_limit=1.0))
    run = emulate(graph, plan.to_json())
    # p 12 us, a1 + a2 44, j 7 (launches included): b beside a1 a2 pays a Send after p and a
    # Recv before j (p and j on one stream) or one Send/Recv pair (on two); after a2 it adds 7
    assert run.bounds.critical_path_us == pytest.approx(63.0)
    assert bound.path_us == pytest.approx(65.0) == run.makespan_us
