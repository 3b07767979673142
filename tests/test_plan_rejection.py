"""`verify` and `emulate` reject the same broken plan files with the same exit codes: 3 for a plan
that does not follow the plan schema (the message on stderr names the file, the field and the
expected value), 5 for a plan the verifier finds wrong (emulate prints the verifier's violations
on stderr and no report, whether it verified the plan first or while running it). Huge claimed
counts fail at once instead of hanging."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamalloc.background import Background, can_fork
from streamalloc.cli import main
from streamalloc.commands import emulate as emulate_command_module

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "examples" / "graphs" / "train_step.yaml"
OTHER_PLAN = ROOT / "examples" / "plans" / "fork_join.plan.json"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    assert main(["allocate", str(GRAPH), "-o", str(path)]) == 0
    return json.loads(path.read_text())


def _drop_last_event(p: dict[str, Any]) -> None:
    p["events"].pop()


def _swap_sender(p: dict[str, Any]) -> None:
    p["events"][0]["send"] = p["events"][1]["send"]


def _other_graph_name(p: dict[str, Any]) -> None:
    p["graph"] = "other"


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(p: dict[str, Any]) -> None:
        target = p
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


# (change, exit code of both commands, what stderr says)
CASES = {
    "event id 1e30": (_set("events", 0, "id", value=1e30), 3,
                      "field events[0].id: expected an integer >= 0"),
    "event id 10**30": (_set("sync_nodes", 0, "event", value=10**30), 3,
                        "field sync_nodes[0].event: expected an integer >= 0"),
    "bool sync stream": (_set("sync_nodes", 0, "stream", value=True), 3,
                         "field sync_nodes[0].stream: expected an integer >= 0 (up to "
                         "2147483647), found true"),
    "bool node stream": (_set("nodes", "loss", "physical_stream", value=False), 3,
                         "field nodes['loss'].physical_stream: expected an integer >= -1"),
    "bool event stream": (_set("events", 0, "send_stream", value=True), 3,
                          "field events[0].send_stream"),
    "1e12 streams": (_set("physical_stream_count", value=10**12), 3,
                     "field physical_stream_count: expected an integer >= 0 (up to 2147483647)"),
    "number option": (_set("options", "ge.hcomParallel", value=1), 3,
                      "field options['ge.hcomParallel']: expected a string, found 1"),
    "events entry missing": (_drop_last_event, 5, "but no entry in `events`"),
    "events entry mismatch": (_swap_sender, 5, "the entry does not match its Send task"),
    "another graph's name": (_other_graph_name, 5, "graph-mismatch: the plan is for graph "
                                                   "'other'"),
    "2e9 streams and events": (lambda p: p.update(physical_stream_count=2 * 10**9,
                                                  event_count=2 * 10**9), 5,
                               "stream-gap: physical_stream_count is 2000000000 but "
                               "1999999996 streams (4-67, ...) have no task list"),
}


def _write(tmp_path: Path, good: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> Path:
    plan = copy.deepcopy(good)
    change(plan)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


@pytest.fixture(params=["verified first", "verified while it runs"])
def verifier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where emulate verifies a plan: before running it (small plans), or in a child process
    while it runs (large ones; forced here for the small test graph)."""
    if request.param == "verified while it runs":
        if not can_fork():
            pytest.skip("needs os.fork")
        monkeypatch.setattr(emulate_command_module, "BACKGROUND_FROM", 0)
    return str(request.param)


@pytest.mark.parametrize("case", sorted(CASES))
def test_verify_and_emulate_reject_the_same_broken_plans(
        case: str, good: dict[str, Any], tmp_path: Path, verifier: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    change, code, message = CASES[case]
    path = _write(tmp_path, good, change)
    capsys.readouterr()
    began = time.perf_counter()
    assert main(["verify", str(GRAPH), str(path)]) == code
    verify_out, verify_err = capsys.readouterr()
    assert main(["emulate", str(GRAPH), str(path), "--json"]) == code
    emulate_out, emulate_err = capsys.readouterr()
    assert time.perf_counter() - began < 20  # sizes are checked before anything is allocated
    assert not emulate_out  # nothing ran: no report
    assert message in emulate_err, emulate_err
    assert str(path) in emulate_err
    if code == 3:  # an input error: on stderr, not stdout
        assert not verify_out and message in verify_err and str(path) in verify_err
    else:  # a wrong plan: verify's report is its output; emulate's error carries the same lines
        assert message in verify_out and not verify_err
        for line in verify_out.splitlines()[1:-1]:
            assert line in emulate_err


def test_a_plan_made_for_another_graph_is_rejected_by_both(
        verifier: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(GRAPH), str(OTHER_PLAN)]) == 5
    assert "graph-mismatch" in capsys.readouterr().out
    assert main(["emulate", str(GRAPH), str(OTHER_PLAN)]) == 5
    out, err = capsys.readouterr()
    assert not out and "graph-mismatch" in err and "not emulated" in err


def test_no_verify_runs_a_plan_the_verifier_rejects(good: dict[str, Any], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, good, _drop_last_event)  # the Send/Recv tasks are still there
    assert main(["emulate", str(GRAPH), str(path), "--no-verify"]) == 0
    assert "status ok" in capsys.readouterr().out
    # the schema is still checked
    path = _write(tmp_path, good, _set("events", 0, "id", value=1e30))
    assert main(["emulate", str(GRAPH), str(path), "--no-verify"]) == 3


def test_the_emulator_reads_the_plan_under_the_options_it_records(
        good: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # made with a raised per-stream limit: over the default one, within the recorded one
    plan = copy.deepcopy(good)
    plan["options"] = {**plan["options"], "streamalloc.max_task_per_stream": "4096"}
    plan["tasks"] = {**plan["tasks"], "2": 2000}
    path = tmp_path / "raised.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    assert main(["verify", str(GRAPH), str(path)]) == 0
    assert main(["emulate", str(GRAPH), str(path)]) == 0
    plan["options"].pop("streamalloc.max_task_per_stream")
    path.write_text(json.dumps(plan), encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", str(GRAPH), str(path)]) == 4
    assert main(["emulate", str(GRAPH), str(path)]) == 4
    assert "limit-tasks" in capsys.readouterr().err


def test_a_child_verifies_only_when_the_memory_it_needs_is_free(
        good: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    started: list[object] = []

    class Recorded(Background[Any]):
        def __init__(self, *args: Any) -> None:
            started.append(args)
            super().__init__(*args)

    monkeypatch.setattr(emulate_command_module, "BACKGROUND_FROM", 0)
    monkeypatch.setattr(emulate_command_module, "Background", Recorded)
    path = _write(tmp_path, good, _drop_last_event)
    needs = emulate_command_module.CHILD_BYTES_PER_TASK * sum(map(len, good["streams"].values()))
    for free, forks in ((2 * needs - 1, 0), (None, 0), (2 * needs, 1)):
        monkeypatch.setattr(emulate_command_module, "free_memory", lambda free=free: free)
        started.clear()
        assert main(["emulate", str(GRAPH), str(path)]) == 5
        assert "events" in capsys.readouterr().err
        assert len(started) == forks


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(signal, "SIGALRM"),
                    reason="needs named pipes and alarms")
def test_a_plan_read_from_a_pipe_is_read_once(good: dict[str, Any], tmp_path: Path,
                                              verifier: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    plan, pipe = tmp_path / "plan.json", tmp_path / "plan.pipe"  # `emulate GRAPH <(...)`
    plan.write_text(json.dumps(good), encoding="utf-8")
    os.mkfifo(pipe)
    # a writer process, not a thread: a second thread would keep emulate from forking
    writer = subprocess.Popen([sys.executable, "-c", "import pathlib, sys; pathlib.Path(sys.argv["
                               "2]).write_bytes(pathlib.Path(sys.argv[1]).read_bytes())",
                               str(plan), str(pipe)])
    previous = signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(60)  # a second read of the pipe would wait for a writer for ever
    try:
        assert main(["emulate", str(GRAPH), str(pipe), "--json"]) == 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        writer.kill()
        writer.wait()
    assert json.loads(capsys.readouterr().out)["status"] == "ok"


def _timed_out(signum: int, frame: object) -> None:
    raise TimeoutError("emulate waited for the pipe again")
