"""Pictures that read: the Gantt chart's rows and labels, the trace's time unit and rounding,
and the diagnostics written for a run that fails (deadlock, violation)."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from emu.conftest import EXAMPLES, chain_graph, plan_dict

from streamalloc.api import with_options
from streamalloc.commands.emulate import emulate_command, ge_plan
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.runtime_emu import EmulationResult, emulate, load_plan, trace_dict
from streamalloc.runtime_emu.gantt import MAX_ROWS, bar_label, gantt_png, gantt_rows

PNG = b"\x89PNG\r\n\x1a\n"


@functools.cache
def many_streams() -> EmulationResult:
    """A ge-mode plan of 429 streams: short streams (16 tasks at most) of a layered graph."""
    graph = with_options(layered_graph(400, hccl_every=10**9),
                         {"streamalloc.max_task_per_stream": "16"})
    return emulate(graph, ge_plan(graph))


def test_a_plan_of_hundreds_of_streams_folds_into_a_bounded_number_of_rows() -> None:
    result = many_streams()
    ids = result.program.stream_ids
    assert len(ids) >= 300 and result.status == "ok"
    rows = gantt_rows(result)
    assert len(rows) == MAX_ROWS
    shown, other = rows[:-1], rows[-1]
    assert other.label == f"other streams ({len(ids) - MAX_ROWS + 1})"
    assert sorted(s for row in rows for s in row.streams) == sorted(ids)  # each exactly once
    assert all(len(row.streams) == 1 and row.label == f"stream {row.streams[0]}"
               for row in shown)
    busy = [result.busy_us(row.streams[0]) for row in shown]
    assert busy == sorted(busy, reverse=True)  # busiest first
    assert min(busy) >= max(result.busy_us(s) for s in other.streams)
    assert len(gantt_rows(result, max_rows=10)) == 10


def test_few_streams_get_a_row_each_in_stream_order() -> None:
    result = emulate(load_graph(EXAMPLES / "fork_join.yaml"),
                     load_plan(EXAMPLES / "fork_join.plan.json"))
    assert [(r.label, r.streams) for r in gantt_rows(result)] == [
        ("stream 0", (0,)), ("stream 1", (1,))]


def test_blocked_streams_keep_their_rows_when_streams_are_folded() -> None:
    result = emulate(load_graph(EXAMPLES / "fork_join.yaml"),
                     load_plan(EXAMPLES / "fork_join.deadlock.plan.json"))
    blocked = {b.stream for b in result.deadlock}
    rows = gantt_rows(result, max_rows=1)
    assert [r.label for r in rows] == ["other streams (2)"]
    rows = gantt_rows(result, max_rows=2)
    assert rows[0].streams[0] in blocked and len(rows) == 2


def test_bars_carry_the_name_else_the_type_when_they_are_wide_enough() -> None:
    assert bar_label("conv1_relu", "Relu", 200.0, char_px=5.0) == "conv1_relu"
    assert bar_label("conv1_relu", "Relu", 30.0, char_px=5.0) == "Relu"
    assert bar_label("conv1_relu", "Relu", 10.0, char_px=5.0) is None


def test_the_gantt_of_hundreds_of_streams_is_drawn() -> None:
    pytest.importorskip("matplotlib")
    assert gantt_png(many_streams()).startswith(PNG)


# -- the trace: microseconds, no overlap through rounding ----------------------------------------

def _slices(trace: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    per_stream: dict[int, list[dict[str, Any]]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            per_stream.setdefault(e["tid"], []).append(e)
    return {sid: sorted(s, key=lambda e: e["ts"]) for sid, s in per_stream.items()}


def _ns(value: float) -> int:
    return round(value * 1000)


def test_trace_times_are_microseconds_on_a_hand_computed_plan() -> None:
    # a (10 us) and b (5 us) on stream 0, each after 2 us launch: a 0..12, b 12..19
    graph = chain_graph("us", {"a": 10.0, "b": 5.0}, [("a", "b")])
    trace = trace_dict(emulate(graph, plan_dict("us", {0: ["a", "b"]})))
    assert trace["displayTimeUnit"] == "ns"  # display only: ts and dur stay microseconds
    got = [(e["name"], e["ts"], e["dur"]) for e in _slices(trace)[0]]
    assert got == [("a", 0.0, 12.0), ("b", 12.0, 7.0)]
    assert trace["otherData"]["makespan_us"] == 19.0


def test_trace_slices_of_a_stream_never_overlap_after_rounding() -> None:
    # durations of a third of a nanosecond's worth of fractions: rounding each dur on its own
    # would make a slice end after the next one starts
    costs = {f"n{i}": 1.0 / 3 + 0.0004 * i for i in range(30)}
    names = list(costs)
    graph = chain_graph("round", costs, list(itertools.pairwise(names)))
    trace = trace_dict(emulate(graph, plan_dict("round", {0: names})))
    for slices in [*_slices(trace).values(), *_slices(trace_dict(many_streams())).values()]:
        for before, after in itertools.pairwise(slices):
            assert _ns(before["ts"]) + _ns(before["dur"]) <= _ns(after["ts"])
            assert before["dur"] >= 0
    ends = [(_ns(e["ts"]), _ns(e["dur"])) for e in _slices(trace)[0]]
    assert all(a + d == b for (a, d), (b, _) in itertools.pairwise(ends))  # back to back


# -- failed runs: diagnostics up to the failure ------------------------------------------------

def test_a_deadlocked_plan_run_unverified_writes_trace_and_gantt_and_exits_5(
        tmp_path: Path) -> None:
    trace_path, gantt_path = tmp_path / "t.json", tmp_path / "g.png"
    gantt = str(gantt_path) if _has_matplotlib() else None
    text, code = emulate_command(EXAMPLES / "fork_join.yaml",
                                 EXAMPLES / "fork_join.deadlock.plan.json", json_out=False,
                                 trace=str(trace_path), gantt=gantt, cost=None, verify=False)
    assert code == 5 and "status deadlock" in text
    assert f"wrote {trace_path} (diagnostics of the failed run)" in text
    trace = json.loads(trace_path.read_text())
    assert trace["otherData"]["status"] == "deadlock"
    waiting = {e["tid"]: e for e in trace["traceEvents"]
               if e["ph"] == "X" and e["cat"] == "deadlock"}
    assert {sid: e["name"] for sid, e in waiting.items()} == {
        0: "waiting for event 1", 1: "waiting for event 0"}
    makespan = trace["otherData"]["makespan_us"]
    # stream 0 blocked after a (12 us), stream 1 at once: both wait until the end
    assert [(waiting[s]["ts"], waiting[s]["dur"]) for s in (0, 1)] == [
        (12.0, makespan - 12.0), (0.0, makespan)]
    assert waiting[0]["args"]["by"] == [{"task": "fork_join_Send_1", "stream": 1}]
    instants = {e["tid"]: e["name"] for e in trace["traceEvents"] if e["ph"] == "i"}
    assert instants == {0: "blocked: waiting for event 1", 1: "blocked: waiting for event 0"}
    # a run that did not end has no critical chain: no task ended last
    assert not any(e.get("args", {}).get("critical_chain") for e in trace["traceEvents"])
    if gantt is not None:
        assert gantt_path.read_bytes().startswith(PNG)


def test_a_violating_plan_run_unverified_marks_the_violations(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text, code = emulate_command(EXAMPLES / "fork_join.yaml",
                                 EXAMPLES / "fork_join.no_events.plan.json", json_out=True,
                                 trace=str(path), gantt=None, cost=None, verify=False)
    assert code == 5 and json.loads(text)["status"] == "violation"  # --json: stdout is JSON
    marks = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "i"]
    assert marks and all(e["cat"] == "violation" for e in marks)
    first = marks[0]
    assert (first["name"], first["tid"], first["ts"]) == ("violation: early_start", 1, 0.0)
    assert first["args"]["producer"] == "a" and first["args"]["consumer"] == "c"


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_docs_state_the_row_limit_the_code_uses() -> None:
    docs = (EXAMPLES.parents[1] / "docs" / "emulation-report.md").read_text()
    assert f"at most {MAX_ROWS} rows" in docs and f"the {MAX_ROWS - 1} busiest" in docs
