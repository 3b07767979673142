"""Execution orders of the makespan objective: a task runs before an unrelated one on its stream.

Invariants (style principle 9): a reorder is a permutation that keeps every edge forward, and
refuses to run a node before its own ancestor; the list schedule's placement order, a stream
taking any idle task, is kept in the plan's order; a plan synchronized in another order verifies
and emulates on the user's graph (the verifier and the emulator never see the order); the
search takes the reorder where a task waited on its stream for a task it does not depend on;
on random graphs the makespan objective's plan verifies (under GE's rules too, rules included),
runs without a deadlock and is never slower than its baseline.
"""

from __future__ import annotations

import random
from pathlib import Path

import onnx
import pytest
from every_plan import ge_evaluator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_heuristic_properties import build, models

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.critical import Reorder, Search, _score, critical_chain
from streamalloc.optimal.evaluate import Measured, assignment_of
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.list_schedule import list_schedule_in_order
from streamalloc.optimal.moves import Branches
from streamalloc.optimal.order import Orders
from streamalloc.rules import builtin_rules, default_rule_set
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.critical_chain import STREAM, UNITS
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
OPTIONS = OptimalOptions(objective="makespan", time_limit=0.5)
LIMITED_EVENTS = 60  # random plans of Inception v1 on 2, 3 and 8 streams fall either side
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}

# s and q1 share a stream and s comes first in T-order, so q1 (and the long q2 behind it, on
# another stream) waits 30 us for an unrelated task
BLOCKED = """\
format: streamalloc.graph/v1
name: blocked
nodes:
  - {name: x, type: Data}
  - {name: s, type: Relu, inputs: [x], cost_us: 30}
  - {name: q1, type: Relu, inputs: [x], cost_us: 5}
  - {name: q2, type: Relu, inputs: [q1], cost_us: 40}
  - {name: j, type: Add, inputs: [s, q2], cost_us: 5}
  - {name: out, type: NetOutput, inputs: [j]}
"""


@pytest.fixture()
def blocked(tmp_path: Path) -> Graph:
    path = tmp_path / "blocked.yaml"
    path.write_text(BLOCKED, encoding="utf-8")
    return load_graph(path)


def _evaluator(graph: Graph) -> Evaluator:
    return ge_evaluator(graph, OPTIONS, default_cost_table())


def _is_topological(graph: Graph, order: tuple[str, ...]) -> bool:
    position = {name: i for i, name in enumerate(order)}
    return sorted(order) == sorted(graph.root.index) and all(
        position[node.name] < position[succ]
        for node in graph.root.nodes for succ in graph.root.successors(node.name))


def test_a_reorder_keeps_every_edge_forward() -> None:
    graph = load_graph(LIGHT / "light_squeezenet.onnx")
    orders = Orders.of(graph)
    assert orders is not None and orders.start == tuple(n.name for n in graph.root.nodes)
    rng, order, changed = random.Random(5), orders.start, 0
    for _ in range(200):
        u, v = sorted(rng.sample(range(len(order)), 2))
        moved = orders.before(order, order[v], order[u])
        if moved is None:  # u is an ancestor of v
            assert order[u] in _ancestors(graph, order[v])
            continue
        assert order[u] not in _ancestors(graph, order[v])
        assert moved.index(order[v]) < moved.index(order[u])
        assert _is_topological(graph, moved)
        order, changed = moved, changed + 1
    assert changed > 20


def test_the_list_schedules_order_is_kept_and_topological() -> None:
    graph = load_graph(LIGHT / "light_inception_v1.onnx")
    evaluator = _evaluator(graph)
    dag, orders = evaluator.dag, evaluator.orders
    assert orders is not None
    # at 3 streams the 4-branch modules make streams take tasks out of T-order
    chains, placed = list_schedule_in_order(graph, dag, default_cost_table(), 3)
    assert sorted(placed) == list(range(dag.size))
    assert sorted(v for chain in chains for v in chain) == list(range(dag.size))
    where = {v: i for i, v in enumerate(placed)}
    assert all(where[u] < where[v] for u, v in dag.edges)  # placed once ready
    assert all([where[v] for v in chain] == sorted(where[v] for v in chain) for chain in chains)
    order = orders.following([dag.names[v] for v in placed])
    assert _is_topological(graph, order)
    streamed = set(dag.names)
    assert [n for n in order if n in streamed] == [dag.names[v] for v in placed]
    # some stream runs a task before one that comes earlier in T-order
    assert any(list(chain) != sorted(chain) for chain in chains)
    outcome = evaluator.outcome(assignment_of(dag, chains), order)
    assert outcome is not None  # synchronized in that order
    document = evaluator.synchronized(assignment_of(dag, chains), order).to_json()
    assert verify_plan(graph, document).ok  # on the graph, in its own T-order


def _ancestors(graph: Graph, name: str) -> set[str]:
    preds: dict[str, list[str]] = {}
    for node in graph.root.nodes:
        for succ in graph.root.successors(node.name):
            preds.setdefault(succ, []).append(node.name)
    found, stack = set(), [name]
    while stack:
        for p in preds.get(stack.pop(), []):
            if p not in found:
                found.add(p)
                stack.append(p)
    return found


def test_reordered_refuses_a_list_that_is_not_the_roots_nodes(blocked: Graph) -> None:
    with pytest.raises(ValueError, match="every root node once"):
        blocked.reordered(["x", "s", "q1"])
    assert blocked.reordered([n.name for n in blocked.root.nodes]) == blocked


def _on_streams(evaluator: Evaluator, *second: str) -> tuple[Orders, dict[str, int], list[int]]:
    """The evaluator's orders, the dag's node index, and the assignment of every node to
    stream 0 but `second` to stream 1."""
    assert evaluator.orders is not None
    index = {n: i for i, n in enumerate(evaluator.dag.names)}
    streams = [int(name in second) for name in evaluator.dag.names]
    return evaluator.orders, index, streams


def test_a_plan_in_another_order_verifies_on_the_users_graph(blocked: Graph) -> None:
    evaluator = _evaluator(blocked)
    orders, _, streams = _on_streams(evaluator, "q2")
    t_order = evaluator.outcome(streams)
    order = orders.before(orders.start, "q1", "s")
    assert order == ("x", "q1", "s", "q2", "j", "out")
    first = evaluator.outcome(streams, order)
    assert t_order is not None and first is not None
    document = evaluator.synchronized(streams, order).to_json()
    assert [n for n in document["streams"]["0"] if n in blocked.by_name] == ["q1", "s", "j", "out"]
    assert verify_plan(blocked, document).ok
    assert emulate(blocked, document).makespan_us == pytest.approx(first.makespan_us)
    assert first.makespan_us < t_order.makespan_us - 20  # q2 no longer waits for s


def test_an_outcome_is_that_of_the_plan_verified() -> None:
    """The searches' outcomes skip the verifier (the driver verifies the plan it writes): on
    random streams in random orders they are the events and the makespan of the plan that
    verifies, and None exactly where the verifier finds the plan over a device limit."""
    graph = load_graph(LIGHT / "light_inception_v1.onnx")
    evaluator = _evaluator(graph)
    limited = graph.with_options({"streamalloc.max_events": str(LIMITED_EVENTS)})
    capped = Evaluator(limited, evaluator.dag, evaluator.baseline, OPTIONS, evaluator.costs,
                       orders=Orders.of(limited))
    dag, orders, rng = evaluator.dag, evaluator.orders, random.Random(7)
    assert orders is not None
    within = set()
    for _ in range(8):
        width = rng.choice((2, 3, 8))
        streams = [rng.randrange(width) for _ in range(dag.size)]
        order = orders.following(_random_topological(evaluator, rng))
        plan = evaluator.synchronized(streams, order)
        document = plan.to_json()
        verify_plan(graph, document).raise_for_failure()
        assert evaluator.outcome(streams, order) == Measured(
            plan.event_count + plan.notify_count, emulate(graph, document).makespan_us)
        fits = verify_plan(limited, document).ok
        assert (capped.outcome(streams, order) is not None) == fits
        within.add(fits)
    assert within == {True, False}


def _random_topological(evaluator: Evaluator, rng: random.Random) -> list[str]:
    """The streamed nodes in a random topological order."""
    dag = evaluator.dag
    missing = [len(p) for p in dag.preds]
    ready, placed = [v for v in range(dag.size) if not missing[v]], []
    while ready:
        v = ready.pop(rng.randrange(len(ready)))
        placed.append(dag.names[v])
        for w in dag.succs[v]:
            missing[w] -= 1
            if not missing[w]:
                ready.append(w)
    return placed


def test_the_search_runs_a_task_before_its_unrelated_blocker(blocked: Graph) -> None:
    evaluator = _evaluator(blocked)
    dag = evaluator.dag
    orders, index, streams = _on_streams(evaluator, "q2", "j", "out")
    search = Search(dag, evaluator.run, 10, streams, orders.start, orders, random.Random(0),
                    Branches(dag))
    search.result = evaluator.run(streams, orders.start)
    assert search.result is not None
    search.score = _score(search.result)
    chain = critical_chain(search.result, index)
    blocked_link = next(link for link in chain if dag.names[link.node] == "q1")
    assert blocked_link.cause == STREAM and blocked_link.behind == (index["s"],)
    assert next(search._changes(blocked_link, 2)) == Reorder(index["q1"], index["s"])
    dependent = next(link for link in chain if dag.names[link.node] == "j")
    assert not any(isinstance(c, Reorder) for c in search._changes(dependent, 2))
    before = search.result.makespan_us
    assert search._step([blocked_link], set()) is not None  # the reorder, taken: it helps
    assert search.streams == streams and search.order == ("x", "q1", "s", "q2", "j", "out")
    assert search.result.makespan_us < before - 20
    # without orders the same link offers stream moves only
    plain = Search(dag, evaluator.run, 10, streams, None, None, random.Random(0), Branches(dag))
    assert not any(isinstance(c, Reorder) for c in plain._changes(blocked_link, 2))


# s, a narrow task, comes before q1 on its stream; w, on another stream, takes all 32 cores when
# s ends, so q1 (32 cores) waits for w, and q2 (its consumer, on a third stream) behind it
WAITED = """\
format: streamalloc.graph/v1
name: waited
nodes:
  - {name: x, type: Data}
  - {name: s, type: Relu, inputs: [x], cost_us: 30, attrs: {block_dim: 1}}
  - {name: w, type: Relu, inputs: [x], cost_us: 30, attrs: {block_dim: 32}}
  - {name: q1, type: Relu, inputs: [x], cost_us: 5, attrs: {block_dim: 32}}
  - {name: q2, type: Relu, inputs: [q1], cost_us: 40, attrs: {block_dim: 1}}
  - {name: j, type: AddN, inputs: [s, w, q2], cost_us: 5}
  - {name: out, type: NetOutput, inputs: [j]}
"""


def test_a_task_that_waited_for_cores_runs_before_its_unrelated_blocker(tmp_path: Path
                                                                        ) -> None:
    """Run first, q1 takes the cores before w asks for them: GE dump 00026 (its weight Casts
    hold all 32 cores) 818.4 -> 813.8 us at --time-limit 10."""
    path = tmp_path / "waited.yaml"
    path.write_text(WAITED, encoding="utf-8")
    graph = load_graph(path)
    evaluator = _evaluator(graph)
    dag = evaluator.dag
    orders, index, streams = _on_streams(evaluator, "w")
    streams[index["q2"]] = 2
    search = Search(dag, evaluator.run, 10, streams, orders.start, orders, random.Random(0),
                    Branches(dag))
    search.result = evaluator.run(streams, orders.start)
    assert search.result is not None
    search.score = _score(search.result)
    waited = next(link for link in critical_chain(search.result, index)
                  if dag.names[link.node] == "q1")
    assert waited.cause == UNITS and waited.behind == (index["w"],)
    assert waited.before == index["s"]
    assert next(search._changes(waited, 3)) == Reorder(index["q1"], index["s"])
    before = search.result.makespan_us
    assert search._step([waited], set()) is not None  # the reorder, taken
    assert search.order == ("x", "q1", "s", "w", "q2", "j", "out")
    assert search.result.makespan_us < before - 30  # q2 no longer waits for w


def test_the_makespan_objective_reorders_when_it_helps(blocked: Graph) -> None:
    plan, report = allocate_optimal(blocked, builtin_rules("free"), OPTIONS)
    document = plan.to_json()
    assert verify_plan(blocked, document).ok
    run = emulate(blocked, document)
    assert run.makespan_us == pytest.approx(report.makespan_us)
    assert run.makespan_us <= run.bounds.critical_path_us + 4.0  # an event and its latency


def test_a_reordered_plan_says_so_and_runs_as_reported() -> None:
    graph = load_graph(LIGHT / "light_inception_v1.onnx")
    plan, report = allocate_optimal(graph, builtin_rules("free"), OPTIONS)
    assert "+reordered" in report.phase
    document = plan.to_json()
    assert verify_plan(graph, document).ok
    assert emulate(graph, document).makespan_us == pytest.approx(report.makespan_us)


def test_a_reordered_plan_keeps_ges_rules() -> None:
    # GE's rules under the parallel options (engine caps among them): the order changes no
    # stream, and the verifier, rules included, accepts the plan
    graph = load_graph(LIGHT / "light_inception_v1.onnx").with_options(PARALLEL)
    plan, report = allocate_optimal(graph, None, OPTIONS)
    assert "+reordered" in report.phase
    assert verify_plan(graph, plan.to_json(), rules=default_rule_set(graph)).ok


@settings(max_examples=30, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=models("multi"), free=st.booleans())
def test_makespan_plans_verify_and_never_lose_to_the_baseline(spec: object, free: bool) -> None:
    graph = build(spec)  # type: ignore[arg-type]
    rules = builtin_rules("free") if free else None  # None: GE's rules, verified too
    plan, report = allocate_optimal(graph, rules, OPTIONS)
    document = plan.to_json()
    assert verify_plan(graph, document, rules=rules or default_rule_set(graph)).ok
    run = emulate(graph, document)
    assert run.status == "ok"
    assert run.makespan_us == pytest.approx(report.makespan_us)
    assert report.makespan_us <= report.baseline_makespan_us + 1e-6
