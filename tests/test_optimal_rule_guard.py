"""The searches' rule guard (`optimal.evaluate.rule_guard`) against the full check: from an
assignment that keeps every rule, a move is allowed exactly when the moved assignment keeps
every rule, also for the rule forms that depend on nodes they do not name (a stream's opener
for an engine cap, whoever joins a dedicated stream). Each fails on a guard that checks only
the constraints naming a moved node."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streamalloc import api
from streamalloc.cli import main
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.optimal.evaluate import placement_of, rule_guard, task_dag
from streamalloc.rules.check import broken
from streamalloc.rules.constraints import DedicatedStream, StreamCap, rule_constraints

ROOT = Path(__file__).resolve().parents[1]
TRAIN_STEP = ROOT / "examples" / "graphs" / "train_step.yaml"


@pytest.mark.parametrize("rules, form", [
    (None, StreamCap),
    (ROOT / "examples" / "rules" / "allreduce_own_stream.yaml", DedicatedStream),
])
def test_a_move_is_allowed_exactly_when_every_rule_holds(rules: Path | None,
                                                          form: type) -> None:
    graph = api.read_graph(TRAIN_STEP)
    rule_set = api.load_rule_set(rules) or api.default_rule_set(graph)
    constraints = rule_constraints(rule_set, graph)
    assert any(isinstance(c, form) for c in constraints)
    allocation = allocate_ge(graph, rule_set)
    dag = task_dag(graph, allocation)
    start = [allocation.nodes[name].stream for name in dag.names]
    assert not broken(constraints, graph, placement_of(dag, start))
    guard = rule_guard(graph, dag, constraints)
    rng = random.Random(7)
    verdicts = set()
    current = start  # a walk over assignments that keep every rule, which mixes engines
    for _ in range(1000):
        trial = list(current)
        moved = rng.sample(range(dag.size), rng.choice((1, 2)))
        for v in moved:
            trial[v] = rng.randrange(max(start) + 2)
        holds = not broken(constraints, graph, placement_of(dag, trial))
        assert guard(trial, moved) == holds, [dag.names[v] for v in moved]
        verdicts.add(holds)
        if holds:
            current = trial
    assert verdicts == {True, False}  # both kinds of move were tried


def test_the_makespan_objective_keeps_an_engine_cap_a_non_member_opened(
        tmp_path: Path) -> None:
    """GE's rules cap AI Core at one stream in the example's graph. The polish moved the HCCL
    node that opened a stream away, left an AI Core node its opener, and broke the cap."""
    plan = tmp_path / "plan.json"
    assert main(["allocate", str(TRAIN_STEP), "--mode", "optimal", "--objective", "makespan",
                 "--time-limit", "0.5", "-o", str(plan)]) == 0
    assert main(["verify", str(TRAIN_STEP), str(plan)]) == 0
