"""Streams of the chain model across graphs (`SolveInput.span_graphs`, solved where the model
with each stream in one graph has no solution): a subgraph's nodes follow their parent node in
T-order, and a stream may take nodes of several graphs, as ge mode's streams do. An engine cap
then counts, in its graph, the streams whose least node of that graph is one of its engine's:
the model must agree with `rules.check`, which the searches and the verifier use, in both
forms of the caps (a domain of keys, or Booleans)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_heuristic_properties import build as build_graph
from test_heuristic_properties import models

from streamalloc.errors import AllocationInfeasible, RuleConflictError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions
from streamalloc.optimal.evaluate import assignment_of, breaks, evaluate, task_dag
from streamalloc.optimal.model_input import solve_input, stream_capacity
from streamalloc.rules import default_rule_set
from streamalloc.rules.constraints import AttachedStreams, rule_constraints
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.solver import rules as solver_rules
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import build
from streamalloc.solver.rules import add_rules
from streamalloc.solver.run import solve

ROOT = Path(__file__).resolve().parents[1]
TRAIN_STEP = ROOT / "examples" / "graphs" / "train_step.yaml"


@settings(max_examples=40, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(spec=models("multi"), booleans=st.booleans())
def test_the_models_streams_hold_the_rules_as_the_checker_counts_them(
        spec: object, booleans: bool) -> None:
    graph = build_graph(spec)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        if booleans:
            patch.setattr(solver_rules, "MAX_KEY_RUNS", 0)
        _solved_within_the_rules(graph)


def test_a_stream_of_the_example_training_step_spans_its_graphs() -> None:
    """Under GE's rules (one AI Core stream per graph), the fewest split pairs (1) on the
    fewest streams put the loop's condition and body on one stream: 3 streams, where each
    graph on streams of its own needs 4."""
    chains, dag = _solved_within_the_rules(load_graph(TRAIN_STEP))
    assert len(chains) == 3
    assert any(len({dag.graphs[v] for v in chain}) == 2 for chain in chains)


def _solved_within_the_rules(graph: Graph) -> tuple[tuple[tuple[int, ...], ...], TaskDag]:
    rules = default_rule_set(graph)
    try:
        allocation = allocate_ge(graph, rules)
        baseline = evaluate(graph, allocation, rules, "minimal", default_cost_table())
    except (RuleConflictError, AllocationInfeasible):
        pytest.skip("ge mode has no plan of this graph")
    dag = task_dag(graph, allocation)
    data = replace(solve_input(graph, dag, baseline, stream_capacity(graph),
                               options=OptimalOptions(time_limit=2.0),
                               costs=default_cost_table()), span_graphs=True)
    constraints = [c for c in rule_constraints(rules, graph)
                   if not isinstance(c, AttachedStreams)]  # given with the allocation, after
    model = build(data)
    add_rules(model, constraints, {n: i for i, n in enumerate(dag.names)})
    found = solve(model, time_limit=2.0, seed=0, workers=1)
    assert found.status in ("OPTIMAL", "FEASIBLE")
    streams = assignment_of(dag, found.chains)
    assert not breaks(graph, dag, constraints, streams)
    return found.chains, dag
