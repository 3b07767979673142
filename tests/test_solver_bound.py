"""The slot relaxation of `solver.bound` and the proof it gives the chain model.

On small random DAGs with a makespan limit between the critical path and the total work, the
relaxation's bound equals the least `splits x (n + 1) + streams` over every split of the nodes
into streams run in T-order whose schedule meets the limit (found here by enumerating all of
them), given the slots `slot_count` says; its streams reach that value. Then `solved` with the
chain model cut short (it stops at its hint) still reports OPTIMAL with the value the chain
model proves on its own given the time.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from set_partitions import partitions

from streamalloc.optimal import OptimalOptions, chain_model
from streamalloc.optimal.evaluate import assignment_of
from streamalloc.solver import bound as bound_module
from streamalloc.solver.bound import relaxed_bound, slot_count
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length
from streamalloc.solver.model import SolveInput, build
from streamalloc.solver.run import solve


@st.composite
def limited_dags(draw: st.DrawFn) -> tuple[TaskDag, list[int], int]:
    n = draw(st.integers(3, 7))
    pairs = [(u, v) for v in range(n) for u in range(v)]
    edges = [p for p in pairs if draw(st.booleans())]
    names = [f"n{v}" for v in range(n)]
    dag = TaskDag.build(names, [(names[u], names[v]) for u, v in edges], ["g"] * n)
    durations = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    critical = schedule_length(dag, durations, list(range(n)))  # every node on its own stream
    work = sum(durations)
    limit = critical + draw(st.integers(0, max(0, work - critical)))
    return dag, durations, limit


def _least(dag: TaskDag, durations: list[int], limit: int) -> tuple[int, int]:
    """The least objective over all stream assignments within the limit, and its splits."""
    best = (math.inf, 0)
    for partition in partitions(list(range(dag.size))):
        streams = assignment_of(dag, [sorted(p) for p in partition])
        if schedule_length(dag, durations, streams) > limit:
            continue
        splits = sum(streams[u] != streams[v] for u, v in dag.reduction)
        best = min(best, (splits * (dag.size + 1) + len(partition), splits))
    return best  # type: ignore[return-value]


def _objective(dag: TaskDag, chains: tuple[tuple[int, ...], ...]) -> int:
    streams = assignment_of(dag, chains)
    return sum(streams[u] != streams[v] for u, v in dag.reduction) * (dag.size + 1) + len(chains)


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=limited_dags())
def test_the_relaxation_bound_is_the_least_objective(case: tuple[TaskDag, list[int], int]
                                                     ) -> None:
    dag, durations, limit = case
    least, splits = _least(dag, durations, limit)
    found = relaxed_bound(dag, durations, limit, slot_count(dag, splits), time_limit=10.0,
                          seed=0)
    assert found.bound == least
    assert _objective(dag, found.chains) == least
    assert schedule_length(dag, durations, assignment_of(dag, found.chains)) <= limit


def test_slot_count_covers_every_stream_a_split_touches() -> None:
    # two components: a -> b and c alone; one split at most: 2 x 1 + 2 slots
    dag = TaskDag.build(["a", "b", "c"], [("a", "b")], ["g"] * 3)
    assert slot_count(dag, 1) == 4
    assert slot_count(dag, 0) == 2


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=limited_dags())
def test_solved_proves_the_chain_model_optimum(case: tuple[TaskDag, list[int], int]) -> None:
    dag, durations, limit = case
    data = SolveInput(dag=dag, units=[1] * dag.size, durations=durations, capacity=None,
                      concurrency="ge", hint=[[v] for v in range(dag.size)],
                      makespan_limit=limit)
    own = solve(build(data), time_limit=10.0, seed=0, workers=1)
    assert own.status == "OPTIMAL"
    # the chain model stops at its hint; the relaxation and the second solve prove the rest
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chain_model, "CHAIN_SHARE", 1e-9)
        found, _ = chain_model.solved(None, data, [],  # type: ignore[arg-type]
                                         time_limit=10.0, options=OptimalOptions())
    assert found.status == "OPTIMAL"
    assert found.objective == found.bound == own.objective


def test_solved_runs_the_relaxation_when_the_chain_model_stops_early(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a fork of four equal branches under a limit that fits two at a time
    names = ["s", "a", "b", "c", "d", "t"]
    edges = [("s", x) for x in "abcd"] + [(x, "t") for x in "abcd"]
    dag = TaskDag.build(names, edges, ["g"] * 6)
    durations = [1, 10, 10, 10, 10, 1]
    data = SolveInput(dag=dag, units=[1] * 6, durations=durations, capacity=None,
                      concurrency="ge", hint=[[v] for v in range(6)], makespan_limit=22)
    calls = []
    monkeypatch.setattr(chain_model, "CHAIN_SHARE", 1e-9)
    monkeypatch.setattr(chain_model, "relaxed_bound",
                        lambda *a, **k: calls.append(a) or bound_module.relaxed_bound(*a, **k))
    found, earlier = chain_model.solved(None, data, [],  # type: ignore[arg-type]
                                           time_limit=10.0, options=OptimalOptions())
    assert calls, "the chain model proved its hint optimal: the relaxation never ran"
    # two streams of two branches: 2 of the 8 edges stay inside each stream
    assert (found.status, found.objective, found.bound) == ("OPTIMAL", 4 * 7 + 2, 4 * 7 + 2)
    assert earlier == (tuple((v,) for v in range(6)),)


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(case=limited_dags(), extra=st.integers(0, 3))
def test_relaxation_size_counts_the_clauses_that_keep_t_order_in_a_slot(
        case: tuple[TaskDag, list[int], int], extra: int) -> None:
    dag, durations, limit = case
    slots = slot_count(dag, extra)
    model = bound_module._Relaxation(dag, durations, limit, slots)
    clauses = sum(c.has_bool_or() for c in model.cp.proto.constraints)
    splits = sum(min(slots, u + 1) for u, _ in dag.reduction)  # one per slot of each split
    assert bound_module.relaxation_size(dag, durations, limit, slots) == clauses - splits


def test_solved_skips_a_relaxation_too_large_for_its_time(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    names = ["s", "a", "b", "c", "d", "t"]
    edges = [("s", x) for x in "abcd"] + [(x, "t") for x in "abcd"]
    dag = TaskDag.build(names, edges, ["g"] * 6)
    data = SolveInput(dag=dag, units=[1] * 6, durations=[1, 10, 10, 10, 10, 1], capacity=None,
                      concurrency="ge", hint=[[v] for v in range(6)], makespan_limit=22)
    size = bound_module.relaxation_size(dag, data.durations, 22, slot_count(dag, 8))
    assert size > 0
    monkeypatch.setattr(chain_model, "CHAIN_SHARE", 1e-9)
    monkeypatch.setattr(chain_model, "RELAXATION_CLAUSES", (size - 1) / 10.0)
    monkeypatch.setattr(chain_model, "relaxed_bound", pytest.fail)
    found, earlier = chain_model.solved(None, data, [],  # type: ignore[arg-type]
                                           time_limit=10.0, options=OptimalOptions())
    # the chain model's hint, unproven: the polish gets the time left
    assert (found.status, earlier) == ("FEASIBLE", ())
    # however long the limit, nothing above the absolute cap is stated
    monkeypatch.setattr(chain_model, "RELAXATION_CLAUSES", size)
    monkeypatch.setattr(chain_model, "RELAXATION_MOST", size - 1)
    found, earlier = chain_model.solved(None, data, [],  # type: ignore[arg-type]
                                           time_limit=1000.0, options=OptimalOptions())
    assert (found.status, earlier) == ("FEASIBLE", ())


def test_solved_skips_the_relaxation_where_the_plan_reaches_the_bounds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Streams whose plan needs the events bound's events on the streams bound's streams are
    the fewest: no relaxation can improve them."""
    names = ["s", "a", "b", "c", "d", "t"]
    edges = [("s", x) for x in "abcd"] + [(x, "t") for x in "abcd"]
    dag = TaskDag.build(names, edges, ["g"] * 6)
    data = SolveInput(dag=dag, units=[1] * 6, durations=[1, 10, 10, 10, 10, 1], capacity=None,
                      concurrency="ge", hint=[[v] for v in range(6)], makespan_limit=22)
    monkeypatch.setattr(chain_model, "CHAIN_SHARE", 1e-9)
    monkeypatch.setattr(chain_model, "relaxed_bound", pytest.fail)
    asked = []
    found, earlier = chain_model.solved(
        None, data, [], time_limit=10.0, options=OptimalOptions(),  # type: ignore[arg-type]
        proven=lambda chains, order: asked.append((chains, order)) or True)
    assert asked == [(found.chains, None)]
    assert (found.status, earlier) == ("FEASIBLE", ())
