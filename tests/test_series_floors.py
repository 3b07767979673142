"""The series floors of the sync-aware bound (`optimal/series.py`): the cut tasks against a
brute force, the least gap of a fork-join's relaxation against its best plan, and the bound
with its floors never above the makespan of any verified plan of random chains of
fork-joins."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest
from node_graphs import graph_of

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.bounds import _program, graph_sync_aware_bound
from streamalloc.optimal.evaluate import evaluate, task_dag
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.fork_join import closure
from streamalloc.optimal.series import SCALE, cut_tasks, least_gap, series_floors
from streamalloc.rules import builtin_rules, default_rule_set
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.program import TASK
from streamalloc.sync.driver import synchronize

COSTS = default_cost_table()


@pytest.mark.parametrize("seed", range(100))
def test_cut_tasks_are_the_tasks_ordered_with_every_other(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    density = rng.choice([0.1, 0.3, 0.6])
    preds = [sorted(u for u in range(v) if rng.random() < density) for v in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for u in preds[v]:
            succs[u].append(v)
    dag = nx.DiGraph()
    dag.add_nodes_from(range(n))
    dag.add_edges_from((u, v) for v in range(n) for u in preds[v])
    some = sorted(rng.sample(range(n), rng.randint(1, n)))  # the tasks with work
    expected = [v for v in some
                if len((nx.ancestors(dag, v) | nx.descendants(dag, v)) & set(some))
                == len(some) - 1]
    order = list(range(n))
    assert cut_tasks(some, closure(order, preds), closure(order[::-1], succs)) == expected


# a fork p, two branches of two 16-core tasks, a join j (times in model units, 1 us = SCALE)
FORK = (12 * SCALE, "AIcoreEngine", 32, 32)
HALF = (10 * SCALE, "AIcoreEngine", 16, 32)
JOIN = (7 * SCALE, "AIcoreEngine", 32, 32)
FORK_JOIN_PREDS = ((), (0,), (1,), (0,), (3,), (2, 4))


def test_the_least_gap_of_a_fork_join_counts_the_forks_send() -> None:
    # side by side: p's Send delays its own branch by 1 us (or the other's Recv follows it),
    # the other branch starts 2 us after p; the later branch's Send and the Recv before j:
    # 20 + 3. Its stream time is what the fork-join bound left out (20 + 2)
    segment = ((FORK, HALF, HALF, HALF, HALF, JOIN), FORK_JOIN_PREDS)
    assert least_gap(segment, 1 * SCALE, 1 * SCALE) == 23 * SCALE
    # without sync latency the branches overlap completely
    assert least_gap(segment, 0, 0) == 20 * SCALE
    # branches as wide as the engine never overlap: one stream, 40
    wide = (10 * SCALE, "AIcoreEngine", 32, 32)
    assert least_gap(((FORK, wide, wide, wide, wide, JOIN), FORK_JOIN_PREDS),
                     1 * SCALE, 1 * SCALE) == 40 * SCALE


def _fork_join_chain(rng: random.Random, modules: int) -> list[str]:
    """A chain of fork-joins: each module's fork feeds 2 to 3 branches of 1 to 3 tasks of
    random time and block dim, which its join reads; some branch tasks take no device work."""
    nodes, last = ["{name: x, type: Data}"], "x"
    for m in range(modules):
        fork = f"f{m}"
        nodes.append(f"{{name: {fork}, type: Relu, inputs: [{last}], "
                     f"cost_us: {rng.choice([1, 3, 5])}, attrs: {{block_dim: 32}}}}")
        ends = []
        for b in range(rng.randint(2, 3)):
            prev = fork
            for k in range(rng.randint(1, 3)):
                name = f"m{m}b{b}t{k}"
                if rng.random() < 0.1:
                    nodes.append(f"{{name: {name}, type: Reshape, inputs: [{prev}], "
                                 "task_count: 0}")
                else:
                    nodes.append(f"{{name: {name}, type: Relu, inputs: [{prev}], "
                                 f"cost_us: {rng.choice([1, 2, 5, 8])}, "
                                 f"attrs: {{block_dim: {rng.choice([4, 16, 20, 32])}}}}}")
                prev = name
            ends.append(prev)
        last = f"j{m}"
        nodes.append(f"{{name: {last}, type: Concat, inputs: [{', '.join(ends)}], "
                     f"cost_us: {rng.choice([1, 3])}}}")
    return [*nodes, f"{{name: out, type: NetOutput, inputs: [{last}]}}"]


@pytest.mark.parametrize("seed", range(24))
def test_floors_hold_for_random_plans_of_fork_join_chains(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    graph = graph_of(tmp_path, f"chain{seed}", _fork_join_chain(rng, rng.randint(1, 3)))
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    program = _program(graph, synchronize(graph, baseline.allocation, sync="minimal"), COSTS)
    real = [kind == TASK for kind in program.kinds]
    order = list(program.topo)
    succs: dict[int, list[int]] = {t: [] for t in order}
    for t in order:
        for p in program.preds[t]:
            succs[p].append(t)
    floors = series_floors(
        order, program.preds, real,
        {t: (program.durations[t], program.engines[t], program.widths[t], 32)
         for t in order if real[t]},
        before=closure(order, program.preds), after=closure(order[::-1], succs),
        record=1.0, wait=1.0)
    assert floors  # every module is a segment between its fork and its join
    dag = task_dag(graph, baseline.allocation)
    evaluator = Evaluator(graph, dag, baseline, OptimalOptions(objective="makespan"), COSTS)
    bound = graph_sync_aware_bound(graph, COSTS).bound_us
    for _ in range(10):
        streams = [rng.randrange(rng.choice([2, 3, 4])) for _ in range(dag.size)]
        outcome = evaluator.outcome(streams)  # synchronized and verified
        assert outcome is not None
        assert bound <= outcome.makespan_us + 1e-9
    plan, _ = allocate_optimal(graph, builtin_rules("free"),
                               OptimalOptions(objective="makespan", time_limit=0.5))
    assert bound <= emulate(graph, plan.to_json()).makespan_us + 1e-9
