"""The chain model solved window by window (`solver.windows`), as on graphs too large to solve
whole: tiny windows here, so that the examples, the golden cases and random graphs span many.
Every result is a plan of the whole graph (each node on one stream, streams in T-order and in
one graph, within the capacity), keeps the schedule within the limit, breaks no rule and never
needs more split pairs than the hint; what a window saves, counted on the edges it may change,
is what the whole objective saves."""

from __future__ import annotations

from itertools import groupby, pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_heuristic_properties import build as build_graph
from test_heuristic_properties import models

from streamalloc.errors import AllocationInfeasible, RuleConflictError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal, chain_model
from streamalloc.optimal.evaluate import assignment_of, breaks, evaluate, task_dag
from streamalloc.optimal.model_input import solve_input, stream_capacity
from streamalloc.rules import default_rule_set
from streamalloc.rules.constraints import (
    AttachedStreams,
    Constraint,
    StreamCap,
    rule_constraints,
)
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.solver import windows
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length
from streamalloc.solver.model import SolveInput
from streamalloc.solver.run import SolveOutput
from streamalloc.verify import verify_plan

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = sorted([*(ROOT / "examples" / "graphs").glob("*.yaml"),
                 *(ROOT / "tests" / "goldens" / "cases").glob("*.yaml")])


@pytest.fixture(autouse=True)
def tiny_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "WINDOW_NODES", 6)
    monkeypatch.setattr(windows, "STEP", 3)
    monkeypatch.setattr(windows, "NEAR", 6)


@pytest.mark.parametrize("path", GRAPHS, ids=[p.stem for p in GRAPHS])
def test_windows_on_the_examples_and_goldens(path: Path) -> None:
    if path.with_suffix(".ge.error").exists():
        pytest.skip("GE fails on this case: no plan to start from")
    _check(load_graph(path))


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=models("multi"))
def test_windows_on_random_graphs(spec: object) -> None:
    _check(build_graph(spec))  # type: ignore[arg-type]


def _check(graph: Graph) -> None:
    """The windows' plan (`_check_windows`) and each window's gain (`_check_gain_of`), from
    GE's plan of the graph."""
    rules = default_rule_set(graph)
    try:
        baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal",
                            default_cost_table())
    except (RuleConflictError, AllocationInfeasible):
        pytest.skip("no GE plan to start from")
    dag = task_dag(graph, baseline.allocation)
    data = solve_input(graph, dag, baseline, stream_capacity(graph),
                        options=OptimalOptions(), costs=default_cost_table())
    _check_windows(graph, data, rule_constraints(rules, graph))
    _check_gain_of(data)


def _check_windows(graph: Graph, data: SolveInput, constraints: list[Constraint]) -> None:
    """A plan of the whole graph, within the limit and the rules, with no more split pairs."""
    dag = data.dag
    caps: list[Constraint] = [c for c in constraints if isinstance(c, StreamCap)]
    found = windows.windowed_solve(data, constraints, time_limit=0.05 * dag.size, seed=0,
                                   workers=1, broken=lambda s: breaks(graph, dag, caps, s))
    assert sorted(v for chain in found.chains for v in chain) == list(range(dag.size))
    for chain in found.chains:
        assert all(u < v for u, v in pairwise(chain))
        assert len({dag.graphs[v] for v in chain}) == 1
        if data.capacity is not None:
            assert sum(data.units[v] for v in chain) <= data.capacity
    streams = assignment_of(dag, found.chains)
    assert data.makespan_limit is not None
    assert schedule_length(dag, data.durations, streams) <= data.makespan_limit
    placed = [c for c in constraints if not isinstance(c, AttachedStreams)]  # attached streams
    assert not breaks(graph, dag, placed, streams)  # come with the allocation, after this
    runs = [tuple(run) for c in data.hint for _, run in groupby(c, key=dag.graphs.__getitem__)]
    hinted = assignment_of(dag, runs)  # the hint's streams, each in one graph
    assert found.split_pairs <= sum(hinted[u] != hinted[v] for u, v in dag.reduction)
    assert found.split_pairs == sum(streams[u] != streams[v] for u, v in dag.reduction)


def _alternating_chain(n: int) -> SolveInput:
    """A chain of n nodes dealt to two streams in turn, within its length as the limit."""
    names = [f"n{i}" for i in range(n)]
    dag = TaskDag.build(names, list(pairwise(names)), ["g"] * n)
    return SolveInput(dag=dag, units=[1] * n, durations=[10] * n, capacity=None,
                      concurrency="ge", hint=[list(range(0, n, 2)), list(range(1, n, 2))],
                      makespan_limit=10 * n)


def test_windows_join_a_chain_the_hint_splits() -> None:
    """A chain of 14 nodes dealt to two streams in turn (13 split pairs): windows of 6 nodes
    join it into one stream without a split pair, in the schedule's limit (its length)."""
    found = windows.windowed_solve(_alternating_chain(14), [], time_limit=1.0, seed=0,
                                   workers=1, broken=lambda _: False)
    assert found.chains == (tuple(range(14)),)
    assert found.split_pairs == 0


def test_the_optimal_mode_solves_a_large_graph_by_windows(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Above `WINDOWED_ABOVE` streamed nodes the optimal mode's model is solved by windows:
    the training-step example (tiny windows) gets a verified plan with fewer events."""
    monkeypatch.setattr(chain_model, "WINDOWED_ABOVE", 10)
    graph = load_graph(ROOT / "examples" / "graphs" / "train_step.yaml")
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=2.0))
    assert report.phase.startswith("windows")
    assert report.events_final < report.baseline_events
    assert report.makespan_us <= report.baseline_makespan_us + 1e-6
    verify_plan(graph, plan.to_json()).raise_for_failure()


def test_a_windows_gain_counts_the_edges_across_it() -> None:
    """Two chains side by side with one long edge between them: windows that cross the
    streams over change that edge's split, though neither of its ends is in them."""
    names = [f"{c}{i}" for i in range(10) for c in "ab"]
    edges = [(f"{c}{i}", f"{c}{i + 1}") for c in "ab" for i in range(9)] + [("a0", "b9")]
    dag = TaskDag.build(names, edges, ["g"] * 20)
    _check_gain_of(SolveInput(dag=dag, units=[1] * 20, durations=[10] * 20, capacity=None,
                              concurrency="ge", hint=[list(range(0, 20, 2)),
                                                      list(range(1, 20, 2))],
                              makespan_limit=100))


def _check_gain_of(data: SolveInput) -> None:
    """What a window's streams save, counted on the edges it may change, is what the whole
    model's objective (split pairs x (n + 1) + streams) saves, counted on every edge: for
    the hint's streams, every node alone, and the streams crossed over behind the window."""
    dag = data.dag
    plan = windows._Plan(data)
    succs = dag.reduction_succs
    reduction = np.asarray(dag.reduction, dtype=np.int64).reshape(-1, 2)
    for a in range(0, max(1, dag.size - 3), 3):
        b = min(dag.size, a + 6)
        window = windows._window(plan, a, b)
        for chains in _proposals(window):
            new = [np.concatenate([window.parts[k] for k in c]) for c in chains]
            streams = plan.stream.copy()
            for s, chain in enumerate(new):
                streams[chain] = len(plan.chains) + s  # new ids
            edges = windows._changeable(dag, succs, reduction, a, b)
            assert windows._gain(plan, window, chains, edges) == \
                _objective(dag, plan.stream, len(plan.live())) - _objective(
                    dag, streams, len(plan.live()) - len(window.streams) + len(chains))


def _proposals(window: windows._Window) -> list[list[list[int]]]:
    """The window's hint, every node alone (the proxies of one stream kept together), and
    the hint with its window nodes all on the first stream."""
    hint = [list(c) for c in window.data.hint]
    proxies = set(window.before.values()) | set(window.after.values())
    alone = [[k for k in c if k in proxies] for c in hint]
    alone = [c for c in alone if c] + [[k] for c in hint for k in c if k not in proxies]
    crossed = [[k for k in c if k not in window.after.values()] for c in hint]
    tails = [[k for k in c if k in window.after.values()] for c in hint]
    crossed = [c + t for c, t in zip(crossed, tails[1:] + tails[:1], strict=True)]
    return [hint, alone, [c for c in crossed if c]]


def _objective(dag: TaskDag, streams: np.ndarray, count: int) -> int:
    splits = sum(int(streams[u] != streams[v]) for u, v in dag.reduction)
    return splits * (dag.size + 1) + count


def test_windows_take_graphs_the_whole_model_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole model's size limit does not hold for windows, nor for the makespan objective
    where it solves no model; the windows' limit does."""
    from streamalloc.optimal import driver
    graph = layered_graph(60)
    monkeypatch.setattr(chain_model, "WINDOWED_ABOVE", 10)
    monkeypatch.setattr(driver, "MAX_SOLVER_NODES", 20)
    _, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1))
    assert report.status == "FEASIBLE" and report.phase.startswith("windows")
    # the makespan objective does not solve the model: the windows' limit holds for it
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1,
                                                                objective="makespan"))
    assert report.status != "FALLBACK" and report.phase.startswith("hint+fastest")
    verify_plan(graph, plan.to_json()).raise_for_failure()
    monkeypatch.setattr(driver, "MAX_WINDOWED_NODES", 30)
    for objective in ("events", "makespan"):
        plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1,
                                                                    objective=objective))
        assert report.status == "FALLBACK" and "over the solver's 30" in report.reason
    verify_plan(graph, plan.to_json()).raise_for_failure()


def test_a_short_limit_goes_to_the_windows_with_the_most_split_pairs() -> None:
    """A chain of 14 nodes whose hint splits only its end: windows of 6 nodes start at 0, 3,
    6 and 9; those at 6 and 9 have split pairs (3 and 4). A limit for one window solves the
    one at 9, for two both; the others have nothing to save at any limit."""
    names = [f"n{i}" for i in range(14)]
    dag = TaskDag.build(names, list(pairwise(names)), ["g"] * 14)
    data = SolveInput(dag=dag, units=[1] * 14, durations=[10] * 14, capacity=None,
                      concurrency="ge", hint=[[*range(10), 11, 13], [10, 12]],
                      makespan_limit=140)
    plan = windows._Plan(data)
    succs = dag.reduction_succs
    reduction = np.asarray(dag.reduction, dtype=np.int64)
    changeable = {a: windows._changeable(dag, succs, reduction, a, min(14, a + 6))
                  for a in (0, 3, 6, 9)}
    for limit, expected in ((windows.MIN_WINDOW_TIME, [9]), (2 * windows.MIN_WINDOW_TIME, [6, 9]),
                            (100.0, [6, 9])):
        assert windows._worth_solving(plan, [0, 3, 6, 9], changeable, limit) == expected


@pytest.mark.parametrize(("gains", "solved"), [
    ([0] * 9, windows.WINDOW_MISSES),
    ([0, 0, 1, 0, 0, 0, 0, 0, 0], 3 + windows.WINDOW_MISSES),
    ([1] * 9, 9),
])
def test_the_windows_end_after_misses_in_a_row(monkeypatch: pytest.MonkeyPatch,
                                               gains: list[int], solved: int) -> None:
    """Windows stop after WINDOW_MISSES in a row gain nothing (what is left of the limit goes
    to the polish); a gain starts the count again. A 30-node chain has 9 windows to solve, each
    given back its own streams here, its gain read from `gains`."""
    calls: list[float] = []

    def stand_in(model: windows.Model, *, time_limit: float, **_: object) -> SolveOutput:
        calls.append(time_limit)
        return SolveOutput(tuple(tuple(c) for c in model.data.hint), "FEASIBLE", 0.0, 0.0,
                           0.01, 0)

    monkeypatch.setattr(windows, "solve", stand_in)
    monkeypatch.setattr(windows, "_gain", lambda *_: gains[len(calls) - 1])
    windows.windowed_solve(_alternating_chain(30), [], time_limit=100.0, seed=0, workers=1,
                           broken=lambda _: False)
    assert len(calls) == solved
