"""The command line (formats.md sections 4 and 5): show, import, schema, exit codes, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from streamalloc.cli import main
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.printer import print_graph

GRAPH = """\
format: streamalloc.graph/v1
name: demo
options: {ge.hcomParallel: "1"}
nodes:
  - {name: data, type: Data}
  - {name: conv, type: Conv2D, inputs: [data], attrs: {_user_stream_label: u1}}
  - {name: ar, type: HcomAllReduce, inputs: [conv]}
  - {name: relu, type: Relu, inputs: [ar]}
  - {name: loop, type: While, inputs: [relu], subgraphs: {cond: c, body: b}}
subgraphs:
  c:
    nodes:
      - {name: c_in, type: Data}
      - {name: c_less, type: Less, inputs: [c_in]}
  b:
    nodes:
      - {name: b_in, type: Data}
      - {name: b_add, type: Add, inputs: [b_in]}
partition:
  - {id: p_conv, engine: AIcoreEngine, stream_label: "", nodes: [conv]}
  - {id: p_ar, engine: DNN_HCCL, stream_label: "", nodes: [ar]}
  - {id: p_relu, engine: AIcoreEngine, stream_label: "", nodes: [relu]}
"""

BAD_YAML = "format: streamalloc.graph/v1\nnodes:\n  - name: a\n     type: Data\n"

NODES = ["data", "conv", "ar", "relu", "loop", "c_in", "c_less", "b_in", "b_add"]


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """main(argv) in-process: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def usage_exit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[object, str]:
    """argparse's exit for a usage error: the SystemExit code and stderr."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    return exc.value.code, capsys.readouterr().err


def table_rows(text: str, header: str) -> list[list[str]]:
    """The rows (split on whitespace) of the table whose header line starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    assert set(lines[start + 1]) <= {"-", " "}, lines[start + 1]
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


# ---------------------------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------------------------

def test_show_prints_node_and_subgraph_tables(capsys: pytest.CaptureFixture[str],
                                              graph_file: Path) -> None:
    code, out, err = run(capsys, "show", str(graph_file))
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "graph demo: 9 nodes in 3 graph(s), 3 engine subgraphs"
    header = next(line for line in out.splitlines() if line.startswith("node "))
    assert header.split() == ["node", "type", "engine", "graph", "subgraph"]
    nodes = table_rows(out, "node")
    assert [row[0] for row in nodes] == NODES  # T-order
    assert nodes[0] == ["data", "Data", "DNN_VM_GE_LOCAL", "demo", "-"]
    assert nodes[1] == ["conv", "Conv2D", "AIcoreEngine", "demo", "p_conv"]
    assert nodes[2] == ["ar", "HcomAllReduce", "DNN_HCCL", "demo", "p_ar"]
    assert nodes[4] == ["loop", "While", "DNN_VM_GE_LOCAL", "demo", "-"]
    # an explicit partition leaves every unlisted node outside (formats.md 1)
    assert nodes[6] == ["c_less", "Less", "AIcoreEngine", "c", "-"]
    subgraphs = table_rows(out, "subgraph")
    assert [row[0] for row in subgraphs] == ["p_conv", "p_ar", "p_relu"]
    assert subgraphs[0] == ["p_conv", "AIcoreEngine", "TS_1", "-", "u1", "-", "1", "-", "p_ar"]
    assert subgraphs[1] == ["p_ar", "DNN_HCCL", "TS_1", "-", "-", "independent", "1", "p_conv",
                            "p_relu"]
    assert subgraphs[2] == ["p_relu", "AIcoreEngine", "TS_1", "-", "-", "-", "1", "p_ar", "-"]


def test_show_json(capsys: pytest.CaptureFixture[str], graph_file: Path) -> None:
    code, out, err = run(capsys, "show", "--json", str(graph_file))
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["format"] == "streamalloc.show/v1"
    assert document["graph"] == "demo"
    assert list(document["nodes"]) == NODES
    assert document["nodes"]["b_add"] == {"type": "Add", "engine": "AIcoreEngine", "graph": "b"}
    root = document["partitions"]["demo"]
    assert root["outside"] == ["data", "loop"]
    assert [sg["id"] for sg in root["subgraphs"]] == ["p_conv", "p_ar", "p_relu"]
    assert root["subgraphs"][1]["independent"] is True
    assert root["subgraphs"][1]["preds"] == ["p_conv"]
    assert root["subgraphs"][0]["user_stream_label"] == "u1"
    assert set(document["partitions"]) == {"demo", "b", "c"}
    assert document["partitions"]["b"] == {"outside": ["b_in", "b_add"], "subgraphs": []}


def test_show_canonical_is_print_graph(capsys: pytest.CaptureFixture[str],
                                       graph_file: Path) -> None:
    code, out, err = run(capsys, "show", "--canonical", str(graph_file))
    assert (code, err) == (0, "")
    assert out == print_graph(load_graph(graph_file))
    assert out.startswith("// streamalloc.graph/v1 canonical text\n")


def test_show_json_and_canonical_exclude_each_other(capsys: pytest.CaptureFixture[str],
                                                    graph_file: Path) -> None:
    code, err = usage_exit(capsys, "show", "--json", "--canonical", str(graph_file))
    assert code == 2
    assert "not allowed with argument" in err


# ---------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_import_writes_a_graph_that_reloads_equal(capsys: pytest.CaptureFixture[str],
                                                  graph_file: Path, tmp_path: Path,
                                                  suffix: str) -> None:
    output = tmp_path / f"out{suffix}"
    code, out, err = run(capsys, "import", str(graph_file), "-o", str(output))
    assert (code, err) == (0, "")
    assert out == f"wrote {output}: graph demo, 9 nodes, 2 subgraphs\n"
    assert load_graph(output) == load_graph(graph_file)
    assert print_graph(load_graph(output)) == print_graph(load_graph(graph_file))
    if suffix == ".json":
        assert json.loads(output.read_text())["format"] == "streamalloc.graph/v1"
    else:
        assert output.read_text().startswith("format: streamalloc.graph/v1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["demo.yaml", output.name])


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_failing_import_leaves_no_output(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         suffix: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML, encoding="utf-8")
    output = tmp_path / f"out{suffix}"
    code, out, err = run(capsys, "import", str(bad), "-o", str(output))
    assert code == 3
    assert out == ""
    assert err == f"streamalloc: error: {bad}:4:10: malformed YAML: mapping values are not " \
                  "allowed in this context\n"
    assert not output.exists()
    assert not output.with_name(output.name + ".tmp").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.yaml"]


def test_failing_import_keeps_an_existing_output(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    output = tmp_path / "out.yaml"
    output.write_text("previous\n")
    code, _, _ = run(capsys, "import", str(tmp_path / "missing.yaml"), "-o", str(output))
    assert code == 3
    assert output.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_import_to_missing_directory_is_a_user_error(capsys: pytest.CaptureFixture[str],
                                                     graph_file: Path, tmp_path: Path) -> None:
    output = tmp_path / "no_such_dir" / "out.yaml"
    code, _, err = run(capsys, "import", str(graph_file), "-o", str(output))
    assert code in (2, 3)
    assert err.startswith("streamalloc: error: ")
    assert str(output) in err and ".tmp" not in err


# ---------------------------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------------------------

def test_schema_graph_validates_documents(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "schema", "graph")
    assert (code, err) == (0, "")
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"format": "streamalloc.graph/v1", "name": "g",
            "options": {"ge.event": "notify", "streamalloc.max_streams": 16},
            "nodes": [{"name": "a", "type": "Data"},
                      {"name": "b", "type": "Relu", "inputs": ["a:0"], "task_count": 2,
                       "attrs": {"x": 1, "y": {"type": "list_float", "value": []}}}]}
    validator.validate(good)
    with pytest.raises(jsonschema.ValidationError) as bad:
        validator.validate({**good, "nodes": [{"name": "a", "type": "Data", "colour": "red"}]})
    assert "colour" in bad.value.message
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**good, "colour": "red"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**good, "format": "streamalloc.graph/v2"})


def test_schema_accepts_what_import_writes(capsys: pytest.CaptureFixture[str], graph_file: Path,
                                           tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    assert run(capsys, "import", str(graph_file), "-o", str(output))[0] == 0
    _, out, _ = run(capsys, "schema", "graph")
    jsonschema.validate(json.loads(output.read_text()), json.loads(out))


def test_schema_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = usage_exit(capsys, "schema", "plans")
    assert code == 2
    assert "invalid choice: 'plans'" in err


# ---------------------------------------------------------------------------------------------
# exit codes and error output
# ---------------------------------------------------------------------------------------------

def test_missing_file_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    code, out, err = run(capsys, "show", str(missing))
    assert (code, out) == (3, "")
    assert err == f"streamalloc: error: {missing}: no such file\n"


def test_bad_yaml_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML, encoding="utf-8")
    code, out, err = run(capsys, "show", str(bad))
    assert (code, out) == (3, "")
    assert err.count("\n") == 1
    assert err.startswith(f"streamalloc: error: {bad}:4:10: malformed YAML")
    assert "Traceback" not in err


def test_semantic_error_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GRAPH.replace("inputs: [ar]", "inputs: [nope]"), encoding="utf-8")
    code, _, err = run(capsys, "show", "--canonical", str(bad))
    assert code == 3
    assert err == (f"streamalloc: error: {bad}:8: node 'relu' input 0 (nope:0) in graph 'demo': "
                   "no node named 'nope'\n")


def test_bad_option_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GRAPH.replace('ge.hcomParallel: "1"', 'ge.topoSortingMode: "9"'))
    code, _, err = run(capsys, "show", str(bad))
    assert code == 3
    assert err.startswith("streamalloc: error: ") and "ge.topoSortingMode is '9'" in err


def test_debug_shows_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    code, _, err = run(capsys, "--debug", "show", str(missing))
    assert code == 3
    assert err.startswith("Traceback (most recent call last):")
    assert "streamalloc.errors.GraphLoadError" in err
    assert err.endswith(f"streamalloc: error: {missing}: no such file\n")


@pytest.mark.parametrize("argv", [["bogus"], [], ["show"], ["import", "x.yaml"], ["schema"],
                                  ["show", "--nope", "x.yaml"]])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, err = usage_exit(capsys, *argv)
    assert code == 2
    assert err.startswith("usage: streamalloc")
    assert "error: " in err
    assert "Traceback" not in err


def test_unknown_subcommand_message(capsys: pytest.CaptureFixture[str]) -> None:
    _, err = usage_exit(capsys, "bogus")
    last = err.splitlines()[-1]
    assert last.startswith("streamalloc: error: argument COMMAND: invalid choice: 'bogus' "
                           "(choose from ")
    assert all(f"'{c}'" in last for c in ("show", "import", "schema", "allocate", "explain"))


def test_missing_argument_message(capsys: pytest.CaptureFixture[str]) -> None:
    _, err = usage_exit(capsys, "import", "x.yaml")
    assert err.splitlines()[-1] == ("streamalloc import: error: the following arguments are "
                                    "required: -o/--output")


# ---------------------------------------------------------------------------------------------
# python -m streamalloc
# ---------------------------------------------------------------------------------------------

def module(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m streamalloc ARGV...` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "streamalloc", *argv], capture_output=True,
                          text=True, timeout=60, check=False)


def test_module_show_canonical(graph_file: Path) -> None:
    done = module("show", "--canonical", str(graph_file))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == print_graph(load_graph(graph_file))


def test_module_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML, encoding="utf-8")
    done = module("show", str(bad))
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (f"streamalloc: error: {bad}:4:10: malformed YAML: mapping values are "
                           "not allowed in this context\n")
    usage = module("bogus")
    assert usage.returncode == 2 and "invalid choice: 'bogus'" in usage.stderr
    debug = module("--debug", "show", str(bad))
    assert debug.returncode == 3 and "Traceback (most recent call last)" in debug.stderr


def test_only_the_program_holds_results_until_exit(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from streamalloc import collector
    from streamalloc.ir.graph import Graph
    graph, plan = str(tmp_path / "small.yaml"), str(tmp_path / "plan.json")
    Path(graph).write_text("format: streamalloc.graph/v1\nnodes:\n  - {name: x, type: Data}\n"
                           "  - {name: r, type: Relu, inputs: [x]}\n", encoding="utf-8")
    monkeypatch.setattr(collector, "_HELD", None)  # a library caller: nothing is kept
    assert run(capsys, "allocate", graph, "-o", plan)[0] == 0
    assert collector._HELD is None
    monkeypatch.setattr(collector, "_HELD", [])  # the program (`console_main`) holds them
    assert run(capsys, "allocate", graph, "-o", plan)[0] == 0
    assert run(capsys, "emulate", graph, plan)[0] == 0
    held = collector._HELD
    assert held is not None and sum(isinstance(x, Graph) for x in held) == 2


def test_preset_mode_says_it_ran_no_rules(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a docs walk-through: the table said "rules preset" where the plan's `rules` is
    null (preset mode runs none)."""
    graph = Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml"
    assert main(["allocate", str(graph), "--mode", "preset"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("; rules none (the graph file's streams)"), head


def test_ge_mode_explain_says_why_a_node_has_no_stream(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """Found by a docs walk-through: ge mode only said "decided by initial" where
    `allocate --nodes` and optimal-mode explain give the reason."""
    graph = Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml"
    assert main(["explain", str(graph), "images"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "no stream: data-like source (in no engine subgraph)"
    assert main(["explain", str(graph), "conv1"]) == 0
    assert "no stream" not in capsys.readouterr().out
