"""`verify_command(GRAPH, PLAN)`: exit codes 0/5/4 and input errors (InputError, exit 3, printed
on stderr by the command line) that name file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from verify.verify_plans import plan, yaml_graph

from streamalloc.errors import InputError
from streamalloc.verify import plan_view, verify_command

GRAPH_TEXT = """format: streamalloc.graph/v1
name: demo
options: {OPTIONS}
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: relu2, type: Relu, inputs: [relu1]}
"""


def files(tmp_path: Path, p: dict[str, Any] | str, options: str = "{}") -> tuple[Path, Path]:
    graph = tmp_path / "g.yaml"
    graph.write_text(GRAPH_TEXT.replace("{OPTIONS}", options), encoding="utf-8")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(p if isinstance(p, str) else json.dumps(p), encoding="utf-8")
    return graph, plan_file


def good() -> dict[str, Any]:
    graph = yaml_graph(GRAPH_TEXT.replace("{OPTIONS}", "{}"))
    return plan(graph, {0: ["relu1", "demo_Send_0"], 1: ["demo_Recv_0", "relu2"]},
                events=[(0, "relu1", "relu2")])


def test_valid_plan_exits_0(tmp_path: Path) -> None:
    text, code = verify_command(*files(tmp_path, good()))
    assert code == 0
    assert text.startswith(f"{tmp_path / 'plan.json'}: plan for graph 'demo' is valid\n")


def test_wrong_plan_exits_5(tmp_path: Path) -> None:
    p = good()
    p["streams"] = {"0": ["relu1"], "1": ["relu2"]}
    p.update(sync_nodes=[], events=[], event_count=0)
    text, code = verify_command(*files(tmp_path, p))
    assert code == 5
    assert "dependency: data edge relu1 -> relu2 is not ordered" in text


def test_limit_exits_4(tmp_path: Path) -> None:
    text, code = verify_command(*files(tmp_path, good(), "{streamalloc.max_streams: 2}"))
    assert code == 4
    assert "limit-streams: the plan uses 2 streams, the device allows 1" in text


def test_a_non_positive_limit_is_exit_3(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"option streamalloc\.max_events is '0'; expected a "
                                         "positive integer"):
        verify_command(*files(tmp_path, good(), "{streamalloc.max_events: 0}"))


@pytest.mark.parametrize(("content", "expected"), [
    ("{not json", "plan.json:1: not valid JSON"),
    ("[]", "field the plan: expected a JSON object, found []"),
    (json.dumps({"format": "streamalloc.plan/v1"}), "missing key 'graph'"),
])
def test_unreadable_plans_exit_3(tmp_path: Path, content: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        verify_command(*files(tmp_path, content))
    assert err.value.exit_code == 3 and expected in str(err.value), err.value


def test_missing_files_exit_3(tmp_path: Path) -> None:
    graph, _ = files(tmp_path, good())
    with pytest.raises(InputError, match=r"absent\.json: cannot read the plan file"):
        verify_command(graph, tmp_path / "absent.json")
    with pytest.raises(InputError, match=r"absent\.yaml"):
        verify_command(tmp_path / "absent.yaml", tmp_path / "plan.json")


def test_bad_limit_option_exits_3(tmp_path: Path) -> None:
    with pytest.raises(InputError,
                       match=r"option streamalloc\.max_events is 'many'; expected a posi"):
        verify_command(*files(tmp_path, good(), '{streamalloc.max_events: "many"}'))


def _with(path: str, value: Any) -> dict[str, Any]:
    p = good()
    target: Any = p
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key) if key.isdigit() and isinstance(target, list) else key]
    target[keys[-1]] = value
    return p


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("format", "streamalloc.plan/v9", "field format: expected 'streamalloc.plan/v1'"),
    ("event_count", -1, "field event_count: expected an integer >= 0, found -1"),
    ("event_count", True, "field event_count: expected an integer >= 0, found true"),
    ("streams", {"x": []}, "field streams key 'x': expected a stream id key"),
    ("streams", {"0": "relu1"}, "field streams['0']: expected a JSON list"),
    ("nodes", {"relu1": {"stream": 0}}, "field nodes['relu1'].physical_stream: expected a "
     "stream id"),
    ("nodes", {"relu1": {"stream": 0, "physical_stream": -2}},
     "field nodes['relu1'].physical_stream: expected an integer >= -1"),
    ("events", {}, "field events: expected a JSON list"),
    ("sync_nodes", [{"name": "s", "type": "Wait", "stream": 0}],
     "field sync_nodes[0].type: expected one of Send, Recv, SendNotify, RecvNotify"),
    ("sync_nodes", [{"name": "s", "type": "Send", "stream": 0}],
     "field sync_nodes[0].event: expected an integer >= 0, found null"),
    ("stream_activations", {"a": [0, "1"]}, "field stream_activations['a'][1]"),
    ("tasks", [1], "field tasks: expected a JSON object"),
])
def test_wrong_types_name_the_field(path: str, value: Any, expected: str) -> None:
    with pytest.raises(InputError, match=r"^<plan>: ") as info:
        plan_view(_with(path, value))
    assert expected in str(info.value)
