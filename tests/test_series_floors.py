"""The series floors of the sync-aware bound (`optimal/series.py`): the cut tasks against a
brute force, the least gap of a fork-join's relaxation against its best plan, and a floor for
every module of random chains of fork-joins (the bound with them against random plans of those
chains: `test_sync_aware_bound.py`)."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest
from node_graphs import fork_join_chain_nodes, graph_of

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.bounds import _program, graph_sync_aware_bound
from streamalloc.optimal.fork_join import closure
from streamalloc.optimal.series import (
    SCALE,
    _Relaxation,
    _solve,
    _solved,
    cut_tasks,
    least_gap,
    series_floors,
)
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
    segment = ((FORK, HALF, HALF, HALF, HALF, JOIN), FORK_JOIN_PREDS, FORK[0])
    assert least_gap(segment, 1 * SCALE, 1 * SCALE) == 23 * SCALE
    # without sync latency the branches overlap completely
    assert least_gap(segment, 0, 0) == 20 * SCALE
    # branches as wide as the engine never overlap: one stream, 40
    wide = (10 * SCALE, "AIcoreEngine", 32, 32)
    assert least_gap(((FORK, wide, wide, wide, wide, JOIN), FORK_JOIN_PREDS, FORK[0]),
                     1 * SCALE, 1 * SCALE) == 40 * SCALE


def test_an_inception_module_is_solved_to_its_optimum() -> None:
    """Inception v1's second module (its times in 0.01 us and block dims): four branches of
    4 us tasks on 32 cores, 20.4 us of work over the cores, one branch four tasks long. Its
    relaxation's optimum is 26.54 us; with CP-SAT's default cumulative propagation the bound
    stayed at 19.82 after 5 deterministic seconds, with edge finding it is proven in 2.2, and
    without the LP relaxation in 0.05."""
    core = "AIcoreEngine"
    tasks = tuple((time, core, width, 32) for time, width in (
        (399, 20), (399, 20), (396, 17), (399, 10), (396, 17), (399, 10), (393, 25),
        (399, 15), (393, 12), (365, 3), (381, 10), (386, 8), (390, 14), (399, 5), (433, 32)))
    preds = ((), (0,), (0,), (2,), (0,), (4,), (5,), (6,), (0,), (8,), (9,), (10,), (1,),
             (12,), (3, 7, 11, 13))
    assert least_gap((tasks, preds, 400), 1 * SCALE, 1 * SCALE) == 2654
    gap, spent, run = _solved((tasks, preds, 400), 1 * SCALE, 1 * SCALE, 0.2)
    assert gap == 2654 and spent < 0.2 and run is not None


def test_a_large_segment_counts_every_send_and_recv_on_its_stream() -> None:
    """BERT base's attention block (15 tasks: the value, key and query projections, the
    scores' chain): the model with only a fork's Sends and a join's Recvs on their streams
    gives 38.61 us; counting every Send and Recv, 39.61 (the bound of BERT base 1626.6 ->
    1637.6 us). Solved first without them, then with them from that floor and run; from
    nothing the full model took 0.19 deterministic s here and up to 0.49 (6 s of wall time)
    on Inception v1's modules, for their same floors."""
    core = "AIcoreEngine"
    tasks = tuple((time, core, width, 32) for time, width in (
        (392, 11), (462, 32), (391, 11), (462, 32), (391, 11), (462, 32), (391, 11), (390, 11),
        (390, 11), (399, 21), (390, 11), (399, 21), (398, 22), (399, 21), (399, 21)))
    preds = ((), (0,), (1,), (0,), (3,), (0,), (5,), (6,), (4,), (7, 8), (2,), (9,), (11,),
             (12,), (10, 13))
    segment = (tasks, preds, 393)
    assert least_gap(segment, 1 * SCALE, 1 * SCALE) == 3961
    first = _Relaxation(segment, 1 * SCALE, 1 * SCALE, every=False)
    assert _solve(first, 2.5, None)[0] == 3861
    whole = _Relaxation(segment, 1 * SCALE, 1 * SCALE, every=True)
    assert _solve(whole, 2.5, None)[0] == 3961


@pytest.mark.parametrize("seed", range(12))
def test_every_module_of_a_fork_join_chain_has_a_floor(tmp_path: Path, seed: int) -> None:
    """Each module's fork and join are cut tasks, so every module gets a floor, and the
    bound with them stays under the optimal mode's plan (random plans of these graphs:
    `test_sync_aware_bound.py`)."""
    rng = random.Random(seed)
    modules = rng.randint(1, 3)
    graph = graph_of(tmp_path, f"chain{seed}", fork_join_chain_nodes(rng, modules))
    rules = default_rule_set(graph)
    allocation = allocate_ge(graph, rules)
    program = _program(graph, synchronize(graph, allocation, sync="minimal"), COSTS)
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
        record=1.0, wait=1.0).floors
    joins = {f"j{m}" for m in range(modules)}
    assert {program.names[b] for b in floors} == joins
    bound = graph_sync_aware_bound(graph, COSTS).bound_us
    plan, _ = allocate_optimal(graph, builtin_rules("free"),
                               OptimalOptions(objective="makespan", time_limit=0.5))
    assert bound <= emulate(graph, plan.to_json()).makespan_us + 1e-9
