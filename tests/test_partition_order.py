"""A graph's explicit `partition:` list is GE's L-order as GE's partitioner handed it over
(formats.md 1, ge-logical-streams.md 1.6.4): the passes walk it in the listed order, which
decides label ids (2.2), independent ids (2.3) and the dependency pass's temporary ids (2.4).
And the MDE counter (2.1) when every node of a subgraph carries a NewStreamId.

Expected streams are worked out from the spec by hand, in the docstrings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph


def graph_of(tmp_path: Path, nodes: list[dict[str, Any]], **extra: Any) -> Graph:
    path = tmp_path / "g.yaml"
    doc = {"format": "streamalloc.graph/v1", "name": "g", "nodes": nodes, **extra}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_graph(path)


def streams(graph: Graph) -> dict[str, int]:
    return {n: s.stream for n, s in allocate_ge(graph).nodes.items()}


def sg(name: str, engine: str, nodes: list[str], label: str = "") -> dict[str, Any]:
    return {"id": name, "engine": engine, "stream_label": label, "nodes": nodes}


LABELLED = [
    {"name": "d", "type": "Data"},
    {"name": "x", "type": "Relu", "inputs": ["d"], "attrs": {"_stream_label": "B"}},
    {"name": "y", "type": "Relu", "inputs": ["d"], "attrs": {"_stream_label": "A"}},
    {"name": "out", "type": "NetOutput", "inputs": ["x", "y"]}]


def test_label_streams_follow_the_listed_order(tmp_path: Path) -> None:
    """2.2 in L-order: listed [y, x, out], y's label gets 0 and x's 1 (in G-order x would
    come first); out (GE-local, its preds labelled: no reuse) gets a LOC stream, 2; the
    skipped-engine pass leaves it (no outputs)."""
    listed = graph_of(tmp_path, LABELLED, partition=[
        sg("sy", "AIcoreEngine", ["y"], "A"), sg("sx", "AIcoreEngine", ["x"], "B"),
        sg("so", "DNN_VM_GE_LOCAL", ["out"])])
    assert streams(listed) == {"d": -1, "x": 1, "y": 0, "out": 2}
    in_g_order = graph_of(tmp_path, LABELLED)
    assert streams(in_g_order) == {"d": -1, "x": 0, "y": 1, "out": 2}


HCCL = [
    {"name": "d", "type": "Data"},
    {"name": "a", "type": "Relu", "inputs": ["d"]},
    {"name": "h1", "type": "HcomAllReduce", "inputs": ["a"], "attrs": {"_stream_label": "P"}},
    {"name": "h2", "type": "HcomAllReduce", "inputs": ["a"], "attrs": {"_stream_label": "Q"}},
    {"name": "b", "type": "Add", "inputs": ["h1", "h2"]}]


def test_independent_streams_follow_the_listed_order(tmp_path: Path) -> None:
    """2.2 then 2.3 in L-order, listed [a, h2, h1, b]: labels Q 0, P 1; independent keys
    (HCCL, Q) 2, (HCCL, P) 3; a fresh AIC 4 and b (preds independent) AIC t0 -> 4; compaction
    drops the emptied label streams 0, 1: h2 0, h1 1, a and b 2."""
    listed = graph_of(tmp_path, HCCL, partition=[
        sg("sa", "AIcoreEngine", ["a"]), sg("s2", "DNN_HCCL", ["h2"], "Q"),
        sg("s1", "DNN_HCCL", ["h1"], "P"), sg("sb", "AIcoreEngine", ["b"])])
    assert streams(listed) == {"d": -1, "a": 2, "h1": 1, "h2": 0, "b": 2}
    assert streams(graph_of(tmp_path, HCCL)) == {"d": -1, "a": 2, "h1": 0, "h2": 1, "b": 2}


FAN_OUT = [
    {"name": "d", "type": "Data"},
    {"name": "a0", "type": "Relu", "inputs": ["d"]},
    {"name": "a1", "type": "Relu", "inputs": ["a0"]},
    {"name": "a2", "type": "Relu", "inputs": ["a0"]}]


def test_fan_out_temporary_ids_follow_the_listed_order(tmp_path: Path) -> None:
    """2.4 with AIcoreEngine:2, listed [a0, a2, a1]: a0 fresh t0; a2 may not reuse a0 (a0 feeds
    another AI Core subgraph, step 4): fresh t1; a1 likewise: t0 again (wrap). So a1 shares
    a0's stream and a2 has its own; listed in G-order it is the other way round."""
    options = {"ge.streamMaxParallelNum": "AIcoreEngine:2"}
    s0, s1, s2 = (sg(f"s{i}", "AIcoreEngine", [f"a{i}"]) for i in range(3))
    listed = graph_of(tmp_path, FAN_OUT, options=options, partition=[s0, s2, s1])
    assert streams(listed) == {"d": -1, "a0": 0, "a1": 0, "a2": 1}
    in_g_order = graph_of(tmp_path, FAN_OUT, options=options, partition=[s0, s1, s2])
    assert streams(in_g_order) == {"d": -1, "a0": 0, "a1": 1, "a2": 0}


def test_mde_ids_of_a_subgraph_feed_quirk_q1(tmp_path: Path) -> None:
    """2.1 with every node of a known-shape subgraph carrying a NewStreamId (7.4b with MDE):
    root pc, out on LOC 0 (next 1); body: MDE buckets u and bout on their stream before the
    graph's assignment (0) -> one new id 1 (next 2); label L -> 2 (next 3); dependency hands out
    nothing, finalize still steps back (Q1, next 2); node-stream-update puts u, bout on 2.
    Compaction ranks only ids below next (2): 0 stays, u and bout keep 2, main_stream_num 1."""
    graph = graph_of(tmp_path, [
        {"name": "d", "type": "Data"},
        {"name": "pc", "type": "PartitionedCall", "inputs": ["d"], "subgraphs": {"f": "body"},
         "engine": "DNN_VM_GE_LOCAL"},
        {"name": "out", "type": "NetOutput", "inputs": ["pc"]}],
        subgraphs={"body": {"nodes": [
            {"name": "bd", "type": "Data", "attrs": {"_parent_node_index": 0}},
            {"name": "u", "type": "Relu", "inputs": ["bd"],
             "attrs": {"_stream_label": "L", "NewStreamId": 5}},
            {"name": "bout", "type": "NetOutput", "inputs": ["u"],
             "attrs": {"_stream_label": "L", "NewStreamId": 5}}]}})
    allocation = allocate_ge(graph)
    assert {n: s.stream for n, s in allocation.nodes.items()} == {
        "d": -1, "pc": 0, "bd": -1, "u": 2, "bout": 2, "out": 0}
    assert allocation.main_stream_num == 1
