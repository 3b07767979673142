"""Packings of the tasks on their engines' units (`optimal/packing.py`): the serial schedule and
CP-SAT's packing keep every dependency (with its delay) and never use more units of an engine
than it has, on random graphs; CP-SAT's packing is never longer than the serial schedule it
starts from; the streams dealt from a packing cover every node once, run it in order of start,
keep to the stream limit (and to T-order where asked); on a graph whose narrow task arrives
first, the packing's start runs faster than the list schedule's, because it lets the wide chain
go first; above the solver's size cap the packings are serial schedules, CP-SAT not called."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from node_graphs import graph_of

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal import makespan_starts
from streamalloc.optimal import packing as packing_module
from streamalloc.optimal.evaluate import assignment_of, evaluate, task_dag
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.list_schedule import list_schedule_chains, list_schedule_in_order
from streamalloc.optimal.options import TIME_SCALE, OptimalOptions
from streamalloc.optimal.order import Orders
from streamalloc.optimal.packing import LP_MAX_INTERVALS, Packing, packing, streams_of_packing
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.node_tasks import NodeTask, graph_node_tasks, node_task
from streamalloc.solver.dag import TaskDag

COSTS = default_cost_table()


def _random_graph(tmp_path: Path, seed: int) -> Graph:
    """Each node reads one to three earlier ones, with a random time and block dim (some on
    the AI CPU, some without device work)."""
    rng = random.Random(seed)
    nodes, names = ["{name: x, type: Data}"], []
    for i in range(rng.randint(5, 40)):
        inputs = ", ".join(rng.sample(names, min(len(names), rng.choice([1, 2, 3]))) or ["x"])
        kind = rng.random()
        if kind < 0.1:
            nodes.append(f"{{name: n{i}, type: Reshape, inputs: [{inputs}], task_count: 0}}")
        elif kind < 0.25:
            nodes.append(f"{{name: n{i}, type: Where, inputs: [{inputs}], "
                         f"engine: DNN_VM_AICPU_ASCEND, cost_us: {rng.choice([3, 9])}}}")
        else:
            nodes.append(f"{{name: n{i}, type: Add, inputs: [{inputs}], "
                         f"cost_us: {rng.choice([1, 3, 8, 20])}, "
                         f"attrs: {{block_dim: {rng.choice([1, 8, 16, 20, 32])}}}}}")
        names.append(f"n{i}")
    return graph_of(tmp_path, f"random{seed}",
                  [*nodes, f"{{name: out, type: NetOutput, inputs: [{', '.join(names)}]}}"])


def _tasks(graph: Graph, dag: TaskDag) -> list[NodeTask]:
    tasks = graph_node_tasks(graph, COSTS)
    return [tasks[name] for name in dag.names]


def _dag(graph: Graph) -> TaskDag:
    return task_dag(graph, allocate_ge(graph, default_rule_set(graph)))


def _check_packing(graph: Graph, dag: TaskDag, packed: Packing,
                   delays: dict[tuple[int, int], int]) -> None:
    """Dependencies (with delays) and units hold; each end is its start plus its time."""
    model = CostModel(graph, COSTS)
    tasks = [node_task(graph, model, graph.node(n)) for n in dag.names]
    for v, (_, time, _) in enumerate(tasks):
        assert packed.ends[v] - packed.starts[v] == -(-time * TIME_SCALE // 1)
    for u, v in dag.edges:
        assert packed.starts[v] >= packed.ends[u] + delays.get((u, v), 0)
    for v, (engine, _, width) in enumerate(tasks):  # the use where each task starts
        if engine is None or not width:
            continue
        at = packed.starts[v]
        used = sum(w for u, (e, _, w) in enumerate(tasks)
                   if e == engine and packed.starts[u] <= at < packed.ends[u])
        assert used <= COSTS.engine(engine).units


def _delays(dag: TaskDag, seed: int) -> dict[tuple[int, int], int]:
    rng = random.Random(seed)
    return {edge: rng.choice([0, 20]) for edge in dag.reduction}


@pytest.mark.parametrize("seed", range(25))
def test_packings_keep_dependencies_and_units(tmp_path: Path, seed: int) -> None:
    graph = _random_graph(tmp_path, seed)
    dag = _dag(graph)
    delays = _delays(dag, seed)
    tasks = _tasks(graph, dag)
    serial = packing(dag, tasks, COSTS, time_limit=0.0, seed=0, delays=delays)
    solved = packing(dag, tasks, COSTS, time_limit=0.2, seed=0, delays=delays)
    _check_packing(graph, dag, serial, delays)
    _check_packing(graph, dag, solved, delays)
    assert max(solved.ends, default=0) <= max(serial.ends, default=0)
    assert solved == packing(dag, tasks, COSTS, time_limit=0.2, seed=0,
                             delays=delays)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("in_t_order", [False, True])
def test_streams_of_a_packing(tmp_path: Path, seed: int, in_t_order: bool) -> None:
    graph = _random_graph(tmp_path, seed)
    dag = _dag(graph)
    packed = packing(dag, _tasks(graph, dag), COSTS, time_limit=0.0, seed=0)
    for limit in (2, 1000):
        dealt = streams_of_packing(dag, packed, limit, in_t_order=in_t_order)
        if dealt is None:  # every stream's last node later in T-order than the next node
            assert in_t_order and limit == 2
            continue
        chains, order = dealt
        assert len(chains) <= limit
        assert sorted(v for chain in chains for v in chain) == list(range(dag.size))
        assert [packed.starts[v] for v in order] == sorted(packed.starts)
        position = {v: i for i, v in enumerate(order)}
        assert all(position[u] < position[v] for u, v in dag.edges)
        for chain in chains:
            assert [position[v] for v in chain] == sorted(position[v] for v in chain)
            if in_t_order:
                assert list(chain) == sorted(chain)
        if limit == 1000 and not in_t_order:  # no stream runs two nodes at once
            for chain in chains:
                assert all(packed.ends[u] <= packed.starts[v] for u, v in itertools.pairwise(chain))


# x -> a (16 cores, 20 us) arrives with p (1 core); p -> b -> c (all 32 cores each) -> q (8
# cores, 20 us). The device starts a and p at once, and b waits for a to free its cores; the
# packing runs b and c first and a beside q.
NARROW_FIRST = [
    "{name: x, type: Data}",
    "{name: a, type: Relu, inputs: [x], cost_us: 20, attrs: {block_dim: 16}}",
    "{name: p, type: Relu, inputs: [x], cost_us: 2, attrs: {block_dim: 1}}",
    "{name: b, type: Relu, inputs: [p], cost_us: 10, attrs: {block_dim: 32}}",
    "{name: c, type: Relu, inputs: [b], cost_us: 10, attrs: {block_dim: 32}}",
    "{name: q, type: Relu, inputs: [c], cost_us: 20, attrs: {block_dim: 8}}",
    "{name: out, type: NetOutput, inputs: [a, q]}",
]


def test_the_packing_lets_the_wide_chain_go_first(tmp_path: Path) -> None:
    graph = graph_of(tmp_path, "narrow_first", NARROW_FIRST)
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    dag = task_dag(graph, baseline.allocation)
    orders = Orders.of(graph)
    assert orders is not None
    evaluator = Evaluator(graph, dag, baseline, OptimalOptions(objective="makespan"), COSTS,
                          orders=orders)
    packed = packing(dag, _tasks(graph, dag), COSTS, time_limit=1.0, seed=0)
    index = {name: v for v, name in enumerate(dag.names)}
    assert packed.starts[index["a"]] >= packed.ends[index["c"]]
    dealt = streams_of_packing(dag, packed, 1000, in_t_order=False)
    assert dealt is not None
    chains, sequence = dealt
    ran = evaluator.outcome(assignment_of(dag, chains),
                            orders.following([dag.names[v] for v in sequence]))
    assert ran is not None  # verified
    listed = [evaluator.outcome(assignment_of(dag, list_schedule_chains(graph, dag, COSTS, 1000)))]
    chains_in_order, placed = list_schedule_in_order(graph, dag, COSTS, 1000)
    listed.append(evaluator.outcome(assignment_of(dag, chains_in_order),
                                    orders.following([dag.names[v] for v in placed])))
    assert all(o is not None and ran.makespan_us < o.makespan_us - 10 for o in listed)


def test_above_the_solver_cap_the_packings_are_serial_schedules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = graph_of(tmp_path, "narrow_first", NARROW_FIRST)
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    dag = task_dag(graph, baseline.allocation)
    evaluator = Evaluator(graph, dag, baseline, OptimalOptions(objective="makespan"), COSTS,
                          orders=Orders.of(graph))
    monkeypatch.setattr(makespan_starts, "PACKING_SOLVER_NODES", dag.size - 1)

    def no_solver(*_: object) -> None:
        raise AssertionError("CP-SAT ran above the cap")

    monkeypatch.setattr(packing_module, "interruptible_solve", no_solver)
    found, spent = makespan_starts.packed_starts(graph, dag, evaluator)
    assert spent == 0.0
    serial = packing(dag, _tasks(graph, dag), COSTS, time_limit=0.0, seed=0)
    first = streams_of_packing(dag, serial, 1000, in_t_order=False)
    assert first is not None
    assert len(found) == 2
    assert found[0][0] == first[0]


@pytest.mark.parametrize("time_limit", [2.0, 10.0, 300.0])
def test_a_packing_takes_at_most_its_share_and_half_a_second(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, time_limit: float) -> None:
    # a longer --time-limit keeps the starts of a shorter one from the default up, so the
    # makespan objective only searches longer from the same fastest start
    graph = graph_of(tmp_path, "narrow_first", NARROW_FIRST)
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", COSTS)
    dag = task_dag(graph, baseline.allocation)
    evaluator = Evaluator(graph, dag, baseline,
                          OptimalOptions(objective="makespan", time_limit=time_limit), COSTS,
                          orders=Orders.of(graph))
    limits: list[float] = []
    solve = makespan_starts.packing

    def recorded(*args: object, time_limit: float, **kwargs: object) -> object:
        limits.append(time_limit)
        return solve(*args, time_limit=time_limit, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(makespan_starts, "packing", recorded)
    makespan_starts.packed_starts(graph, dag, evaluator)
    share = min(time_limit * makespan_starts.PACKING_SHARE, makespan_starts.PACKING_MOST)
    assert limits and all(limit == pytest.approx(share) for limit in limits)
    assert max(limits) <= 0.5


@pytest.mark.parametrize("count", [LP_MAX_INTERVALS, LP_MAX_INTERVALS + 1])
def test_a_packing_of_many_intervals_runs_without_the_lp(monkeypatch: pytest.MonkeyPatch,
                                                          count: int) -> None:
    """Pairs of AI Core tasks, each pair a dependency: up to LP_MAX_INTERVALS intervals CP-SAT
    packs with its LP relaxation (linearization level 1, its default), above without it; the
    packing keeps the dependencies and the units either way."""
    names = [f"t{i}" for i in range(count)]
    dag = TaskDag.build(names, [(names[i], names[i + 1]) for i in range(0, count - 1, 2)],
                        ["g"] * count)
    tasks: list[NodeTask] = [("AIcoreEngine", 1.0 + i % 3, 16) for i in range(count)]
    levels: list[int] = []
    solve = packing_module.interruptible_solve

    def recorded(solver: object, cp: object) -> object:
        levels.append(solver.parameters.linearization_level)  # type: ignore[attr-defined]
        return solve(solver, cp)  # type: ignore[arg-type]

    monkeypatch.setattr(packing_module, "interruptible_solve", recorded)
    packed = packing(dag, tasks, COSTS, time_limit=0.05, seed=0)
    assert levels == [1 if count <= LP_MAX_INTERVALS else 0]
    assert all(packed.starts[i + 1] >= packed.ends[i] for i in range(0, count - 1, 2))
    events = sorted([(t, 16) for t in packed.starts] + [(t, -16) for t in packed.ends],
                    key=lambda e: (e[0], e[1]))
    used = 0
    for _, delta in events:
        used += delta
        assert used <= 32
