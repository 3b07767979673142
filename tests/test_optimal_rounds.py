"""CP-SAT's rounds under the events objective (`optimal.chain_model.solved_in_rounds`): on a model
above 320 nodes it solves in rounds of a fifth of the limit, each from the streams the last
found, and stops at the first round without progress over its hint; the polish gets the time
they left."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal, chain_model, polishing
from streamalloc.rules import default_rule_set
from streamalloc.solver.bound import MAX_NODES
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import SolveInput, hint_objective
from streamalloc.solver.run import SolveOutput
from streamalloc.verify import verify_plan

DATA = Path(__file__).parent / "data" / "onnx"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
SIZE = MAX_NODES + 30


def two_chains(size: int = SIZE) -> SolveInput:
    """`size` nodes in two independent chains (even and odd), hinted as one stream each."""
    names = [f"n{i}" for i in range(size)]
    pairs = [(names[i], names[i + 2]) for i in range(size - 2)]
    dag = TaskDag.build(names, pairs, ["g"] * size)
    hint = [list(range(0, size, 2)), list(range(1, size, 2))]
    return SolveInput(dag=dag, units=[1] * size, durations=[1] * size, capacity=None,
                      concurrency="ge", hint=hint)


def test_the_hint_objective_counts_its_splits_then_its_streams() -> None:
    data = two_chains()
    assert hint_objective(data) == 2  # no split, two streams
    merged = replace(data, hint=[list(range(SIZE))])  # one stream: every edge stays on it
    assert hint_objective(merged) == 1
    split = replace(data, hint=[[0, 2], [v for v in range(SIZE) if v not in (0, 2)]])
    assert hint_objective(split) == 1 * (SIZE + 1) + 2  # the edge 2 -> 4 changes streams
    assert hint_objective(replace(split, event_limit=0)) is None  # over the limit: repaired
    assert hint_objective(replace(data, stream_limit=1)) is None


def outputs(*answers: SolveOutput) -> tuple[list[tuple[float, bool, object]], object]:
    """A stand-in for the chain model's solve: the given answers in turn, and the time
    limit, presolve and hint of each call."""
    calls: list[tuple[float, bool, object]] = []
    queue = list(answers)

    def solve(data: SolveInput, constraints: object, *, time_limit: float, seed: int,
              workers: int, presolve: bool = True) -> SolveOutput:
        calls.append((time_limit, presolve, [list(c) for c in data.hint]))
        return queue.pop(0)

    return calls, solve


def answer(status: str, objective: float = 0.0, chains: tuple[tuple[int, ...], ...] = ((0,),),
           time: float = 2.0) -> SolveOutput:
    return SolveOutput(chains if status in ("OPTIMAL", "FEASIBLE") else (), status, objective,
                       0.0, time, 0)


@pytest.mark.parametrize(("first", "rounds"), [
    (answer("FEASIBLE", objective=2.0), 1),  # found only its hint: stop
    (answer("OPTIMAL", objective=1.0), 1),  # proved
    (answer("UNKNOWN"), 1),  # found nothing from a hint within the limits: the hint starts
    (answer("FEASIBLE", objective=1.5, chains=((0, 1),)), 2),  # progress: a round from it
])
def test_the_rounds_stop_without_progress(monkeypatch: pytest.MonkeyPatch, first: SolveOutput,
                                          rounds: int) -> None:
    stalled = answer("FEASIBLE", objective=1.5, chains=((1,),))
    calls, solve = outputs(first, stalled)
    monkeypatch.setattr(chain_model, "chain_solve", solve)
    data = two_chains()
    found = chain_model.solved_in_rounds(data, [], time_limit=10.0, seed=0, workers=1)
    assert [limit for limit, _, _ in calls] == [10.0 * chain_model.ROUND_SHARE] * rounds
    assert not any(presolve for _, presolve, _ in calls)  # each round starts at its hint
    assert calls[0][2] == data.hint
    assert found == replace(first, deterministic_time=2.0 * rounds)
    if rounds == 2:
        assert calls[1][2] == [[0, 1]]  # the second round starts where the first ended


def test_the_rounds_run_to_the_limit_while_they_progress(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    better = [answer("FEASIBLE", objective=1.9 - k / 10, chains=((k,),), time=2.5)
              for k in range(4)]
    calls, solve = outputs(*better)
    monkeypatch.setattr(chain_model, "chain_solve", solve)
    found = chain_model.solved_in_rounds(two_chains(), [], time_limit=10.0, seed=0, workers=1)
    assert [limit for limit, _, _ in calls] == [2.0, 2.0, 2.0, 2.0]  # 10.0 spent after 4
    assert found == replace(better[-1], deterministic_time=10.0)


def test_a_hint_over_a_limit_is_solved_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT repairs a hint over the stream limit, with its presolve, in one solve."""
    calls, solve = outputs(answer("FEASIBLE", objective=3.0))
    monkeypatch.setattr(chain_model, "chain_solve", solve)
    data = replace(two_chains(), stream_limit=1)
    found = chain_model.solved_in_rounds(data, [], time_limit=10.0, seed=0, workers=1)
    assert [(limit, presolve) for limit, presolve, _ in calls] == [(10.0, True)]
    assert found.status == "FEASIBLE"


def test_small_models_are_solved_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, solve = outputs(answer("FEASIBLE", objective=2.0))
    monkeypatch.setattr(chain_model, "chain_solve", solve)
    chain_model.solved_in_rounds(two_chains(MAX_NODES), [], time_limit=10.0, seed=0, workers=1)
    assert [(limit, presolve) for limit, presolve, _ in calls] == [(10.0, True)]


def test_the_polish_gets_the_time_cp_sat_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """BERT base (426 streamed nodes): CP-SAT stops after its probe, a fifth of the limit,
    and the polish's budget of tries grows by the rest (without the events bound, which
    proves its one stream minimal before any search)."""
    monkeypatch.setattr("streamalloc.optimal.driver.events_bound", lambda *_, **__: None)
    budgets: list[int] = []
    budget_of = polishing.polish_budget

    def counted(*args: object, **kwargs: object) -> int:
        budgets.append(budget_of(*args, **kwargs))  # type: ignore[arg-type]
        return budgets[-1]

    monkeypatch.setattr(polishing, "polish_budget", counted)
    graph = load_graph(DATA / "bert_base.onnx").with_options(PARALLEL)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    solver = report.to_json()
    assert solver["status"] == "FEASIBLE" and solver["deterministic_time"] <= 0.21
    assert solver["events_final"] == 1 < solver["baseline_events"]
    per_second = min(polishing.POLISH_PER_SECOND,
                     polishing.POLISH_NODES_PER_SECOND / 426)
    assert budgets == [int((2.0 - solver["deterministic_time"]) * per_second)]
    assert verify_plan(graph, plan.to_json(), rules=default_rule_set(graph)).exit_code == 0
