"""Single-exit regions (`optimal/regions.py`) beside one stream: the regions of a small DAG,
of random DAGs against a brute force over the paths of their transitive reduction, and Llama tiny
under the parallel options, whose plan at the events bound of 2 they find before any search."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest

from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.regions import single_exit_regions
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.solver.dag import TaskDag
from streamalloc.verify import verify_plan

DATA = Path(__file__).parent / "data"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def test_the_region_of_a_diamond_is_its_fork_to_its_join() -> None:
    # r -> a -> {b, c} -> d -> e, and r -> f -> e; p (no producer the main input reaches)
    # feeds c: a dominates a b c d, whose exit is d; f and d dominate nothing else
    names = ["r", "p", "a", "b", "c", "d", "f", "e"]
    edges = [("r", "a"), ("a", "b"), ("a", "c"), ("p", "c"), ("b", "d"), ("c", "d"),
             ("d", "e"), ("r", "f"), ("f", "e")]
    dag = TaskDag.build(names, edges, ["g"] * len(names))
    index = {n: i for i, n in enumerate(names)}
    reached = dag.reached_from([index["r"]])
    found = [tuple(names[v] for v in region)
             for region in single_exit_regions(dag, index["r"], reached)]
    assert found == [("a", "b", "c", "d")]


@pytest.mark.parametrize("seed", range(60))
def test_regions_are_the_dominated_sets_with_one_exit(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    edges = {(u, v) for v in range(1, n) for u in rng.sample(range(v), min(v, rng.randint(1, 2)))}
    dag = TaskDag.build([f"n{i}" for i in range(n)], [(f"n{u}", f"n{v}") for u, v in edges],
                        ["g"] * n)
    reached = dag.reached_from([0])  # each node reads an earlier one: all of them
    full = nx.DiGraph(edges)
    full.add_nodes_from(range(n))
    graph = nx.transitive_reduction(full)  # what sync orders: implied dependencies need none
    expected = []
    for x in range(1, n):
        others = graph.copy()
        others.remove_node(x)
        dominated = [v for v in range(n) if v == x or not nx.has_path(others, 0, v)]
        inside = set(dominated)
        exits = {v for v in dominated for s in graph.successors(v) if s not in inside}
        if len(dominated) >= 2 and len(exits) == 1:
            expected.append(tuple(dominated))
    assert list(single_exit_regions(dag, 0, reached)) == expected


def test_llama_tiny_gets_its_two_events_before_any_search() -> None:
    """The events bound is 2 (one event cannot join two streams within ge mode's 451.3 us):
    its prologue and its layer-0 k projection with its rotary embedding beside the rest
    reach it at 441.0 us, written at once (CP-SAT and the Proof took 13 s for 450.3 us)."""
    graph = load_graph(DATA / "onnx" / "llama_tiny.onnx").with_options(PARALLEL)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=10.0))
    assert (report.phase, report.status, report.events_bound) == \
        ("one-stream+prologue+region", "OPTIMAL", 2)
    assert plan.event_count + plan.notify_count == 2 and report.deterministic_time == 0.0
    assert report.makespan_us <= report.baseline_makespan_us
    document = plan.to_json()
    assert verify_plan(graph, document, rules=default_rule_set(graph)).exit_code == 0
    assert emulate(graph, document).status == "ok"
    side = next(names for names in document["streams"].values()
                if "/layers.0/self_attn/k_proj/MatMul" in names)
    assert "/Where_1" in side and "/layers.0/self_attn/q_proj/MatMul" not in side
