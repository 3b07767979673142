"""`--sync minimal`: only the events that no other ordering implies (transitive reduction of
program order + activation + the pairs of insertion), beside GE's own elimination.

Hand-built graphs (preset mode) pin exact event lists; the 17 real models and random graphs are
checked against the independent verifier: minimal plans verify, every one of their cross-stream
events is needed (dropping it leaves a dependency unordered), and they never need more events
than GE's elimination.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_models import real_models
from test_heuristic_properties import build, models
from verify.verify_plans import yaml_graph

from streamalloc import api
from streamalloc.allocation import Allocation
from streamalloc.cli import main
from streamalloc.errors import LimitExceeded, UsageError
from streamalloc.ir import AttrValue, DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
MODELS = real_models()


def events(graph: Graph, sync: str) -> list[tuple[int, str, str]]:
    """(id, sender, receiver) of the preset-mode plan, after checking that it verifies."""
    result = api.plan(graph, mode="preset", sync=sync)
    assert verify_plan(graph, result.to_json()).ok
    return [(e.id, e.send, e.recv) for e in result.events]


# --- hand-built graphs ---------------------------------------------------------------------

DIAMOND_TEXT = """name: g
nodes:
  - {name: A, type: Relu, stream_id: 0}
  - {name: B, type: Relu, inputs: [A], stream_id: 1}
  - {name: C, type: Relu, inputs: [B], stream_id: 2}
  - {name: D, type: Add, inputs: [C, A], stream_id: 2}
"""
DIAMOND = yaml_graph(DIAMOND_TEXT)


def test_diamond_event_implied_by_a_path_is_dropped() -> None:
    """A->D is implied by A->B->C->D (C before D on stream 2); GE keeps it (3.2: different
    senders and receivers), minimal drops it."""
    assert events(DIAMOND, "ge") == [(0, "A", "B"), (1, "A", "D"), (2, "B", "C")]
    assert events(DIAMOND, "minimal") == [(0, "A", "B"), (1, "B", "C")]


LABEL = yaml_graph("""
name: g
nodes:
  - {name: X, type: Relu, stream_id: 0}
  - {name: Z, type: Relu, inputs: [X], stream_id: 1}
  - {name: Z2, type: Relu, inputs: [Z], stream_id: 1}
  - {name: ACT, type: StreamActive, inputs: [Z2], stream_id: 2, attrs: {_active_label_list: [L]}}
  - {name: R, type: Relu, inputs: [X], stream_id: 3, attrs: {_stream_label: L}}
""")


def test_label_activation_implies_the_event() -> None:
    """X->Z->Z2->ACT, and ACT starts R's stream: X->R needs no event. GE's 3.3 looks only one
    step behind the activator (Z2 is neither on X's stream nor fed by X) and keeps it."""
    assert events(LABEL, "ge") == [(0, "X", "Z"), (1, "X", "R"), (2, "Z2", "ACT")]
    assert events(LABEL, "minimal") == [(0, "X", "Z"), (1, "Z2", "ACT")]


SWITCH = yaml_graph("""
name: g
nodes:
  - {name: p, type: Relu, stream_id: 0}
  - {name: sw, type: StreamSwitch, inputs: [p], stream_id: 0, attrs: {_active_label_list: [T]}}
  - {name: t1, type: Relu, control_inputs: [sw], stream_id: 1, attrs: {_stream_label: T}}
  - {name: x, type: Relu, control_inputs: [sw], stream_id: 1}
  - {name: q, type: Relu, inputs: [p], stream_id: 0}
  - {name: y, type: Add, inputs: [x, q], stream_id: 1}
""")


def test_stream_switch_sends_fall_out_of_activation() -> None:
    """sw->x (x unlabelled on the switch's label stream) is inserted; GE purges it (3.4),
    minimal drops it because the switch starts stream 1. q->y is a real ordering: both keep it."""
    assert events(SWITCH, "ge") == [(0, "q", "y")]
    assert events(SWITCH, "minimal") == [(0, "q", "y")]


SWITCH_QUIRK = yaml_graph("""
name: g
nodes:
  - {name: u, type: Relu, stream_id: 4}
  - {name: p, type: Relu, stream_id: 0}
  - {name: sw, type: StreamSwitch, inputs: [p, u], stream_id: 0,
     attrs: {_active_label_list: [T, F]}}
  - {name: t1, type: Relu, control_inputs: [sw], stream_id: 1, attrs: {_stream_label: T}}
  - {name: t2, type: Relu, control_inputs: [sw], stream_id: 2, attrs: {_stream_label: T}}
  - {name: f1, type: Relu, inputs: [u], stream_id: 3, attrs: {_stream_label: F}}
""")


def test_switch_handling_drops_single_stream_labels() -> None:
    """Label T covers two streams, so switch handling (6.3) gives it a StreamActive and
    overwrites the switch's list: F's stream 3 is then started by nobody. GE's 3.3 still
    credits sw's activation of f1 and drops u->f1, leaving it unordered; minimal models the
    final activation lists and keeps it."""
    ge = api.plan(SWITCH_QUIRK, mode="preset")
    assert [(e.send, e.recv) for e in ge.events] == [("u", "sw")]
    assert verify_plan(SWITCH_QUIRK, ge.to_json()).exit_code == 5
    assert events(SWITCH_QUIRK, "minimal") == [(0, "u", "sw"), (1, "u", "f1")]


ENTRY = yaml_graph("""
name: g
nodes:
  - {name: a, type: Relu, stream_id: 0}
  - {name: b, type: Relu, inputs: [a], stream_id: 0}
  - {name: p, type: PartitionedCall, inputs: [b], subgraphs: {f: body}, stream_id: 0}
  - {name: q, type: Relu, inputs: [a], stream_id: 1}
subgraphs:
  body:
    nodes:
      - {name: n, type: Relu, stream_id: 1}
      - {name: e, type: Relu, inputs: [n], stream_id: 1, attrs: {_subgraph_end_node: true}}
""")

EXIT = yaml_graph("""
name: g
nodes:
  - {name: k, type: Relu, stream_id: 1}
  - {name: p, type: PartitionedCall, subgraphs: {f: body}, stream_id: 0}
  - {name: c, type: Relu, inputs: [p], stream_id: 2}
  - {name: w, type: Add, inputs: [c, k], stream_id: 2}
subgraphs:
  body:
    nodes:
      - {name: n, type: Relu, stream_id: 1}
      - {name: e, type: Relu, inputs: [n], stream_id: 1, attrs: {_subgraph_end_node: true}}
""")


def test_subgraph_entry_pair_implies_a_root_event() -> None:
    """The boundary pair b->n (2.3) and stream 1's order n, e, q imply a->q."""
    assert events(ENTRY, "ge") == [(0, "a", "q"), (1, "b", "n")]
    assert events(ENTRY, "minimal") == [(0, "b", "n")]


def test_subgraph_exit_pair_implies_a_root_event() -> None:
    """k, n, e on stream 1 and the exit pair e->c (2.3), then c before w: k->w is implied."""
    assert events(EXIT, "ge") == [(0, "e", "c"), (1, "k", "w"), (2, "p", "c")]
    assert events(EXIT, "minimal") == [(0, "e", "c"), (1, "p", "c")]


CASE = yaml_graph("""
name: md
nodes:
  - {name: data, type: Data}
  - {name: case, type: Case, inputs: [data], subgraphs: {b0: dim0, b1: dim1},
     attrs: {_batch_num: 2}, stream_id: 0}
subgraphs:
  dim0:
    nodes:
      - {name: u0, type: Relu, stream_id: 0}
      - {name: v0, type: Relu, inputs: [u0], stream_id: 1}
  dim1:
    nodes:
      - {name: A, type: Relu, stream_id: 0}
      - {name: B, type: Relu, inputs: [A], stream_id: 1}
      - {name: C, type: Relu, inputs: [B], stream_id: 2}
      - {name: D, type: Add, inputs: [C, A], stream_id: 2}
""")


def test_multi_dims_reuse_counts_the_largest_dim() -> None:
    """Ids inside the dims of a multi-batch Case are shared (4.2): the count is the largest
    dim's, 3 for GE's diamond in dim1, 2 once minimal drops A->D."""
    counts = {}
    for sync in ("ge", "minimal"):
        result = api.plan(CASE, mode="preset", sync=sync)
        assert verify_plan(CASE, result.to_json()).ok
        counts[sync] = result.event_count
    assert counts == {"ge": 3, "minimal": 2}


def test_notify_mode_minimises_the_notifies() -> None:
    """4.4: Phase A's pairs are notifies; minimal drops the same pair there."""
    graph = api.with_options(DIAMOND, {"ge.event": "notify"})
    counts = {sync: (p.event_count, p.notify_count) for sync in ("ge", "minimal")
              for p in [api.plan(graph, mode="preset", sync=sync)]}
    assert counts == {"ge": (0, 3), "minimal": (0, 2)}


def test_unknown_strategy_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="valid: ge, minimal"):
        api.plan(DIAMOND, mode="preset", sync="fastest")


def test_plan_records_the_strategy_and_the_cli_passes_it(tmp_path: Path) -> None:
    assert api.plan(DIAMOND, mode="preset").to_json()["sync"] == "ge"
    graph = tmp_path / "g.yaml"
    graph.write_text("format: streamalloc.graph/v1\n" + DIAMOND_TEXT, encoding="utf-8")
    out = tmp_path / "plan.json"
    assert main(["allocate", str(graph), "--mode", "preset", "--sync", "minimal",
                 "-o", str(out)]) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["sync"] == "minimal" and document["event_count"] == 2


# --- the verifier as referee: minimal plans are valid and every event is needed ------------

def without_event(document: Mapping[str, Any], ident: int) -> dict[str, Any]:
    """The plan without event `ident`: its entries and its Send/Recv tasks removed, later ids
    moved down by one so that ids stay contiguous (a gap alone would fail verification)."""
    gone = {n["name"] for n in document["sync_nodes"]
            if n["type"] in ("Send", "Recv") and n["event"] == ident}

    def shift(x: int) -> int:
        return x - 1 if x > ident else x

    return {**document,
            "events": [{**e, "id": shift(e["id"])} for e in document["events"]
                       if e["id"] != ident],
            "sync_nodes": [{**n, "event": shift(n["event"])} if n["type"] in ("Send", "Recv")
                           else n for n in document["sync_nodes"] if n["name"] not in gone],
            "streams": {s: [t for t in names if t not in gone]
                        for s, names in document["streams"].items()},
            "event_count": document["event_count"] - 1}


def cross_stream_events(graph: Graph, document: Mapping[str, Any]) -> Iterator[int]:
    """Ids of the events between two logical streams: not split events (within one logical
    stream), not attached-stream events (sent from an attached stream), not loop events (to
    the iteration StreamSwitch); those are shared by both strategies and not minimised."""
    nodes = document["nodes"]
    for e in document["events"]:
        send, recv = nodes[e["send"]], nodes[e["recv"]]
        if send["stream"] == recv["stream"] or e["send_stream"] != send["physical_stream"]:
            continue
        if graph.node(e["recv"]).type != "StreamSwitch":
            yield e["id"]


@cache
def allocated(model: Path) -> tuple[Graph, Allocation]:
    graph = api.with_options(load_graph(model), PARALLEL)
    return graph, api.allocate(graph)


def total(result: SyncPlan) -> int:
    return result.event_count + result.notify_count


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_real_model_minimal_plan_is_valid_and_minimal(model: Path) -> None:
    graph, allocation = allocated(model)
    result = api.synchronize(graph, allocation, sync="minimal")
    document = result.to_json()
    assert document["sync"] == "minimal"
    report = verify_plan(graph, document)
    assert report.exit_code == 0, report.text()
    assert total(result) <= total(api.synchronize(graph, allocation, sync="ge"))
    again = api.synchronize(graph, allocation, sync="minimal").to_json()
    assert json.dumps(again, indent=1) == json.dumps(document, indent=1)
    ids = list(cross_stream_events(graph, document))
    if len(ids) > 200:  # keep the suite fast on large plans: a seeded sample
        ids = sorted(random.Random(model.stem).sample(ids, 30))
    for ident in ids:
        broken = verify_plan(graph, without_event(document, ident))
        assert broken.exit_code == 5 and broken.counts.get("dependency", 0) > 0, ident


def test_removal_helper_only_removes_the_ordering() -> None:
    """Guard for the check above: on GE's diamond plan, dropping the redundant A->D event keeps
    the plan valid, and dropping A->B breaks only dependencies, so the mutation itself is sound."""
    document = api.plan(DIAMOND, mode="preset").to_json()
    assert [(e["id"], e["send"], e["recv"]) for e in document["events"]] == [
        (0, "A", "B"), (1, "A", "D"), (2, "B", "C")]
    assert verify_plan(DIAMOND, without_event(document, 1)).ok
    assert set(verify_plan(DIAMOND, without_event(document, 0)).counts) == {"dependency"}


def test_real_models_are_covered() -> None:
    assert len(MODELS) == 17


# --- random graphs -------------------------------------------------------------------------

def both(graph: Graph) -> tuple[SyncPlan, SyncPlan] | None:
    """GE's plan and the minimal plan on GE's allocation (None: over a limit)."""
    try:
        allocation = api.allocate(graph)
        return (api.synchronize(graph, allocation, "ge"),
                api.synchronize(graph, allocation, "minimal"))
    except LimitExceeded:
        return None  # a single node over the capacity: refused the same way by both


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(data=st.data(), capacity=st.sampled_from(["300", "400", "1024"]))
def test_random_models_minimal_verifies_and_never_exceeds_ge(data: st.DataObject,
                                                             capacity: str) -> None:
    graph = api.with_options(build(data.draw(models("multi"))),
                             {"streamalloc.max_task_per_stream": capacity})
    found = both(graph)
    if found is None:
        return
    ge, minimal = found
    report = verify_plan(graph, minimal.to_json())
    assert report.ok, report.violations[:3]
    assert total(minimal) <= total(ge)


@settings(max_examples=10, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(0, 10_000), parallel=st.sampled_from(["", "AIcoreEngine:3"]))
def test_split_plans_minimal_verifies_and_never_exceeds_ge(seed: int, parallel: str) -> None:
    """Small stream capacity: both strategies split streams (split events count too)."""
    options = {"streamalloc.max_task_per_stream": "300", "ge.hcomParallel": "1"}
    if parallel:
        options["ge.streamMaxParallelNum"] = parallel
    graph = layered_graph(250, seed=seed, label_every=7, hccl_every=40)
    graph = replace(graph, options=MappingProxyType(options))
    found = both(graph)
    assert found is not None
    ge, minimal = found
    assert minimal.physical_stream_count > minimal.allocation.total_stream_num  # it split
    report = verify_plan(graph, minimal.to_json())
    assert report.ok, report.violations[:3]
    assert total(minimal) <= total(ge)


@st.composite
def activated_graphs(draw: st.DrawFn) -> Graph:
    """Preset-mode graphs with label-activated streams: random DAG over up to 4 streams, the
    streams >= 2 labelled, StreamActive nodes (on streams 0/1) activating some labels."""
    builder = GraphBuilder("r")
    names: list[str] = []
    for i in range(draw(st.integers(3, 14))):
        inputs = draw(st.lists(st.sampled_from(names), max_size=2, unique=True)) if names else []
        if draw(st.integers(0, 4)) == 0:
            target = draw(st.sampled_from(["L2", "L3"]))
            builder.add_node(f"act{i}", "StreamActive", inputs=[DataInput(x) for x in inputs],
                             stream_id=draw(st.integers(0, 1)),
                             attrs={"_active_label_list": AttrValue("list_string", (target,))})
            names.append(f"act{i}")
            continue
        s = draw(st.integers(0, 3))
        attrs = {"_stream_label": AttrValue("string", f"L{s}")} if s >= 2 else {}
        builder.add_node(f"n{i}", "Relu", inputs=[DataInput(x) for x in inputs],
                         stream_id=s, attrs=attrs)
        names.append(f"n{i}")
    for s in range(4):  # preset ids must be contiguous: one node per stream at the end
        attrs = {"_stream_label": AttrValue("string", f"L{s}")} if s >= 2 else {}
        builder.add_node(f"end{s}", "Relu", inputs=[DataInput(names[-1])], stream_id=s,
                         attrs=attrs)
    return builder.build()


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(graph=activated_graphs())
def test_random_activation_minimal_never_exceeds_ge(graph: Graph) -> None:
    """Wherever GE's plan verifies (rule 5 of 2.2 and the activation order can leave it
    invalid), minimal's does too and needs no more events; it never makes a valid plan
    invalid. (A stream whose only activator waits for the stream deadlocks both: it runs
    only once activated.)"""
    allocation = api.allocate(graph, mode="preset")
    ge = api.synchronize(graph, allocation, "ge")
    minimal = api.synchronize(graph, allocation, "minimal")
    ge_report = verify_plan(graph, ge.to_json())
    report = verify_plan(graph, minimal.to_json())
    if ge_report.ok:
        assert report.ok, report.violations[:3]
        assert total(minimal) <= total(ge)
    else:
        assert set(report.counts) <= {"dependency"} | set(ge_report.counts)


LABEL_TWICE_TEXT = """
name: act_two_branches
options: {ge.streamMaxParallelNum: "AIcoreEngine:4"}
nodes:
  - {name: data, type: Data}
  - {name: ma, type: Relu, inputs: [data], cost_us: 1}
  - {name: acta, type: StreamActive, control_inputs: [ma], attrs: {_active_label_list: [lab]}}
  - {name: mb, type: Relu, inputs: [data], cost_us: 50}
  - {name: actb, type: StreamActive, control_inputs: [mb], attrs: {_active_label_list: [lab]}}
  - {name: s, type: Add, inputs: [ma, mb], control_inputs: [acta, actb],
     attrs: {_stream_label: lab}}
  - {name: out, type: NetOutput, inputs: [s]}
"""
LABEL_TWICE = yaml_graph(LABEL_TWICE_TEXT)


def test_a_label_two_activators_start_keeps_its_events_under_minimal_sync() -> None:
    """Found by a fuzz run: acta and actb both start the stream of `lab`, so it runs after
    the first of them. GE leaves out a pair into it when any activator follows the producer
    (rule 5, and its "by activation" elimination), which races: its plan fails the verifier
    and ge mode writes nothing. Minimal sync leaves one out only when every activator
    follows the producer, and credits no activation to a stream two activators start, so its
    plan verifies and runs."""
    allocation = api.allocate(LABEL_TWICE)
    ge = api.synchronize(LABEL_TWICE, allocation, "ge")
    assert not verify_plan(LABEL_TWICE, ge.to_json()).ok
    minimal = api.synchronize(LABEL_TWICE, allocation, "minimal").to_json()
    assert verify_plan(LABEL_TWICE, minimal).ok
    assert emulate(LABEL_TWICE, minimal).status == "ok"
    assert ("actb", "s") in {(e["send"], e["recv"]) for e in minimal["events"]}


def test_ge_mode_names_the_race_of_two_activators_and_compare_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GE's racing plan is refused with its cause, not only the verifier's list; compare gives
    ge a NO_PLAN row saying why, and the other modes their plans."""
    graph = tmp_path / "g.yaml"
    graph.write_text("format: streamalloc.graph/v1\n" + LABEL_TWICE_TEXT, encoding="utf-8")
    assert main(["allocate", str(graph), "-o", str(tmp_path / "p.json")]) == 5
    error = capsys.readouterr().err
    assert error.startswith("streamalloc: error: GE's plan races: several activators start one "
                            "stream (stream 0 by acta, actb)"), error
    assert "`--sync minimal` keeps those events" in error.splitlines()[0]
    assert "dependency: data edge mb -> s is not ordered" in error
    assert not (tmp_path / "p.json").exists()
    assert main(["compare", str(graph), "--json", "--time-limit", "1"]) == 0
    rows = {r["mode"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["ge"]["status"] == "NO_PLAN"
    assert rows["ge"]["reason"].startswith("GE's plan races: ")
    assert "\n" not in rows["ge"]["reason"]
    assert rows["ge-minimal"]["events"] == 4 and rows["optimal"]["events"] == 4
    # GE's plan written by another tool: `verify` names the cause under its list
    plan = tmp_path / "ge.json"
    plan.write_text(json.dumps(api.plan(LABEL_TWICE).to_json()), encoding="utf-8")
    assert main(["verify", str(graph), str(plan)]) == 5
    report = capsys.readouterr().out.splitlines()
    assert report[-1].startswith("cause: GE's plan races: several activators start one stream "
                                 "(stream 0 by acta, actb)"), report
