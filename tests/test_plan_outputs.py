"""`allocate`'s outputs (commands/plan_outputs.py): staged in a forked child while the plan is
verified, or here after it; the same files and text either way, and none when the verifier
rejects the plan or one of them cannot be written."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from streamalloc import api
from streamalloc.background import SERIAL_ENV, usable_cpus
from streamalloc.cli import main
from streamalloc.commands import plan_outputs
from streamalloc.commands.plan_outputs import PlanOutputs, verified_outputs
from streamalloc.errors import PlanVerifyError
from streamalloc.outputs import Staged

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "examples" / "graphs" / "train_step.yaml")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2,
                                reason="a child stages the outputs only with os.fork and two CPUs")


@pytest.fixture
def in_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plan staged in a child, whatever its size."""
    monkeypatch.setattr(plan_outputs, "BACKGROUND_FROM", 0)
    monkeypatch.delenv(SERIAL_ENV, raising=False)


def _outputs(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
             ) -> tuple[int, str, str, dict[str, bytes]]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err, {p.name: p.read_bytes() for p in sorted(tmp_path.iterdir())}


@pytest.mark.parametrize("extra", [["--nodes"], ["--json"]])
def test_staged_in_a_child_the_same_as_here(tmp_path: Path, in_child: None,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str],
                                            extra: list[str]) -> None:
    real = plan_outputs._staged

    def staged(*args: object) -> tuple[list[Staged], str]:  # the text tells who staged
        found, text = real(*args)  # type: ignore[arg-type]
        return found, f"{os.getpid()}\n{text}"

    monkeypatch.setattr(plan_outputs, "_staged", staged)
    argv = ["allocate", TRAIN, "-o", str(tmp_path / "plan.json"),
            "--graph-out", str(tmp_path / "synced.yaml"), *extra]
    code, out, err, files = _outputs(tmp_path, argv, capsys)
    pid, _, text = out.partition("\n")
    assert (code, err) == (0, "")
    monkeypatch.setenv(SERIAL_ENV, "1")
    code, out, err, serial_files = _outputs(tmp_path, argv, capsys)
    serial_pid, _, serial_text = out.partition("\n")
    assert (code, err) == (0, "")
    assert int(pid) != os.getpid() and int(serial_pid) == os.getpid()
    assert text == serial_text and files == serial_files
    assert sorted(files) == ["plan.json", "synced.yaml"]


@pytest.mark.parametrize("serial", [False, True])
def test_a_rejected_plan_writes_nothing_and_keeps_the_old_file(
        tmp_path: Path, in_child: None, monkeypatch: pytest.MonkeyPatch,
        serial: bool) -> None:
    if serial:
        monkeypatch.setenv(SERIAL_ENV, "1")
    graph = api.read_graph(TRAIN)
    plan = api.synchronize(graph, api.allocate(graph, None, "ge"))
    old = tmp_path / "plan.json"
    old.write_text("previous\n")
    outputs = PlanOutputs(old, tmp_path / "synced.json", json=False, nodes=False)

    def rejected() -> None:
        # in a child, the verdict comes after the outputs were staged: they must be removed
        staged = tmp_path / "synced.json.tmp"
        for _ in range(3000 if not serial else 0):
            if staged.exists():
                break
            time.sleep(0.01)
        else:
            assert serial, "the child staged no output"
        raise PlanVerifyError("the verifier rejects the plan")

    with pytest.raises(PlanVerifyError, match="rejects"):
        verified_outputs(graph, plan, plan.to_json(), outputs, rejected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
    assert old.read_text() == "previous\n"


@pytest.mark.parametrize("serial", [False, True])
def test_an_unwritable_output_leaves_no_other(tmp_path: Path, in_child: None,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              serial: bool) -> None:
    if serial:
        monkeypatch.setenv(SERIAL_ENV, "1")
    missing = tmp_path / "no_such_dir" / "synced.yaml"
    argv = ["allocate", TRAIN, "-o", str(tmp_path / "plan.json"), "--graph-out", str(missing)]
    code, out, err, files = _outputs(tmp_path, argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"streamalloc: error: {missing}: cannot write the output file")
    assert files == {}


@pytest.mark.parametrize("serial", [False, True])
def test_an_output_that_cannot_be_put_in_place_leaves_no_temporary_file(
        tmp_path: Path, in_child: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], serial: bool) -> None:
    if serial:
        monkeypatch.setenv(SERIAL_ENV, "1")
    (tmp_path / "plan.json").mkdir()  # written beside it, but no file replaces a directory
    argv = ["allocate", TRAIN, "-o", str(tmp_path / "plan.json"),
            "--graph-out", str(tmp_path / "synced.yaml")]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"streamalloc: error: {tmp_path / 'plan.json'}: cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
