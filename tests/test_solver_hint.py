"""The CP-SAT model admits its own hint: GE's plan satisfies every rule, the makespan limit is
the hint's own schedule and the capacity fits the hint's streams, so a model that rejects the
hint states a rule more strictly than `rules.check` does (the engine caps once counted each
stream's first node: GE's plan of the training-step example was outside the model). Every
variable is hinted: a partial hint CP-SAT must complete by search. Checked on the examples, the
golden cases and random graphs."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_heuristic_properties import build as build_graph
from test_heuristic_properties import models

from streamalloc.errors import AllocationInfeasible, RuleConflictError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions
from streamalloc.optimal.evaluate import evaluate, task_dag
from streamalloc.optimal.model_input import solve_input, stream_capacity
from streamalloc.rules import default_rule_set
from streamalloc.rules.constraints import rule_constraints
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.solver import rules as solver_rules
from streamalloc.solver.model import build
from streamalloc.solver.rules import add_rules
from streamalloc.solver.run import solve

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = sorted([*(ROOT / "examples" / "graphs").glob("*.yaml"),
                 *(ROOT / "tests" / "goldens" / "cases").glob("*.yaml")])


@pytest.mark.parametrize("path", GRAPHS, ids=[p.stem for p in GRAPHS])
def test_the_model_admits_the_ge_plan(path: Path) -> None:
    if path.with_suffix(".ge.error").exists():
        pytest.skip("GE fails on this case: no plan to hint")
    _admits_the_ge_plan(load_graph(path))


@settings(max_examples=30, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=models("multi"))
def test_the_model_admits_the_ge_plan_of_random_graphs(spec: object) -> None:
    _admits_the_ge_plan(build_graph(spec))  # type: ignore[arg-type]


def _admits_the_ge_plan(graph: Graph) -> None:
    rules = default_rule_set(graph)
    try:
        allocation = allocate_ge(graph, rules)
        baseline = evaluate(graph, allocation, rules, "minimal", default_cost_table())
    except RuleConflictError:  # a GE pass undoes a rule on this graph: no plan to hint
        pytest.skip("GE's passes conflict on this graph")
    except AllocationInfeasible:  # GE's own split fails (quirk Q1): no plan to hint
        pytest.skip("GE's plan fails its split")
    options = OptimalOptions(time_limit=5.0)
    dag = task_dag(graph, allocation)
    data = solve_input(graph, dag, baseline, stream_capacity(graph), options=options,
                        costs=default_cost_table())
    model = build(data)
    add_rules(model, rule_constraints(rules, graph), {n: i for i, n in enumerate(dag.names)})
    variables = model.cp.proto.variables  # every one that is not fixed: CP-SAT starts there
    free = {i for i, var in enumerate(variables) if len(set(var.domain)) > 1}
    assert free <= set(model.cp.proto.solution_hint.vars)
    follows = {pair for chain in data.hint for pair in pairwise(chain)}
    for key, arc in model.arc.items():  # the hint's streams, exactly
        model.cp.add(arc == int(key in follows))
    assert solve(model, time_limit=5.0, seed=0, workers=1).status in ("OPTIMAL", "FEASIBLE")


@pytest.mark.parametrize("path", GRAPHS, ids=[p.stem for p in GRAPHS])
def test_the_model_admits_the_ge_plan_with_the_caps_as_booleans(path: Path) -> None:
    # the form of caps whose member keys are too scattered for a domain (large graphs)
    if path.with_suffix(".ge.error").exists():
        pytest.skip("GE fails on this case: no plan to hint")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(solver_rules, "MAX_KEY_RUNS", 0)
        _admits_the_ge_plan(load_graph(path))


@settings(max_examples=30, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=models("multi"))
def test_the_model_admits_the_ge_plan_of_random_graphs_with_the_caps_as_booleans(
        spec: object) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(solver_rules, "MAX_KEY_RUNS", 0)
        _admits_the_ge_plan(build_graph(spec))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["train_step", "transformer_layers"])
def test_both_forms_of_the_engine_caps_have_the_same_optimum(name: str) -> None:
    graph = load_graph(ROOT / "examples" / "graphs" / f"{name}.yaml")
    found = []
    for runs in (solver_rules.MAX_KEY_RUNS, 0):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(solver_rules, "MAX_KEY_RUNS", runs)
            found.append(_optimum(graph))
    assert found[0] == found[1]


def _optimum(graph: Graph) -> float:
    rules = default_rule_set(graph)
    allocation = allocate_ge(graph, rules)
    baseline = evaluate(graph, allocation, rules, "minimal", default_cost_table())
    dag = task_dag(graph, allocation)
    data = solve_input(graph, dag, baseline, stream_capacity(graph),
                        options=OptimalOptions(time_limit=30.0), costs=default_cost_table())
    model = build(data)
    add_rules(model, rule_constraints(rules, graph), {n: i for i, n in enumerate(dag.names)})
    found = solve(model, time_limit=30.0, seed=0, workers=1)
    assert found.status == "OPTIMAL"
    return found.objective
