"""Outputs: the JSON report (formats.md section 7), Chrome trace, Gantt chart, the command."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest
from emu.conftest import EXAMPLES

from streamalloc.commands.emulate import emulate_command
from streamalloc.errors import InputError, PlanVerifyError, UsageError
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, load_plan, trace_dict

GRAPH, PLAN = EXAMPLES / "fork_join.yaml", EXAMPLES / "fork_join.plan.json"
SECTION_7 = ["format", "graph", "makespan_us", "status", "streams", "event_records",
             "event_waits", "lower_bounds"]


def command(plan: Path = PLAN, **options: Any) -> tuple[str, int]:
    args = {"json_out": False, "trace": None, "gantt": None, "cost": None, **options}
    return emulate_command(GRAPH, plan, **args)


def test_json_report_follows_section_7() -> None:
    text, code = command(json_out=True)
    report = json.loads(text)
    assert code == 0 and list(report)[:len(SECTION_7)] == SECTION_7
    assert report["format"] == "streamalloc.emulation/v1" and report["graph"] == "fork_join"
    assert report["status"] == "ok" and isinstance(report["makespan_us"], float)
    for row in report["streams"].values():
        assert set(row) == {"busy_us", "idle_us", "tasks"}
    assert set(report["lower_bounds"]) == {"critical_path_us", "work_over_units_us"}
    assert "deadlock" not in report and "violations" not in report


def test_json_report_is_byte_identical_across_runs() -> None:
    assert command(json_out=True)[0] == command(json_out=True)[0]
    deadlock = EXAMPLES / "fork_join.deadlock.plan.json"
    assert command(deadlock, json_out=True, verify=False)[0] == \
        command(deadlock, json_out=True, verify=False)[0]


def test_text_summary_has_the_headline_and_tables() -> None:
    text, _ = command()
    assert text.startswith("graph fork_join: status ok, makespan 42.0 us, 8 tasks\n")
    assert "lower bounds: critical path 40.0 us, work over units 1.469 us" in text
    assert "streams: 2 (1 created at load, 0 reused from the pool" in text
    assert "AIcoreEngine     32      4     47.0" in text


def _result() -> Any:
    return emulate(load_graph(GRAPH), load_plan(PLAN))


def test_trace_is_chrome_trace_json_with_a_track_per_stream_and_flow_arrows(
        tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    text, code = command(trace=str(path))
    assert code == 0 and f"wrote {path}" in text
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert names == {0: "stream 0", 1: "stream 1"}
    slices = {e["name"]: e for e in events if e["ph"] == "X"}
    assert sorted(slices) == sorted(["a", "b", "c", "d", "fork_join_Send_0", "fork_join_Recv_0",
                                     "fork_join_Send_1", "fork_join_Recv_1"])
    assert (slices["b"]["ts"], slices["b"]["dur"], slices["b"]["tid"]) == (13.0, 22.0, 0)
    assert slices["fork_join_Recv_0"]["dur"] == 14.0  # a Recv spans its wait
    starts = [e for e in events if e["ph"] == "s"]
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == 2 and {e["cat"] for e in starts} == {"event"}
    for start in starts:
        end = ends[start["id"]]
        assert end["bp"] == "e" and end["name"] == start["name"] and end["tid"] != start["tid"]
    send = slices["fork_join_Send_0"]
    first = next(e for e in starts if e["name"] == "event 0")
    assert send["ts"] <= first["ts"] <= send["ts"] + send["dur"]  # binds to the Send slice
    recv = slices["fork_join_Recv_0"]
    assert recv["ts"] <= ends[first["id"]]["ts"] <= recv["ts"] + recv["dur"]


def test_trace_has_activation_arrows() -> None:
    result = emulate(load_graph(EXAMPLES / "activation.yaml"),
                     load_plan(EXAMPLES / "activation.plan.json"))
    flows = [e for e in trace_dict(result)["traceEvents"] if e["ph"] in ("s", "f")]
    assert [(e["ph"], e["cat"], e["tid"], e["ts"]) for e in flows] == [
        ("s", "activation", 0, 0.0), ("f", "activation", 1, 3.0)]


def test_gantt_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "out.png"
    _, code = command(gantt=str(path))
    assert code == 0 and path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_gantt_without_matplotlib_says_how_to_install_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    trace = tmp_path / "trace.json"
    with pytest.raises(UsageError, match=r"--gantt needs matplotlib.*streamalloc\[plot\]"):
        command(gantt=str(tmp_path / "out.png"), trace=str(trace))
    assert not trace.exists()  # nothing is written when the command fails


def test_plans_rejected_before_the_run_write_no_output_file(tmp_path: Path) -> None:
    # (a run that fails writes its trace and gantt as diagnostics: test_pictures.py)
    trace, gantt = tmp_path / "t.json", tmp_path / "g.png"
    with pytest.raises(PlanVerifyError):  # rejected by the verifier: nothing runs
        command(EXAMPLES / "fork_join.deadlock.plan.json", trace=str(trace), gantt=str(gantt))
    assert not trace.exists() and not gantt.exists()


def test_unwritable_outputs_are_usage_errors_and_leave_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    with pytest.raises(UsageError, match="cannot write the output file"):
        command(trace=str(trace), gantt=str(tmp_path / "missing" / "g.png"))
    assert not trace.exists()


def test_emulate_without_a_plan_allocates_in_ge_mode() -> None:
    text, code = emulate_command(GRAPH, None, json_out=True, trace=None, gantt=None, cost=None)
    report = json.loads(text)
    assert code == 0 and report["status"] == "ok"
    assert report["makespan_us"] >= max(report["lower_bounds"].values())


def test_bad_inputs_keep_their_exit_codes(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        command(cost=str(tmp_path / "absent.yaml"))
    bad = tmp_path / "plan.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match="format: expected"):
        command(bad)
