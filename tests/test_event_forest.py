"""A plan whose streams form a forest of events runs the tasks between a source and a sink one
after the other (`optimal.event_forest`), so where they take longer than the makespan limit
the events bound gains one event."""

from __future__ import annotations

import random

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc import api
from streamalloc.errors import LimitExceeded
from streamalloc.ir import DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.optimal import task_dag
from streamalloc.optimal.event_bound import events_bound
from streamalloc.optimal.event_forest import serialized_over
from streamalloc.optimal.options import EPS_US
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.node_tasks import graph_node_tasks
from streamalloc.solver.dag import TaskDag

COSTS = default_cost_table()


def test_the_tasks_between_a_source_and_a_sink_add_up() -> None:
    """a -> b, a -> c, b -> d, c -> d: all four between a and d (40 us); without the join,
    a and b, or a and c (20 us)."""
    diamond = TaskDag.build(list("abcd"), [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                            ["g"] * 4)
    fork = TaskDag.build(list("abc"), [("a", "b"), ("a", "c")], ["g"] * 3)
    assert serialized_over(diamond, [10.0] * 4, 39.0)
    assert not serialized_over(diamond, [10.0] * 4, 40.0)
    assert serialized_over(fork, [10.0] * 3, 19.0)
    assert not serialized_over(fork, [10.0] * 3, 20.0)
    two = TaskDag.build(list("ab"), [], ["g"] * 2)  # each node its own source and sink
    assert not serialized_over(two, [10.0, 10.0], 10.0)
    assert serialized_over(two, [10.0, 10.5], 10.0)


def _random_plan_graph(rng: random.Random) -> Graph:
    """Nodes on up to three preset streams reading one to three earlier nodes (or the
    graph's input), random times, now and then a small stream capacity (split events)."""
    capacity = rng.choice(("48", "64", "1024"))
    builder = GraphBuilder("forest", options={"streamalloc.max_task_per_stream": capacity})
    builder.add_node("d", "Data", stream_id=-1)
    made: list[str] = []
    count = rng.randint(2, 16)
    drawn = [rng.randrange(rng.randint(1, 3)) for _ in range(count)]
    ids = {s: k for k, s in enumerate(sorted(set(drawn)))}  # preset ids run from 0
    for i, stream in enumerate(drawn):
        inputs = rng.sample(made, k=min(len(made), rng.randint(1, 3))) \
            if made and rng.random() > 0.1 else ["d"]
        builder.add_node(f"n{i}", rng.choice(("Relu", "MatMul")),
                         inputs=[DataInput(x) for x in inputs], stream_id=ids[stream],
                         task_count=rng.randint(1, 12), cost_us=float(rng.randint(1, 40)))
        made.append(f"n{i}")
    return builder.build()


def _is_forest(plan: dict[str, object]) -> bool:
    """Do the plan's events join its physical streams in a forest?"""
    joined = nx.MultiGraph()
    joined.add_nodes_from(int(s) for s in plan["tasks"])  # type: ignore[union-attr]
    joined.add_edges_from((e["send_stream"], e["recv_stream"])
                          for e in plan["events"])  # type: ignore[union-attr]
    return nx.is_forest(joined)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(rng=st.randoms(use_true_random=False), sync=st.sampled_from(["ge", "minimal"]))
def test_a_forest_plan_runs_at_least_its_serialized_time(rng: random.Random, sync: str) -> None:
    """Every plan whose events form a forest runs at least as long as the tasks between any
    source and sink one after the other; and no plan has fewer events than the bound at its
    own makespan."""
    graph = _random_plan_graph(rng)
    try:
        plan = api.plan(graph, mode="preset", sync=sync)
    except LimitExceeded:
        return
    result = emulate(graph, plan.to_json(), costs=COSTS)
    assert result.status == "ok"
    dag = task_dag(graph, plan.allocation)
    tasks = graph_node_tasks(graph, COSTS)
    times = [tasks[n][1] for n in dag.names]
    if _is_forest(plan.to_json()):
        assert not serialized_over(dag, times, result.makespan_us + EPS_US)
    bound = events_bound(graph, dag, limit_us=result.makespan_us, costs=COSTS)
    assert bound is not None and bound <= plan.event_count + plan.notify_count
