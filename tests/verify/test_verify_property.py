"""Property: correct plans for random DAGs verify; removing a needed event is caught.

The oracle is a brute-force reachability over the whole happens-before graph (networkx),
independent of the verifier's vector clocks: an event is needed when, without it, some
dependency of the graph is no longer reachable.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify.verify_plans import build_plan, task_preds, without_event

from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.verify import verify_plan


@st.composite
def dags(draw: st.DrawFn) -> tuple[Graph, dict[str, int]]:
    """A random DAG (some control edges, some stream-less nodes without tasks) and a stream
    per node."""
    n = draw(st.integers(2, 10))
    k = draw(st.integers(1, 4))
    b = GraphBuilder("p")
    b.add_node("src", "Data")
    stream_of: dict[str, int] = {}
    for i in range(n):
        preds = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        ctrl = draw(st.booleans()) and len(preds) > 1
        inputs = [DataInput(f"n{j}") for j in (preds[:-1] if ctrl else preds)] or \
            [DataInput("src")]
        stream = draw(st.integers(-1, k - 1)) if i % 4 == 3 else draw(st.integers(0, k - 1))
        # a stream-less node issues no task (one that does must run on a stream)
        b.add_node(f"n{i}", "Relu", inputs=inputs,
                   control_inputs=[f"n{preds[-1]}"] if ctrl else [],
                   task_count=0 if stream < 0 else None)
        stream_of[f"n{i}"] = stream
    return b.build(), stream_of


def happens_before(p: dict[str, Any]) -> nx.DiGraph:
    """Every task a vertex; program order, Send -> Recv of the same id."""
    g = nx.DiGraph()
    records: dict[int, str] = {}
    for names in p["streams"].values():
        g.add_nodes_from(names)
        nx.add_path(g, names)
    for s in p["sync_nodes"]:
        if s["type"] == "Send":
            records[s["event"]] = s["name"]
    for s in p["sync_nodes"]:
        if s["type"] == "Recv":
            g.add_edge(records[s["event"]], s["name"])
    return g


def ordered(graph: Graph, stream_of: dict[str, int], p: dict[str, Any]) -> bool:
    hb = happens_before(p)
    preds = task_preds(graph, lambda n: stream_of.get(n, -1) >= 0)
    return all(nx.has_path(hb, u, v) for v, us in preds.items() for u in us)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags())
def test_random_plans_verify_and_every_needed_event_is_caught(case: tuple[Graph, dict]) -> None:
    graph, stream_of = case
    p = build_plan(graph, stream_of)
    report = verify_plan(graph, p)
    assert report.ok, report.text()
    for ident in range(p["event_count"]):
        reduced = without_event(p, ident)
        report = verify_plan(graph, reduced)
        assert report.kinds() <= {"dependency"}, report.text()
        assert report.ok == ordered(graph, stream_of, reduced), report.text()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.randoms(use_true_random=False))
def test_shuffled_streams_deadlock_or_fail_exactly_when_the_oracle_says(
        case: tuple[Graph, dict], rnd: Any) -> None:
    # Shuffling a stream's order can put a wait before its record (a cycle) or a consumer
    # before its producer; the verdict must match brute force on the whole graph.
    graph, stream_of = case
    p = build_plan(graph, stream_of)
    for names in p["streams"].values():
        if rnd.random() < 0.5:
            rnd.shuffle(names)
    report = verify_plan(graph, p)
    hb = happens_before(p)
    acyclic = nx.is_directed_acyclic_graph(hb)
    assert ("deadlock" in report.kinds()) == (not acyclic), report.text()
    if acyclic:
        assert ("dependency" in report.kinds()) == (not ordered(graph, stream_of, p)), \
            report.text()
