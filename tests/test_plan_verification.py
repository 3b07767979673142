"""Every plan the tool makes verifies, and the verifier catches broken plans of real models.

Mutations on each real model's plan (with parallel options, so that it has events): deleting an
event whose receiver is then no longer ordered after its sender must fail with exit 5 (checked
against an independent networkx reachability), deleting one that other events imply must pass,
and moving a node to another stream's list without its events must fail.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from real_models import real_models

from streamalloc.api import plan, with_options
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.verify import verify_plan

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
MODELS = real_models()
SAMPLES = 6


def happens_before(document: dict[str, Any]) -> nx.DiGraph:
    order = nx.DiGraph()
    for tasks in document["streams"].values():
        nx.add_path(order, tasks)
    sends = {n["event"]: n["name"] for n in document["sync_nodes"] if n["type"] == "Send"}
    recvs = {n["event"]: n["name"] for n in document["sync_nodes"] if n["type"] == "Recv"}
    order.add_edges_from((sends[e], recvs[e]) for e in sends if e in recvs)
    return order


def without_event(document: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The plan with one event's Send and Recv tasks deleted and the ids renumbered."""
    broken = copy.deepcopy(document)
    gone = {n["name"] for n in broken["sync_nodes"] if n["event"] == event["id"]
            and n["type"] in ("Send", "Recv")}
    broken["streams"] = {s: [t for t in tasks if t not in gone]
                         for s, tasks in broken["streams"].items()}
    broken["sync_nodes"] = [n for n in broken["sync_nodes"] if n["name"] not in gone]
    broken["events"] = [e for e in broken["events"] if e["id"] != event["id"]]
    for item in (*broken["sync_nodes"], *broken["events"]):
        key = "event" if "event" in item else "id"
        if item[key] > event["id"]:
            item[key] -= 1
    broken["event_count"] -= 1
    return broken


def graph_events(graph: Graph, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Events that stand for a graph edge (not split events), evenly sampled."""
    found = []
    for event in document["events"]:
        receiver = graph.node(event["recv"])
        producers = {r.src for r in receiver.data_sources()} | set(receiver.control_inputs)
        if event["kind"] == "event" and event["send"] in producers:
            found.append(event)
    step = max(1, len(found) // SAMPLES)
    return found[::step][:SAMPLES]


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_real_model_plans_verify_and_broken_ones_do_not(model: Path) -> None:
    graph = with_options(load_graph(model), PARALLEL)
    document = plan(graph).to_json()
    assert verify_plan(graph, document).ok
    for event in graph_events(graph, document):
        broken = without_event(document, event)
        ordered = nx.has_path(happens_before(broken), event["send"], event["recv"])
        report = verify_plan(graph, broken)
        assert report.ok == ordered, (event, report.violations[:3])
        if not ordered:
            assert report.exit_code == 5
    _moved_node_fails(graph, document)


def _moved_node_fails(graph: Graph, document: dict[str, Any]) -> None:
    streams = document["streams"]
    if len(streams) < 2:
        return
    first, second = sorted(streams)[:2]
    name = next(t for t in streams[first] if t in document["nodes"])
    moved = copy.deepcopy(document)
    moved["streams"][first].remove(name)
    moved["streams"][second].append(name)
    assert verify_plan(graph, moved).exit_code == 5
