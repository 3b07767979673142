"""`streamalloc sweep SPEC.yaml`: the spec's checks (file, line, field; exit 3), the points in
the spec's order, and the same rows (but for wall time and memory) whether the points run in
this process, in local processes (`--jobs 2`) or on a local Ray instance (`--ray local`)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from streamalloc import schemas
from streamalloc.cli import main, parser
from streamalloc.commands import sweep as sweep_module
from streamalloc.commands import sweep_run
from streamalloc.commands.sweep import UNREPRODUCIBLE, sweep, sweep_markdown
from streamalloc.commands.sweep_spec import SPEC_SCHEMA, SweepPoint, load_spec

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT / "examples" / "graphs"
EXAMPLE = ROOT / "examples" / "sweeps" / "parallel_streams.yaml"
HEADER = "format: streamalloc.sweep-spec/v1\n"
# 2 graphs x 2 option values x (ge + optimal) = 8 points, the solver at 1 deterministic second
SMALL = HEADER + f"""\
graphs: [{GRAPHS / "train_step.yaml"}, {GRAPHS / "transformer_layers.yaml"}]
options:
  ge.hcomParallel: ["0", "1"]
modes: [ge, optimal]
solver: {{time_limit: 1, seed: 0, workers: 1}}
"""


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def reproducible(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows without the columns that differ from run to run."""
    return [{k: v for k, v in row.items() if k not in UNREPRODUCIBLE}
            for row in document["rows"]]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["sweep", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_serial_processes_and_ray_give_the_same_rows(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import ray  # a dev dependency: CI fails, not skips, without it

    spec = write(tmp_path, SMALL)
    serial = sweep(spec, jobs=1)
    jsonschema.Draft202012Validator(schemas.SWEEP_SCHEMA).validate(serial)
    assert [(r["point"], r["input"], r["options"]["ge.hcomParallel"], r["mode"])
            for r in serial["rows"][:4]] == [
        (0, "train_step", "0", "ge"), (1, "train_step", "0", "optimal"),
        (2, "train_step", "1", "ge"), (3, "train_step", "1", "optimal")]
    assert reproducible(sweep(spec, jobs=2)) == reproducible(serial)
    out = tmp_path / "ray.json"
    try:  # the command starts a local instance of --jobs CPUs without a dashboard, and stops it
        code, _, err = run_cli(capsys, spec, "--ray", "local", "--jobs", "2", "-o", str(out))
        assert code == 0, err
        assert not ray.is_initialized()
    finally:
        ray.shutdown()
    assert reproducible(json.loads(out.read_text())) == reproducible(serial)


def test_the_example_spec_runs_and_writes_json_and_markdown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, md = tmp_path / "sweep.json", tmp_path / "sweep.md"
    code, text, err = run_cli(capsys, str(EXAMPLE), "--jobs", "1", "-o", str(out), "--md",
                              str(md))
    assert code == 0, err
    document = json.loads(out.read_text())
    assert document["format"] == schemas.SWEEP_FORMAT == sweep_module.SWEEP_FORMAT
    jsonschema.Draft202012Validator(schemas.SWEEP_SCHEMA).validate(document)
    # ge points carry no solver settings; optimal points cross the two slacks
    assert [(r["mode"], r["solver"].get("makespan_slack")) for r in document["rows"][:3]] == [
        ("ge", None), ("optimal", 0), ("optimal", 10)]
    assert len(document["rows"]) == 12
    header = text.splitlines()[0].split()
    assert header[:4] == ["input", "ge.hcomParallel", "mode", "makespan_slack"]
    assert md.read_text() == sweep_markdown(document)
    assert md.read_text().startswith("| input | ge.hcomParallel | mode | makespan_slack |")
    code, printed, _ = run_cli(capsys, str(EXAMPLE), "--jobs", "1", "--json")
    assert code == 0 and reproducible(json.loads(printed)) == reproducible(document)


def test_points_come_in_the_spec_order(tmp_path: Path) -> None:
    (tmp_path / "g").mkdir()
    for name in ("b.yaml", "a.yaml"):
        (tmp_path / "g" / name).write_text((GRAPHS / "train_step.yaml").read_text())
    spec = load_spec(write(tmp_path, HEADER + """\
graphs: [g/*.yaml, g/a.yaml]
rules: [default, free]
options: {ge.hcomParallel: [0, "1"], ge.streamMaxParallelNum: "AIcoreEngine:2"}
modes: [ge-minimal, optimal]
solver: {makespan_slack: [0, 5], seed: 3}
"""))
    points = spec.points()
    # the glob sorted, a file named twice once; numbers read as option strings
    assert [p.file for p in points[::12]] == ["g/a.yaml", "g/b.yaml"]
    assert [(p.rules, dict(p.options)["ge.hcomParallel"], p.mode, p.solver)
            for p in points[:6]] == [
        ("default", "0", "ge-minimal", ()),
        ("default", "0", "optimal", (("makespan_slack", 0), ("seed", 3))),
        ("default", "0", "optimal", (("makespan_slack", 5), ("seed", 3))),
        ("default", "1", "ge-minimal", ()),
        ("default", "1", "optimal", (("makespan_slack", 0), ("seed", 3))),
        ("default", "1", "optimal", (("makespan_slack", 5), ("seed", 3)))]
    assert [p.index for p in points] == list(range(24))
    assert dict(points[0].options)["ge.streamMaxParallelNum"] == "AIcoreEngine:2"


@pytest.mark.parametrize(("text", "message"), [
    ("format: streamalloc.sweep/v1\ngraphs: [a.yaml]\n",
     r"spec.yaml:1: field format: expected 'streamalloc.sweep-spec/v1', found "
     r"\"streamalloc.sweep/v1\""),
    (HEADER + "graphs: [a.yaml]\ngrid: {}\n",
     r"spec.yaml:3: the sweep spec: unknown key 'grid'; valid keys: cost, format, graphs"),
    (HEADER + "graphs: [a.yaml]\nsolver:\n  objective: [events, fast]\n",
     r"spec.yaml:4: field solver.objective\[1\]: expected 'events' or 'makespan', found \"fast\""),
    (HEADER + "graphs: [a.yaml]\nsolver:\n  time_limt: 1\n",
     r"spec.yaml:4: field solver: unknown key 'time_limt'; valid keys: concurrency"),
    (HEADER + "graphs: [a.yaml]\nsolver: {workers: 0}\n",
     r"spec.yaml:3: field solver.workers: expected an integer >= 1, found 0"),
    (HEADER + "graphs: [a.yaml]\nmodes: [ge, best]\n",
     r"spec.yaml:3: field modes\[1\]: expected one of ge, ge-minimal, optimal, found \"best\""),
    (HEADER + "graphs: [a.yaml]\noptions: {ge.hcomParallel: true}\n",
     r"field options\['ge.hcomParallel'\]: expected a string or an integer or a number, or a "
     r"list of them, found true"),
    (HEADER + f"graphs:\n  - {GRAPHS / 'train_step.yaml'}\n  - nothere.yaml\n",
     r"spec.yaml:4: field graphs\[1\]: no graph file 'nothere.yaml' \(relative to "),
    (HEADER + "graphs: ['*.onnx']\n", r"spec.yaml:2: field graphs\[0\]: no file matches"),
    (HEADER + f"graphs: {GRAPHS / 'train_step.yaml'}\nrules: ge-static\n",
     r"spec.yaml:3: field rules: no shipped rule set or rule file 'ge-static'; shipped: default, "
     r"free"),
    (HEADER + "graphs: [a.yaml\n", r"spec.yaml:3:\d+: malformed YAML"),
    ("graphs: [a.yaml]\n", r"field format: expected .*found nothing \(missing key 'format'\)"),
])
def test_spec_errors_name_the_file_line_and_field(tmp_path: Path, text: str, message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, write(tmp_path, text), "--jobs", "1")
    assert (code, out) == (3, "")
    assert re.search(message, err), err
    assert err.rstrip().endswith("(docs/sweep-format.md)") or "malformed YAML" in err


def test_a_failing_point_names_the_point_and_keeps_its_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write(tmp_path, HEADER + f"graphs: {GRAPHS / 'train_step.yaml'}\nmodes: ge\n"
                 "options: {ge.hcomParallel: [1, 7]}\n")
    code, out, err = run_cli(capsys, spec, "--jobs", "1", "-o", str(tmp_path / "o.json"))
    assert (code, out) == (3, "")
    assert "spec.yaml: point 1 (" in err and "ge.hcomParallel=7, ge): " in err
    assert "ge): the point's options: option ge.hcomParallel is '7'" in err
    assert not (tmp_path / "o.json").exists()


def dies_at_point_1(point: SweepPoint) -> sweep_run.PointResult:
    """A point's run whose process dies at point 1 (by name: the processes are spawned)."""
    if point.index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return sweep_run.run_point(point)


def test_points_left_by_a_dead_process_run_one_at_a_time(tmp_path: Path) -> None:
    """--jobs 2: a process that dies (the OOM killer, say) breaks the pool; the points not
    done run again one at a time, and the one whose process dies even alone fails, named
    (an internal error without the point before)."""
    points = load_spec(write(tmp_path, HEADER + f"graphs: {GRAPHS / 'train_step.yaml'}\n"
                             "modes: [ge, ge-minimal]\noptions: {ge.hcomParallel: [0, 1]}\n"
                             )).points()
    results = {r.index: r for r in sweep_run.processes(points, 2, dies_at_point_1)}
    assert sorted(results) == [0, 1, 2, 3]
    died = results.pop(1)
    assert died.row is None and died.error is not None
    assert died.error.message.startswith("its process died")
    for k, result in results.items():
        assert result.error is None and result.row is not None
        alone = sweep_run.run_point(points[k]).row
        assert alone is not None
        assert {c: v for c, v in result.row.items() if c not in UNREPRODUCIBLE} \
            == {c: v for c, v in alone.items() if c not in UNREPRODUCIBLE}


def test_input_warnings_print_once_whatever_the_points(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "typo.yaml"
    graph.write_text("format: streamalloc.graph/v1\nname: typo\nnodes:\n"
                     "  - {name: x, type: Data}\n  - {name: r, type: Relue, inputs: [x]}\n")
    spec = write(tmp_path, HEADER + "graphs: typo.yaml\nmodes: [ge, ge-minimal]\n")
    code, _, err = run_cli(capsys, spec, "--jobs", "1")
    assert code == 0, err
    assert len([line for line in err.splitlines() if "Relue" in line]) == 1


def test_ray_missing_is_an_input_error_naming_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, _, err = run_cli(capsys, write(tmp_path, SMALL), "--ray", "local")
    assert code == 3
    assert "pip install 'streamalloc[ray]'" in err


def test_jobs_below_one_is_a_usage_error(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, write(tmp_path, SMALL), "--jobs", "0")
    assert code == 2 and "--jobs 0" in err


def test_the_schemas_are_printed_and_accept_the_example(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    for kind, schema in (("sweep", schemas.SWEEP_SCHEMA), ("sweep-spec", SPEC_SCHEMA)):
        capsys.readouterr()
        assert main(["schema", kind]) == 0
        assert json.loads(capsys.readouterr().out) == schema
        jsonschema.Draft202012Validator.check_schema(schema)
    assert "sweep" in parser.SCHEMA_KINDS
    import yaml
    jsonschema.Draft202012Validator(SPEC_SCHEMA).validate(yaml.safe_load(EXAMPLE.read_text()))
