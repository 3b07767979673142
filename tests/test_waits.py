"""Orders that batch each stream's waits (`optimal/waits.py`).

Objective: with the streams fixed, a stream behind its producers (AllReduces behind a backward
chain) waits once for everything that finished, not for each producer, and a stream ahead of
its producer (updates behind the AllReduces) waits while its slack lasts; minimal sync of the
plan in that order needs fewer events than in T-order (counted by the sync layer, not by the
simulation). Every simulated run is a topological order whose times respect the
dependencies and the streams; on a small training step the events objective ends at such an
order with fewer events than without it, verified.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_models import LIGHT

from streamalloc import api
from streamalloc.ir import DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.training import training_step
from streamalloc.optimal import (
    OptimalOptions,
    allocate_optimal,
    aside_first,
    driver,
    fewest_events,
    search,
    task_dag,
)
from streamalloc.optimal.evaluate import Measured
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.found import Found
from streamalloc.optimal.order import Orders
from streamalloc.optimal.waits import Assignment, WaitsRun, latest_starts, waits_batched
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.node_tasks import graph_node_tasks
from streamalloc.solver.dag import TaskDag
from streamalloc.verify import verify_plan

LAYERS = 6
LATENCY = 0.5
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def _step(*, updates: bool) -> Graph:
    """A backward chain on stream 0 (1 us per node), an AllReduce of each node's output on
    stream 1 (10 us each) and, with `updates`, an update of each AllReduce on stream 0."""
    builder = GraphBuilder("step")
    builder.add_node("x", "Data", stream_id=-1)
    previous = "x"
    for k in range(LAYERS):
        builder.add_node(f"g{k}", "Relu", inputs=[DataInput(previous)], stream_id=0, cost_us=1)
        builder.add_node(f"a{k}", "Relu", inputs=[DataInput(f"g{k}")], stream_id=1, cost_us=10)
        if updates:
            builder.add_node(f"u{k}", "Relu", inputs=[DataInput(f"a{k}")], stream_id=0,
                             cost_us=1)
        previous = f"g{k}"
    return builder.build()


def _assignment(graph: Graph) -> Assignment:
    allocation = api.allocate(graph, mode="preset")
    dag = task_dag(graph, allocation)
    times = [float(graph.node(name).cost_us or 0.0) for name in dag.names]
    return Assignment(dag, [allocation.stream(n) for n in dag.names], times, LATENCY)


def _events(graph: Graph, assignment: Assignment, run: WaitsRun | None) -> int:
    """Events and notifies of the preset plan under minimal sync, in the run's order."""
    if run is not None:
        orders = Orders.of(graph)
        assert orders is not None
        graph = graph.reordered(orders.following(
            [assignment.dag.names[v] for v in run.placed]))
    plan = api.plan(graph, mode="preset", sync="minimal")
    verify_plan(graph, plan.to_json()).raise_for_failure()
    return plan.event_count + plan.notify_count


def _sequence(assignment: Assignment, run: WaitsRun, stream: int) -> list[str]:
    return [assignment.dag.names[v] for v in run.placed if assignment.streams[v] == stream]


def test_a_stream_behind_its_producers_waits_once_for_all_that_finished() -> None:
    graph = _step(updates=False)
    assignment = _assignment(graph)
    run = waits_batched(assignment, urgent_first=True)
    # a0 waits for g0; when it ends (11.5 us) the chain is done: a5 waits for g5, which
    # covers the others
    assert _sequence(assignment, run, 1) == ["a0", "a5", "a1", "a2", "a3", "a4"]
    assert _events(graph, assignment, None) == LAYERS
    assert _events(graph, assignment, run) == 2


def test_a_stream_ahead_of_its_producer_waits_while_its_slack_lasts() -> None:
    graph = _step(updates=True)
    assignment = _assignment(graph)
    first = waits_batched(assignment, urgent_first=True)
    # without latest starts each update waits for its AllReduce as soon as it ends
    assert _events(graph, assignment, first) == 2 + LAYERS
    latest = latest_starts(assignment, first, first.makespan)
    run = waits_batched(assignment, urgent_first=True, latest=latest)
    updates = _sequence(assignment, run, 0)[LAYERS:]
    # the AllReduces run a0, a5, a1..a4 (as above) and end at 11.5, 22, 32, 42, 52, 62 us;
    # the updates may wait until 57.5 us (6 us of them before the end): then u3 waits for a3
    # and covers all but u4, which waits for a4
    assert updates == ["u3", "u0", "u1", "u2", "u5", "u4"]
    assert _events(graph, assignment, run) == 4
    # the trade: the last update starts behind the batch, 1 us later than its latest start
    assert (first.makespan, run.makespan) == (63.5, 64.5)


@st.composite
def _assignments(draw: st.DrawFn) -> Assignment:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    size = rng.randint(1, 40)
    edges = [(u, v) for v in range(size) for u in range(v) if rng.random() < 3 / (v + 1)]
    dag = TaskDag.build([f"n{i}" for i in range(size)], [(f"n{u}", f"n{v}") for u, v in edges],
                        ["g"] * size)
    streams = [rng.randrange(rng.randint(1, 5)) for _ in range(size)]
    times = [rng.choice((0.0, rng.uniform(0.5, 20.0))) for _ in range(size)]
    return Assignment(dag, streams, times, rng.choice((0.0, 1.0)))


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(assignment=_assignments(), urgent_first=st.booleans(),
       share=st.sampled_from([None, -0.5, 0.0, 1.0]))
def test_every_run_is_a_schedule_of_its_streams(assignment: Assignment, urgent_first: bool,
                                                share: float | None) -> None:
    first = waits_batched(assignment, urgent_first=urgent_first)
    run = first if share is None else waits_batched(
        assignment, urgent_first=urgent_first,
        latest=latest_starts(assignment, first, first.makespan * (1 + share)))
    dag, streams, times = assignment.dag, assignment.streams, assignment.times
    assert sorted(run.placed) == list(range(dag.size))
    position = {v: i for i, v in enumerate(run.placed)}
    start = [run.finish[v] - times[v] for v in range(dag.size)]
    for u, v in dag.edges:
        assert position[u] < position[v]
        assert start[v] >= run.finish[u] - 1e-9
    ends: dict[int, float] = {}
    for v in run.placed:  # a stream runs one node at a time, in the order placed
        assert start[v] >= ends.get(streams[v], 0.0) - 1e-9
        ends[streams[v]] = run.finish[v]


def test_the_events_objective_batches_the_waits_of_a_training_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = api.with_options(training_step(load_graph(LIGHT / "light_inception_v1.onnx")),
                             PARALLEL)
    options = OptimalOptions(time_limit=1.0)
    plan, report = allocate_optimal(graph, None, options)
    assert "+waits" in report.phase  # (then `+grouped`: its AllReduces back to back)
    document = plan.to_json()
    verify_plan(graph, document).raise_for_failure()
    run = emulate(graph, document)
    assert run.status == "ok" and run.makespan_us <= report.baseline_makespan_us + 1e-6
    # at a bound of its own events, the check of the bounds runs the plan in its own order
    # (before CP-SAT, `aside_first`, or after it)
    checks: list[tuple[bool, bool]] = []  # (an order given, the evaluator can run it)
    at_floor = search.at_floor

    def checked(evaluator: Evaluator, chains: tuple[tuple[int, ...], ...],
                order: tuple[str, ...] | None, *, events_floor: int | None,
                measured: dict[Found, Measured | None] | None = None) -> bool:
        checks.append((order is not None, evaluator.orders is not None))
        return at_floor(evaluator, chains, order, events_floor=events_floor,
                        measured=measured)

    with monkeypatch.context() as patch:
        patch.setattr(search, "at_floor", checked)
        patch.setattr(aside_first, "at_floor", checked)
        patch.setattr(driver, "events_bound", lambda *_, **__: report.events_final)
        allocate_optimal(graph, None, options)
    ordered = [runs for given, runs in checks if given]
    assert ordered and all(ordered)
    monkeypatch.setattr(fewest_events, "WAITS_NODES", 0)
    _, without = allocate_optimal(graph, None, options)
    # measured: 31 events against 94 (36 before the grouped large tasks)
    assert report.events_final <= 0.6 * without.events_final


def test_each_engine_with_a_tenth_of_the_work_aside_is_an_assignment_to_batch() -> None:
    graph = api.with_options(training_step(load_graph(LIGHT / "light_squeezenet.onnx")),
                             PARALLEL)
    dag = task_dag(graph, api.allocate(graph))
    engines = [graph.node(name).engine for name in dag.names]
    tasks = graph_node_tasks(graph, default_cost_table())
    times = [tasks[name][1] for name in dag.names]
    work = {e: sum(t for f, t in zip(engines, times, strict=True) if f == e)
            for e in dict.fromkeys(engines)}
    heavy = [e for e, w in work.items() if w >= 0.1 * sum(times)]
    assert 1 <= len(heavy) < len(work)  # the GE-local and AI CPU nodes are too few
    found = fewest_events.engines_aside(graph, dag, times)
    expected = []
    def reached(first: list[int]) -> set[int]:
        found = set(first)
        for u, v in dag.edges:  # in T-order of u
            if u in found:
                found.add(v)
        return found

    for engine in heavy:  # its nodes aside; then with the nodes after a quarter, after all;
        # then its first tenths with the nodes after them
        aside = [v for v in range(dag.size) if engines[v] == engine]
        expected.append(frozenset(aside))
        for first in (aside[:math.ceil(len(aside) / 4)], aside):
            followed = set(aside) | reached(first)
            if len(followed) < dag.size:  # else one stream
                expected.append(frozenset(followed))
        for tenths in range(1, 10):
            led = reached(aside[:math.ceil(tenths * len(aside) / 10)])
            if len(led) < dag.size:
                expected.append(frozenset(led))
    expected = list(dict.fromkeys(expected))
    assert len(found) == len(expected) > len(heavy)  # the HCCL nodes have consumers
    for chains, aside in zip(found, expected, strict=True):
        assert len(chains) == 2 and sorted(aside) in map(list, chains)
    single = _step(updates=False)
    single_dag = task_dag(single, api.allocate(single, mode="preset"))
    assert fewest_events.engines_aside(single, single_dag, [1.0] * single_dag.size) == []


def test_each_assignment_and_start_is_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice after the search meets the assignments `aside_first` batched (the heavy
    engines aside) again: their orders are reused, not simulated again."""
    graph = api.with_options(training_step(load_graph(LIGHT / "light_squeezenet.onnx")),
                             PARALLEL)
    runs: dict[tuple[object, ...], int] = {}
    simulate = fewest_events.waits_batched

    def counted(assignment: Assignment, *, urgent_first: bool,
                latest: list[float] | None = None) -> WaitsRun:
        key = (tuple(assignment.streams), urgent_first, None if latest is None else tuple(latest))
        runs[key] = runs.get(key, 0) + 1
        return simulate(assignment, urgent_first=urgent_first, latest=latest)

    monkeypatch.setattr(fewest_events, "waits_batched", counted)
    _, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.2))
    assert report.phase.startswith("one-stream+engine+waits")  # (the choice after the search)
    assert runs and max(runs.values()) == 1
