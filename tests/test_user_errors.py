"""What a user meets: strict options, input errors instead of internal ones, one behaviour across
commands (broken pipes, Ctrl-C, --set, --json, --nodes) and a fast `--version`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from streamalloc import api, cli
from streamalloc.cli import handlers, main, parser
from streamalloc.errors import InputWarning
from streamalloc.ir.options import OPTIONS, near_miss, options_markdown

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "examples" / "graphs" / "train_step.yaml")
LAYERS = str(ROOT / "examples" / "graphs" / "transformer_layers.yaml")
GRAPH = """\
format: streamalloc.graph/v1
name: demo
options: {OPTIONS}
nodes:
  - {{name: data, type: Data, outputs: [{{shape: [1, 4], dtype: float16}}]}}
  - {{name: relu, type: {RELU}, inputs: ["data:0"],
     outputs: [{{shape: [1, {DIM}], dtype: {DTYPE}}}]}}
  - {{name: ar, type: HcomAllReduce, inputs: [relu], attrs: {{fusion: 1}}}}
  - {{name: add, type: Add, inputs: [ar]}}
"""


def graph_file(tmp_path: Path, options: str = "{}", relu: str = "Relu", dim: str = "4",
               dtype: str = "float16") -> str:
    path = tmp_path / "g.yaml"
    path.write_text(GRAPH.format(OPTIONS=options, RELU=relu, DIM=dim, DTYPE=dtype),
                    encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("streamalloc: error: "), err
    return lines[0]


# --- 1. strict options ----------------------------------------------------------------------

@pytest.mark.parametrize(("setting", "expected"), [
    ("ge.streamMaxParalelNum=AIcoreEngine:2", "did you mean 'ge.streamMaxParallelNum'"),
    ("ge.hcomparallel=1", "did you mean 'ge.hcomParallel'"),
    ("streamalloc.max_evnts=3", "did you mean 'streamalloc.max_events'"),
    ("streamalloc.colour=red", "the streamalloc.* options are: streamalloc.max_streams"),
    ("ge.hcomParallel=maybe", "option ge.hcomParallel is 'maybe'; valid: '0', '1', ''"),
    ("ge.enableSingleStream=yes", "valid: '', 'true', 'false'"),
    ("ge.topoSortingMode=9", "valid: '', '0', '1', '2', '3'"),
    ("ge.streamMaxParallelNum=Bogus:4", "no engine 'Bogus'; engines: AIcoreEngine"),
    ("ge.streamMaxParallelNum=AIcoreEngine:0", "expected ENGINE:N with N a positive integer"),
    ("streamalloc.max_events=0", "expected a positive integer"),
    ("streamalloc.max_streams=-3", "expected an integer of 2 or more"),
    ("streamalloc.max_streams=1", "expected an integer of 2 or more (the runtime's stream slots, "
     "slot 0 the caller's stream)"),
    ("ge.autoMultistreamParallelMode=LoadBalance:99", "N in 1..64"),
    ("ge.event=events", "valid: '', 'notify'"),
])
def test_bad_options_are_exit_3_naming_the_fix(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path, setting: str,
                                               expected: str) -> None:
    graph = graph_file(tmp_path)
    for command in (["allocate", graph], ["show", graph], ["vars", graph], ["emulate", graph]):
        code, out, err = run(capsys, *command, "--set", setting)
        assert code == 3, (command, err)
        assert expected in one_error(err), (command, err)
        assert out == ""


def test_options_in_the_file_are_checked_too(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    graph = graph_file(tmp_path, '{ge.streamMaxParalelNum: "AIcoreEngine:2"}')
    code, _, err = run(capsys, "allocate", graph)
    assert code == 3
    assert "g.yaml: unknown option 'ge.streamMaxParalelNum'; did you mean" in one_error(err)


def test_unknown_foreign_options_are_one_warning(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    graph = graph_file(tmp_path, '{ge.exec.precision_mode: allow_fp32_to_fp16, '
                                 'ge.graphRunMode: "1"}')
    code, out, err = run(capsys, "allocate", graph)
    assert code == 0
    assert "logical stream" in out
    assert err == (f"streamalloc: warning: {graph}: 2 option(s) this tool does not read, "
                   "ignored: ge.exec.precision_mode, ge.graphRunMode\n")


def test_an_option_a_rule_gates_on_is_read(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("format: streamalloc.rules/v1\nname: mine\nextends: ge-static-multi-stream\n"
                     "rules:\n  - {name: pin, kind: pin-stream, priority: 1150, "
                     "match: {type: Add}, when: {option: my.pin, equals: \"yes\"}, "
                     "options: {stream: 0}}\n", encoding="utf-8")
    code, _, err = run(capsys, "allocate", graph_file(tmp_path), "--rules", str(rules),
                       "--set", "my.pin=yes")
    # no unknown-option warning (the pin itself may warn that it had nothing to act on)
    assert code == 0 and "my.pin" not in err


def test_valid_values_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    graph = graph_file(tmp_path, '{ge.hcomParallel: "1", ge.enableSingleStream: "false", '
                                 'ge.streamMaxParallelNum: "AIcoreEngine:2,DNN_HCCL:1", '
                                 'streamalloc.max_events: "100", ge.topoSortingMode: "1"}')
    code, _, err = run(capsys, "allocate", graph)
    assert (code, err) == (0, "")


def test_near_miss() -> None:
    assert near_miss("ge.streamMaxParalelNum") == "ge.streamMaxParallelNum"
    assert near_miss("GE.HCOMPARALLEL") == "ge.hcomParallel"
    assert near_miss("ge.exec.precision_mode") is None
    assert near_miss("ge.graphRunMode") is None


def _readme_options() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("| option | values (default first) | effect |")
    lines = []
    for line in text[start:].splitlines():
        if not line.startswith("|"):
            break
        lines.append(line)
    return lines


def test_readme_options_table_is_the_code_table() -> None:
    assert _readme_options() == options_markdown().splitlines()
    assert len(OPTIONS) == len(_readme_options()) - 2


def test_unknown_dtype_is_exit_3_with_the_valid_ones(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    code, _, err = run(capsys, "show", graph_file(tmp_path, dtype="flaot16"))
    assert code == 3
    line = one_error(err)
    assert "g.yaml:7: node 'relu' field 'outputs.0.dtype': found 'flaot16'; valid: float32" in line


def test_a_typo_of_an_op_type_is_one_warning(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    code, _, err = run(capsys, "show", graph_file(tmp_path, relu="Relue"))
    assert code == 0
    assert err.count("\n") == 1
    assert err.startswith("streamalloc: warning: ")
    assert "1 node(s) of unknown op type(s)" in err
    assert "Relue (1 node(s); did you mean Relu?)" in err
    # a custom op type is not a typo, GE's variants of known types neither
    for custom in ("FooBarOp", "SoftmaxV2", "ConcatD"):
        code, _, err = run(capsys, "show", graph_file(tmp_path, relu=custom))
        assert (code, err) == (0, ""), custom


def test_no_op_type_warning_on_the_examples_and_golden_cases() -> None:
    paths = [TRAIN, LAYERS, *sorted(str(p) for p in (ROOT / "tests" / "goldens" / "cases")
                                    .glob("*.yaml"))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        for path in paths:
            api.check_op_types(api.load_graph(path))


# --- 2. input errors, not internal ones -------------------------------------------------------

@pytest.mark.parametrize("mode", [[], ["--mode", "optimal"], "check"])
def test_a_stand_alone_rule_set_without_an_assigning_rule(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path, mode: list[str] | str
                                                          ) -> None:
    """Ge mode has no stream to give; nor has the optimal mode's baseline, ge mode under the
    same rules (it once failed with exit 4 on GE's quirk Q1, a node left on no stream).
    `rules check` says so too (a docs walk-through found it printing "ok")."""
    rules = tmp_path / "r.yaml"
    rules.write_text("format: streamalloc.rules/v1\nname: lonely\nrules:\n"
                     "  - {name: lab, kind: stream-label, match: {type: Relu}, "
                     "options: {label: a}}\n", encoding="utf-8")
    if mode == "check":
        code, _, err = run(capsys, "rules", "check", str(rules))
        said = "rule set 'lonely' has no rule that assigns streams"
    else:
        code, _, err = run(capsys, "allocate", graph_file(tmp_path), "--rules", str(rules),
                           *mode)
        said = "rule set 'lonely' has no enabled rule that assigns streams"
    assert code == 3
    line = one_error(err)
    assert said in line
    assert "extends: ge-static-multi-stream" in line


@pytest.mark.parametrize("name", ["free", "ge-static-multi-stream", "ge-dynamic-shape"])
def test_rules_check_accepts_the_shipped_sets(capsys: pytest.CaptureFixture[str],
                                              name: str) -> None:
    code, out, _ = run(capsys, "rules", "check", name)
    assert code == 0 and f"ok, rule set {name!r}" in out


@pytest.mark.parametrize("mode", [[], ["--mode", "optimal"]])
def test_the_dynamic_shape_rule_set_named_is_the_default_it_names(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, mode: list[str]) -> None:
    """Without ENABLE_DYNAMIC_SHAPE_MULTI_STREAM no rule of ge-dynamic-shape assigns, and its
    dynamic flow keeps every node on stream 0: `--rules ge-dynamic-shape` gives the default's
    plan (it was exit 3, "no enabled rule that assigns streams")."""
    graph = tmp_path / "dyn.yaml"
    graph.write_text(Path(graph_file(tmp_path)).read_text(encoding="utf-8")
                     + "dynamic_shape: true\n", encoding="utf-8")
    named = tmp_path / "named.json"
    default = tmp_path / "default.json"
    assert run(capsys, "allocate", str(graph), "--rules", "ge-dynamic-shape", *mode,
               "-o", str(named))[0] == 0
    assert run(capsys, "allocate", str(graph), *mode, "-o", str(default))[0] == 0
    assert named.read_text(encoding="utf-8") == default.read_text(encoding="utf-8")


def test_rules_that_open_a_second_stream_in_single_stream_mode(
        capsys: pytest.CaptureFixture[str]) -> None:
    """GE fails on two main streams in single-stream mode; the error says which option and
    which rule set meet, and both ways out."""
    code, _, err = run(capsys, "allocate",
                       str(ROOT / "tests" / "goldens" / "cases" / "ex7_5_single_stream.yaml"),
                       "--rules", str(ROOT / "examples" / "rules" / "aicpu_apart_from_aicore.yaml"))
    assert code == 4
    line = one_error(err)
    assert "graph 'ex7_5'" in line and "rule set 'aicpu-apart-from-aicore'" in line
    assert "2 main streams" in line and 'set ge.enableSingleStream to "false"' in line
    assert "ge-static-single-stream" in line


def test_optimal_mode_on_a_graph_ge_fails_on_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    """GE's quirk Q1 leaves a node beyond the last stream id and its split fails: the optimal
    mode has no baseline to start from, and says why."""
    code, _, err = run(capsys, "allocate",
                       str(ROOT / "tests" / "goldens" / "cases" / "ex7_4b_quirk_q1.yaml"),
                       "--mode", "optimal", "--rules", "free")
    assert code == 4
    line = one_error(err)
    assert "optimal mode starts from the ge-mode plan" in line and "ge mode fails" in line
    assert "quirk Q1" in line


def test_a_dimension_beyond_int64_is_exit_3(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    code, _, err = run(capsys, "allocate", graph_file(tmp_path, dim="99999999999999999999"))
    assert code == 3
    assert "is greater than the maximum of 9223372036854775807" in one_error(err)


@pytest.mark.parametrize(("text", "said"), [
    ("[" * 100_000 + "]" * 100_000, "arrays or objects nested too deeply"),
    ('{"format": "streamalloc.graph/v1", "name": "g", "nodes": [], "x": ' + "9" * 5000 + "}",
     "Exceeds the limit (4300 digits) for integer string conversion"),
])
def test_json_python_cannot_hold_is_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           text: str, said: str) -> None:
    """Found by a fuzz run: json's recursion limit and Python's limit on an integer's digits
    escaped as internal errors (exit 1)."""
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "show", str(path))
    assert code == 3
    assert one_error(err).startswith(f"streamalloc: error: {path}:1:1: malformed JSON: {said}")


def test_a_control_character_in_yaml_is_one_line_with_its_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Found by a fuzz run: YAML's reader error spread over two lines and gave an offset."""
    path = tmp_path / "nul.yaml"
    path.write_text("format: streamalloc.graph/v1\nname: g\nnodes:\n- {name: a\0, type: Relu}\n",
                    encoding="utf-8")
    code, _, err = run(capsys, "show", str(path))
    assert code == 3
    assert one_error(err) == f"streamalloc: error: {path}:4: malformed YAML: control " \
        "characters are not allowed (byte 0x00)"


@pytest.mark.parametrize("text, said", [
    ("format: x\ndevice: [a\n", "3:1: malformed YAML: did not find expected ',' or ']'"),
    ("format: x\n\0\n", "2: malformed YAML: control characters are not allowed (byte 0x00)"),
    ("a: 1\n  b: 2\n", "2:4: malformed YAML: mapping values are not allowed in this context"),
])
@pytest.mark.parametrize("kind", ["cost", "rules", "sweep"])
def test_malformed_yaml_of_every_user_file_is_one_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, text: str,
        said: str) -> None:
    """Found by a fuzz run: cost tables printed PyYAML's text over several lines, and rule files
    and sweep specs did so for a character YAML does not allow."""
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text, encoding="utf-8")
    argv = {"cost": ["emulate", graph_file(tmp_path), "--cost", str(path)],
            "rules": ["rules", "check", str(path)], "sweep": ["sweep", str(path)]}[kind]
    code, _, err = run(capsys, *argv)
    assert code == 3
    assert one_error(err) == f"streamalloc: error: {path}:{said}"


def test_a_plan_stream_id_beyond_the_id_range_is_exit_3(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    graph = graph_file(tmp_path)
    plan = tmp_path / "plan.json"
    assert run(capsys, "allocate", graph, "-o", str(plan))[0] == 0
    document = json.loads(plan.read_text(encoding="utf-8"))
    document["streams"]["99999999999999999999"] = []
    plan.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = run(capsys, "verify", graph, str(plan))
    assert code == 3
    assert "field streams key '99999999999999999999': expected a stream id key such as " \
        '"0", at most 2147483647' in one_error(err)


def test_a_rule_set_extending_a_name_too_long_for_a_file_is_exit_3(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(f"format: streamalloc.rules/v1\nname: r\nextends: {'x' * 300}\n"
                     "rules: []\n", encoding="utf-8")
    code, _, err = run(capsys, "rules", "check", str(rules))
    assert code == 3
    assert f"{rules}:3: extends '{'x' * 300}': neither a shipped rule set" in one_error(err)
    assert "File name too long" in err
    rules.write_text('format: streamalloc.rules/v1\nname: r\nextends: "a\\0b"\nrules: []\n',
                     encoding="utf-8")
    code, _, err = run(capsys, "rules", "check", str(rules))
    assert code == 3 and "(embedded null byte)" in one_error(err)


SMALL = "format: streamalloc.graph/v1\nname: g\nnodes:\n- {name: d, type: Data}\n"


@pytest.mark.parametrize("case", [
    ("nan_cost.yaml", SMALL + "- {name: a, type: Relu, inputs: [d], cost_us: .nan}\n",
     ["emulate"], 3, "{f}:5: node 'a' field 'cost_us': nan is not a finite number"),
    ("huge_cost.yaml", SMALL + "- {name: a, type: Relu, inputs: [d], cost_us: 1.0e+300}\n",
     ["allocate"], 3, "{f}:5: node 'a' field 'cost_us': 1e+300 is greater than the maximum"),
    ("desc_attr.yaml", SMALL + "- {name: a, type: Relu, attrs: {x: {type: tensor_desc, "
     "value: zz}}}\n", ["show"], 3, "{f}:5: node 'a' attribute 'x': "),
    ("slack.yaml", SMALL, ["allocate", "--mode", "optimal", "--makespan-slack", "nan"], 2,
     "--makespan-slack nan: expected a finite number >= 0"),
    ("port.yaml", SMALL + '- {name: a, type: Relu, inputs: ["d:99999999999999999999"]}\n',
     ["show"], 3, "{f}:5: node 'a' input 0 (d:99999999999999999999): node 'd' has no "
     "described outputs, and a port runs 0..2147483647, not 99999999999999999999"),
])
def test_values_python_cannot_compute_with_are_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        case: tuple[str, str, list[str], int, str]) -> None:
    """Found by a fuzz run: NaN and 1e300 passed the schema's bounds and crashed the trace or
    the solver's integers (exit 1), as did an attribute value of the wrong form. Each case:
    file name, text, command, exit code, what the one error line says."""
    name, text, argv, code, said = case
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    got, _, err = run(capsys, argv[0], str(path), *argv[1:])
    assert got == code
    assert said.format(f=path) in one_error(err)


def test_a_cost_table_with_nan_or_not_utf8_is_exit_3(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    shipped = (ROOT / "src" / "streamalloc" / "runtime_emu" / "costs.yaml").read_text("utf-8")
    nan = tmp_path / "nan.yaml"
    nan.write_text(shipped.replace("launch_us: ", "launch_us: .nan #", 1), encoding="utf-8")
    code, _, err = run(capsys, "emulate", TRAIN, "--cost", str(nan))
    assert code == 3 and "device.launch_us: expected a number >= 0, at most 1e+15, found nan" \
        in one_error(err)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(shipped.encode() + "# caf\u00e9\n".encode("latin-1"))
    code, _, err = run(capsys, "emulate", TRAIN, "--cost", str(latin))
    assert code == 3 and f"{latin}: cannot read the cost table: 'utf-8' codec" in one_error(err)


def test_a_sweep_spec_with_nan_or_too_many_points_is_exit_3(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f"format: streamalloc.sweep-spec/v1\ngraphs: [{TRAIN}]\nmodes: [optimal]\n"
                    "solver: {makespan_slack: .nan}\n", encoding="utf-8")
    code, _, err = run(capsys, "sweep", str(spec))
    assert code == 3 and "field solver.makespan_slack: expected a finite number, found nan" \
        in one_error(err)
    axes = "".join(f"  o{i}: ['a', 'b']\n" for i in range(40))
    spec.write_text(f"format: streamalloc.sweep-spec/v1\ngraphs: [{TRAIN}]\nmodes: [ge]\n"
                    f"options:\n{axes}", encoding="utf-8")
    code, _, err = run(capsys, "sweep", str(spec))
    assert code == 3 and "the spec makes 1,099,511,627,776 points, more than 1,000,000" \
        in one_error(err)


def test_a_path_too_long_or_an_onnx_node_without_a_type_is_exit_3(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "show", str(tmp_path / ("z" * 300 + ".yaml")))
    assert code == 3 and "cannot read the file: [Errno 36] File name too long" in one_error(err)
    import onnx
    from onnx import TensorProto, helper
    value = helper.make_tensor_value_info
    model = helper.make_model(helper.make_graph(
        [helper.make_node("", ["x"], ["y"], name="a")], "g",
        [value("x", TensorProto.FLOAT, [4])], [value("y", TensorProto.FLOAT, [4])]))
    path = tmp_path / "untyped.onnx"
    onnx.save(model, str(path))
    code, _, err = run(capsys, "show", str(path))
    assert code == 3
    assert one_error(err).endswith(f"{path}: graph 'g' node 0 ('a') has an empty op_type; "
                                   "every ONNX node needs one")


def test_a_synced_graph_fed_back_is_exit_3(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    synced = str(tmp_path / "synced.yaml")
    code, _, _ = run(capsys, "allocate", TRAIN, "--graph-out", synced)
    assert code == 0
    # optimal mode and train-step took it (a fuzz run): exit 5 on the tool's own plan, and a
    # step no command could allocate
    for argv in (["allocate", synced], ["allocate", synced, "--mode", "preset"],
                 ["emulate", synced], ["allocate", synced, "--mode", "optimal"],
                 ["train-step", synced, "-o", str(tmp_path / "step.yaml")]):
        code, out, err = run(capsys, *argv)
        assert code == 3, argv
        assert "already has 14 Send/Recv node(s)" in one_error(err)
        assert "allocate the graph it was made from" in err
        assert out == ""


# --- 3. one behaviour across commands ---------------------------------------------------------

def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def test_output_closed_early_is_quiet() -> None:
    # a reader that goes away after the first line: no traceback, no "internal error"
    proc = subprocess.Popen([sys.executable, "-m", "streamalloc", "show", LAYERS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert code in (0, cli.BROKEN_PIPE), err
    assert err == ""


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_output_closed_early_is_exit_141(unbuffered: str) -> None:
    # 125 kB of tables, more than a pipe holds: the reader's leaving must reach the command,
    # also when the user runs Python unbuffered (a single large write once swallowed it)
    light = Path(__import__("onnx").__file__).parent / "backend" / "test" / "data" / "light"
    env = {**_env(), "PYTHONUNBUFFERED": unbuffered}
    proc = subprocess.Popen([sys.executable, "-m", "streamalloc", "show",
                             str(light / "light_densenet121.onnx")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == cli.BROKEN_PIPE, err
    assert err == ""


def test_an_error_whose_reader_went_away_keeps_its_exit_code() -> None:
    """Found by a docs walk-through: `emulate ... 2>&1 | head -1` on a plan the verifier
    rejects exited 1, as printing the error to the closed pipe raised inside the handler."""
    plans = ROOT / "examples" / "plans"
    proc = subprocess.Popen([sys.executable, "-m", "streamalloc", "emulate",
                             str(plans / "fork_join.yaml"),
                             str(plans / "fork_join.no_events.plan.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    assert proc.stderr is not None
    proc.stderr.close()
    assert proc.wait(timeout=60) == 5


def test_ctrl_c_is_one_line_and_exit_130(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(api, "read_graph", interrupted)
    code, out, err = run(capsys, "allocate", TRAIN)
    assert (code, out, err) == (130, "", "streamalloc: interrupted\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_in_a_subprocess() -> None:
    model = ROOT / "tests" / "data" / "onnx" / "llama_tiny.onnx"  # 14 s for this objective
    proc = subprocess.Popen([sys.executable, "-m", "streamalloc", "allocate", str(model),
                             "--mode", "optimal", "--objective", "makespan",
                             "--time-limit", "30",
                             "--set", "ge.streamMaxParallelNum=AIcoreEngine:4",
                             "--set", "ge.hcomParallel=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            # a shell's background job ignores SIGINT; the command must not
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == cli.INTERRUPTED, err
    assert err.decode() == "streamalloc: interrupted\n"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_during_searches_in_processes() -> None:
    """--workers 2 runs two makespan searches in forked processes: Ctrl-C (to the command,
    as a terminal sends it to the whole group) still ends it with one line and exit 130, and
    its processes with it."""
    model = ROOT / "tests" / "data" / "onnx" / "llama_tiny.onnx"
    proc = subprocess.Popen([sys.executable, "-m", "streamalloc", "allocate", str(model),
                             "--mode", "optimal", "--objective", "makespan",
                             "--time-limit", "30", "--workers", "2",
                             "--set", "ge.streamMaxParallelNum=AIcoreEngine:4",
                             "--set", "ge.hcomParallel=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            start_new_session=True,  # a group of its own, as in a terminal
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    children: list[int] = []
    deadline = time.monotonic() + 60
    while len(children) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        children = _children(proc.pid)
    assert len(children) == 2
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == cli.INTERRUPTED, err
    assert err.decode() == "streamalloc: interrupted\n"
    time.sleep(0.5)
    assert not [pid for pid in children if _running(pid)]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            if fields[1] == str(pid):
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] \
            != "Z"
    except OSError:
        return False


def test_every_cp_sat_solve_is_interruptible() -> None:
    """CP-SAT's own SIGINT handler ends a solve quietly, or the process: Ctrl-C during the
    sync-aware bound's solves (the makespan search's first second on Llama tiny) killed the
    command by the signal, without the one line and exit 130. So every solve goes through
    `solver.run.interruptible_solve`. (OR-Tools' graph flows, `flow.solve(...)`, leave the
    handler alone: Ctrl-C reaches Python when they return.)"""
    direct = [f"{path.relative_to(ROOT)}:{n}"
              for path in sorted((ROOT / "src" / "streamalloc").rglob("*.py"))
              if path.name != "run.py" or path.parent.name != "solver"
              for n, line in enumerate(path.read_text().splitlines(), start=1)
              if re.search(r"(?<!flow)\.solve\((?!\))", line)
              and "interruptible_solve" not in line]
    assert direct == []


def test_set_on_every_command_that_reads_a_graph(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    graph = graph_file(tmp_path)
    plan = str(tmp_path / "plan.json")
    assert run(capsys, "allocate", graph, "-o", plan)[0] == 0
    bad = ("--set", "ge.hcomParallel=maybe")
    commands = [["allocate", graph], ["explain", graph, "relu"], ["show", graph],
                ["vars", graph], ["emulate", graph], ["emulate", graph, plan],
                ["verify", graph, plan], ["compare", graph, "--modes", "ge"],
                ["train-step", graph, "-o", str(tmp_path / "t.yaml")],
                ["import", graph, "-o", str(tmp_path / "i.yaml")]]
    for command in commands:
        code, _, err = run(capsys, *command, *bad)
        assert code == 3, (command, err)
        # the command line's value is named as such, not as the graph file's (a docs walk)
        assert one_error(err) == "streamalloc: error: --set: option ge.hcomParallel is " \
            "'maybe'; valid: '0', '1', ''", command
    code, out, _ = run(capsys, "show", graph, "--canonical", "--set", "ge.event=notify")
    assert code == 0
    assert 'option ge.event = "notify"' in out


def test_allocate_json_is_the_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    code, out, err = run(capsys, "allocate", TRAIN, "--json", "-o", str(plan))
    assert (code, err) == (0, "")
    assert json.loads(out) == json.loads(plan.read_text(encoding="utf-8"))
    assert json.loads(out)["format"] == "streamalloc.plan/v1"


def test_verify_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run(capsys, "allocate", TRAIN, "-o", str(plan))[0] == 0
    code, out, _ = run(capsys, "verify", TRAIN, str(plan), "--json")
    report = json.loads(out)
    assert code == 0
    assert report["valid"] is True
    assert report["violations"] == []
    assert report["stats"]["tasks"] > 0
    document = json.loads(plan.read_text(encoding="utf-8"))
    document["streams"]["0"] = document["streams"]["0"][::-1]
    plan.write_text(json.dumps(document), encoding="utf-8")
    code, out, _ = run(capsys, "verify", TRAIN, str(plan), "--json")
    report = json.loads(out)
    assert code == report["exit_code"] == 5
    assert report["valid"] is False
    assert {"kind", "message"} == set(report["violations"][0])
    assert sum(report["counts"].values()) == report["total"]


def test_vars_json_is_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "vars.json"
    code, out, _ = run(capsys, "vars", TRAIN, "--json", "-o", str(out_file))
    assert code == 0
    assert out == out_file.read_text(encoding="utf-8")


def test_allocate_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "allocate", TRAIN, "--nodes")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("node "))
    assert header.split() == ["node", "type", "engine", "logical", "physical", "rule", "/",
                              "why", "none"]
    assert "none: data-like source" in out
    rows = [line for line in out.splitlines() if line.startswith("conv1 ")]
    assert rows and "AIcoreEngine" in rows[0]


# --- 4. a fast --version ----------------------------------------------------------------------

HEAVY = ("ortools", "onnx", "numpy", "networkx")


def test_version_and_help_import_nothing_heavy() -> None:
    script = ("import sys\nfrom streamalloc.cli import main\n"
              "for argv in (['--version'], ['--help'], ['allocate', '--help']):\n"
              "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
              f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=_env(), check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
    version = subprocess.run([sys.executable, "-m", "streamalloc", "--version"],
                             capture_output=True, text=True, env=_env(), check=True)
    assert version.stdout.startswith("streamalloc ")


def test_ge_allocate_imports_only_what_it_runs(tmp_path: Path) -> None:
    """allocate in ge mode needs neither the emulator, the variable manager nor the solver."""
    unused = ("streamalloc.runtime_emu.emulator", "streamalloc.memory",
              "streamalloc.optimal.driver", "ortools", "onnx")
    script = ("import sys\nfrom streamalloc.cli import main\n"
              f"main(['allocate', {TRAIN!r}, '-o', {str(tmp_path / 'plan.json')!r}])\n"
              f"print(sorted(m for m in {unused!r} if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=_env(), check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "plan.json").is_file()


@pytest.mark.parametrize("given", [None, "2"])
def test_the_program_starts_openblas_with_one_thread_unless_told(given: str | None) -> None:
    """console_main sets OPENBLAS_NUM_THREADS before any command imports numpy; a value the
    user gave stands."""
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    script = ("import os\nfrom streamalloc import cli\n"
              "def main():\n"
              "    print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
              "    return 0\n"
              "cli.main = main\ncli.console_main()\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, check=True)
    assert result.stdout.strip() == (given or "1")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's thread count")
def test_numpy_after_single_threaded_blas_starts_no_thread() -> None:
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_NUM_THREADS"}
    script = ("from streamalloc import cli\ncli.single_threaded_blas()\nimport numpy\n"
              "print(next(line.split()[1] for line in open('/proc/self/status')\n"
              "           if line.startswith('Threads:')))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, check=True)
    assert result.stdout.strip() == "1"


def test_the_cli_choices_are_the_modules_constants() -> None:
    from streamalloc.commands.compare import MODES as COMPARE_MODES
    from streamalloc.ir.training import ALLREDUCE_MODES, DEFAULT_BUCKET
    from streamalloc.sync.driver import SYNC_STRATEGIES
    assert parser.MODES == api.MODES
    assert tuple(SYNC_STRATEGIES) == parser.SYNC_STRATEGIES
    assert parser.COMPARE_MODES == COMPARE_MODES
    assert tuple(ALLREDUCE_MODES) == parser.ALLREDUCE_MODES
    assert parser.DEFAULT_BUCKET == DEFAULT_BUCKET
    assert tuple(sorted(handlers.schemas())) == parser.SCHEMA_KINDS
