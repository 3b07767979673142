"""The sync-aware bound (`optimal/bounds.py`) against emulated plans: never above the makespan
of any verified plan of random small graphs under random stream assignments, nor of any
assignment of tiny ones in several execution orders; the Send and Recv
a fork-join forces, the fork's Send beside its own branch, the contending tasks between a fork
and its join, and the Send and Recvs of two branches between a split and its join, counted
exactly where the best plan pays them;
the clique's local search."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest
from every_plan import every_plan, tiny_graph
from node_graphs import fork_join_chain_nodes, graph_of, random_nodes
from real_models import DATA

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.bounds import (
    graph_makespan_bound,
    graph_sync_aware_bound,
    makespan_bound,
    sync_aware_bound,
)
from streamalloc.optimal.cliques import DENSE_BITS, _grown, _swapped, bits_of
from streamalloc.optimal.evaluate import evaluate, task_dag
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.split_join import least_gap
from streamalloc.rules import builtin_rules, default_rule_set
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.plan import plan_from_dict
from streamalloc.runtime_emu.program import Program, compile_program
from streamalloc.sync.driver import synchronize
from streamalloc.sync.limits import without_device_limits

COSTS = default_cost_table()


@pytest.mark.parametrize(("shape", "seed"), [*(("random", s) for s in range(40)),
                                             *(("fork_join_chain", s) for s in range(24))])
def test_bound_holds_for_random_plans_of_random_graphs(tmp_path: Path, shape: str,
                                                       seed: int) -> None:
    """Random DAGs, and chains of fork-joins, where every module has a series floor."""
    rng = random.Random(seed)
    nodes = random_nodes(rng, rng.randint(4, 12)) if shape == "random" \
        else fork_join_chain_nodes(rng, rng.randint(1, 3))
    graph = graph_of(tmp_path, f"{shape}{seed}", nodes)
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


@pytest.mark.parametrize(("seed", "engines"), [  # plans of 2+ streams fastest
    *((seed, False) for seed in (7, 13, 36, 40, 41, 44, 47, 58)),
    *((seed, True) for seed in (41, 45, 63))])  # some tasks on AI CPU or HCCL
def test_no_plan_of_a_small_graph_runs_below_the_bound(tmp_path: Path, seed: int,
                                                        engines: bool) -> None:
    """Every assignment of up to 6 streamed nodes to streams, each in several execution
    orders: none runs faster than the bound, and the optimal mode's plan, where it says
    OPTIMAL, runs as fast as the fastest of them (an exhaustive check on 210 such graphs of
    up to 7 nodes found the bound below or at the fastest plan on every one)."""
    graph, rng = tiny_graph(tmp_path, seed, engines=engines)
    _, _, runs = every_plan(graph, COSTS, rng)
    fastest = min(run.makespan_us for run in runs)
    assert graph_sync_aware_bound(graph, COSTS).bound_us <= fastest + 1e-9
    _, report = allocate_optimal(graph, builtin_rules("free"),
                                 OptimalOptions(objective="makespan", time_limit=1.0))
    assert report.makespan_us >= fastest - 1e-9
    if report.status == "OPTIMAL":
        assert report.makespan_us == pytest.approx(fastest)


def test_the_bound_is_the_same_from_every_plan_of_a_graph() -> None:
    """The program's tids run stream by stream, so they differ from plan to plan; the bound
    (which `compare` reads from whichever plan it emulated first) must not. T5's tasks tie
    in time where its cliques grow (its bound read 1920.1 or 1924.1 when ties went by tid)."""
    graph = load_graph(DATA / "onnx" / "t5_small.onnx")
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    dag = task_dag(graph, baseline.allocation)
    evaluator = Evaluator(graph, dag, baseline, OptimalOptions(objective="makespan"), COSTS)
    bound = makespan_bound(graph, baseline.plan, COSTS)
    rng = random.Random(0)
    for _ in range(2):
        plan = evaluator.synchronized([rng.randrange(4) for _ in range(dag.size)])
        program = compile_program(graph, plan_from_dict(plan.to_json()), COSTS)
        assert sync_aware_bound(program, COSTS).bound_us == bound  # made anew: not the kept one


def test_the_bound_is_made_once_per_graph_and_cost_table(tmp_path: Path) -> None:
    """The makespan search's floor, the driver's status and compare's row ask for one bound:
    the graph in another order or with other limits shares it, another cost table does not."""
    graph = graph_of(tmp_path, "modules", fork_join_chain_nodes(random.Random(7), 2))
    made: list[CostTable] = []

    def program(table: CostTable) -> Callable[[], Program]:
        def make() -> Program:
            made.append(table)
            plan = synchronize(graph, allocate_ge(graph, default_rule_set(graph)),
                               sync="minimal")
            return compile_program(graph, plan_from_dict(plan.to_json()), table)
        return make

    first = graph_makespan_bound(graph, COSTS, program(COSTS))
    assert first == graph_sync_aware_bound(graph, COSTS).bound_us
    lifted = without_device_limits(graph)
    assert lifted is not graph
    assert graph_makespan_bound(lifted, COSTS, program(COSTS)) == first
    assert made == [COSTS]
    slower = msgspec.structs.replace(COSTS, launch_us=COSTS.launch_us + 10)
    assert graph_makespan_bound(graph, slower, program(slower)) > first
    assert made == [COSTS, slower]


# Small graphs whose best plan pays exactly what the bound counts (launches included):
# (graph, critical path, bound = the best plan's makespan)
EXACT = {
    # p 12 us, a1 + a2 44, j 7: b beside a1 a2 pays a Send after p and a Recv before j (p and
    # j on one stream) or one Send/Recv pair (on two); after a2 it adds 7
    "unbalanced_fork_join": ([
        "{name: p, type: Relu, inputs: [x], cost_us: 10}",
        "{name: a1, type: Relu, inputs: [p], cost_us: 20}",
        "{name: a2, type: Relu, inputs: [a1], cost_us: 20}",
        "{name: b, type: Relu, inputs: [p], cost_us: 5}",
        "{name: j, type: Add, inputs: [a2, b], cost_us: 5}",
    ], 63.0, 65.0),
    # GPT-2's GELU in small: p 12, c1 + c2 44, j 7; h (x * 0.5) cannot run beside c1 or c2
    # (32 + 32 cores > 32) on any stream, so its 7 us come on top: one stream is best
    "contended_fork_join": ([
        "{name: p, type: Relu, inputs: [x], cost_us: 10, attrs: {block_dim: 32}}",
        "{name: h, type: Mul, inputs: [p], cost_us: 5, attrs: {block_dim: 32}}",
        "{name: c1, type: Pow, inputs: [p], cost_us: 20, attrs: {block_dim: 32}}",
        "{name: c2, type: Mul, inputs: [c1], cost_us: 20, attrs: {block_dim: 32}}",
        "{name: j, type: Mul, inputs: [h, c2], cost_us: 5, attrs: {block_dim: 32}}",
    ], 63.0, 70.0),
    # SqueezeNet's fire module in small: p 12, two branches of two 16-core tasks (10 us
    # each) side by side, j 7: p's Send delays the branch on its stream 1 us, the later
    # branch's Send and the Recv before j add 2 (the series floor; the fork-join bound
    # counted 2 in all)
    "two_stream_fork_join": ([
        "{name: p, type: Relu, inputs: [x], cost_us: 10}",
        "{name: a1, type: Relu, inputs: [p], cost_us: 8, attrs: {block_dim: 16}}",
        "{name: a2, type: Relu, inputs: [a1], cost_us: 8, attrs: {block_dim: 16}}",
        "{name: b1, type: Relu, inputs: [p], cost_us: 8, attrs: {block_dim: 16}}",
        "{name: b2, type: Relu, inputs: [b1], cost_us: 8, attrs: {block_dim: 16}}",
        "{name: j, type: Add, inputs: [a2, b2], cost_us: 5}",
    ], 39.0, 42.0),
    # GPT-2's q and k in small: f 12, a and b 7 each, j 7; side by side they need a Send
    # after f and a Recv for each branch on the join's stream, 3 us; one after the other, 7
    "split_join": ([
        "{name: f, type: Relu, inputs: [x], cost_us: 10}",
        "{name: r, type: Reshape, inputs: [f], task_count: 0}",
        "{name: a, type: Relu, inputs: [r], cost_us: 5}",
        "{name: b, type: Relu, inputs: [f], cost_us: 5}",
        "{name: j, type: Add, inputs: [a, b], cost_us: 5}",
    ], 26.0, 29.0),
}


@pytest.mark.parametrize("case", sorted(EXACT))
def test_the_bound_is_exact_where_the_best_plan_pays_what_it_counts(tmp_path: Path,
                                                                     case: str) -> None:
    nodes, critical, bound_us = EXACT[case]
    graph = graph_of(tmp_path, case, ["{name: x, type: Data}", *nodes,
                                    "{name: out, type: NetOutput, inputs: [j]}"])
    plan, _ = allocate_optimal(graph, builtin_rules("free"),
                               OptimalOptions(objective="makespan", time_limit=1.0))
    run = emulate(graph, plan.to_json())
    assert run.bounds.critical_path_us == pytest.approx(critical)
    assert graph_sync_aware_bound(graph, COSTS).path_us == pytest.approx(bound_us)
    assert run.makespan_us == pytest.approx(bound_us)


def test_a_swap_lets_two_long_tasks_replace_the_short_one_that_blocked_them() -> None:
    # tasks 0, 3, 1, 2 by length; 1 and 2 may overlap 3 only (bitmasks over tasks), and the
    # greedy growth took 3 first; value: the total time
    time = {0: 9.0, 3: 8.0, 1: 5.0, 2: 5.0}
    overlap = {0: 0, 3: 1 << 1 | 1 << 2, 1: 1 << 3, 2: 1 << 3}

    def value(members: Sequence[int]) -> float:
        return sum(time[t] for t in members)

    greedy = _grown([0], [0, 3, 1, 2], overlap)
    assert greedy == [0, 3]
    assert sorted(_swapped(greedy, [0, 3, 1, 2], overlap, value)) == [0, 1, 2]


def test_the_least_gap_between_a_split_and_its_join() -> None:
    # two 3.91 us branches (GPT-2's q and k transposes): one beside the fork, the other with
    # the join, a Send and two Recvs (serial: 7.82); a long and a short branch run serially
    assert least_gap(3.91, 3.91, 1.0, 1.0) == pytest.approx(6.91)
    assert least_gap(10.0, 1.0, 1.0, 1.0) == pytest.approx(11.0)
    assert least_gap(5.0, 5.0, 1.0, 1.0) == pytest.approx(8.0)
    assert least_gap(5.0, 3.0, 0.0, 0.0) == pytest.approx(5.0)


@pytest.mark.parametrize("count", [0, 1, DENSE_BITS, DENSE_BITS + 1, 700])
def test_bits_of_reads_sparse_and_dense_masks_alike(count: int) -> None:
    """The tids of a mask, ascending, whether read bit by bit or through numpy (above
    DENSE_BITS set bits), on masks of 700 and 3,000 tasks with bit 0 and the top bit set."""
    rng = random.Random(count)
    for size in (700, 3000):
        inner = rng.sample(range(1, size - 1), count - 2) if count >= 2 else []
        tids = sorted([*inner, *([0, size - 1] if count >= 2 else [size - 1] * count)])
        assert bits_of(sum(1 << t for t in tids)) == tids
