"""Plan files (formats.md section 3): structure checks, checks against the graph, limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from emu.conftest import EXAMPLES, chain_graph, plan_dict

from streamalloc.errors import InputError, LimitExceeded
from streamalloc.ir import DataInput, GraphBuilder
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, load_plan, plan_from_dict
from streamalloc.runtime_emu.plan import read_run_fields


def test_the_example_plan_loads() -> None:
    plan = load_plan(EXAMPLES / "fork_join.plan.json")
    assert plan.graph == "fork_join" and plan.event_count == 2
    assert plan.streams[1] == ("fork_join_Recv_0", "c", "fork_join_Send_1")
    assert plan.sync_nodes["fork_join_Send_0"].event == 0
    assert plan.stream_of()["c"] == (1, 1)
    assert [e.send for e in plan.events] == ["a", "c"]


def test_the_fields_a_run_reads_make_the_plan_the_whole_file_makes() -> None:
    whole = _good()
    whole["nodes"]["a"]["rule"] = "\u00e9"  # non-ASCII text in the part that is skipped
    whole["tool"] = {"nested": [1, {"deep": None}]}  # unknown keys are skipped too
    run = read_run_fields(json.dumps(whole, ensure_ascii=False).encode())
    assert run is not None and "nodes" not in run and "tool" not in run
    assert run == {k: v for k, v in whole.items() if k in run}
    assert set(whole) - set(run) == {"nodes", "sync", "tool", "split_to_logic",
                                     "huge_streams", "tasks", "summary", "rules"} & set(whole)
    assert plan_from_dict(run, source="p") == plan_from_dict(whole, source="p")


@pytest.mark.parametrize("text", [b"{", b"[1, 2]", b"", b'{"streams": NaN}', b"\xff{}"])
def test_the_fields_a_run_reads_are_none_for_what_does_not_decode(text: bytes) -> None:
    assert read_run_fields(text) is None


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _good() -> dict[str, Any]:
    return json.loads((EXAMPLES / "fork_join.plan.json").read_text())


def _set(path: str, value: Any) -> dict[str, Any]:
    data, node = _good(), None
    keys = path.split("/")
    node = data
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(("path", "value", "message"), [
    ("format", "streamalloc.plan/v0", "format: expected 'streamalloc.plan/v1'"),
    ("streams", KeyError, "streams: expected a JSON object"),
    ("streams", [], "streams: expected a JSON object"),
    ("streams/0", "a", "streams['0']: expected a JSON list"),
    ("streams/1/1", 7, "streams['1'][1]: expected a non-empty string"),
    ("graph", "", "graph: expected a non-empty string"),
    ("sync_nodes/2/type", "Wait", "sync_nodes[2].type: expected one of Send"),
    ("sync_nodes/1/event", -1, "sync_nodes[1].event: expected an integer >= 0"),
    ("sync_nodes/1/stream", "1", "sync_nodes[1].stream: expected an integer >= 0"),
    ("sync_nodes/1/name", "fork_join_Send_0", "sync_nodes[1].name: expected a name not used"),
    ("events/1/kind", "signal", "events[1].kind: expected 'event' or 'notify'"),
    ("events/0/recv", None, "events[0].recv: expected a non-empty string"),
    ("stream_activations", {"a": ["1"]}, "stream_activations['a'][0]: expected an integer"),
    ("event_count", True, "event_count: expected an integer >= 0"),
])
def test_malformed_plans_name_the_file_and_field(tmp_path: Path, path: str, value: Any,
                                                 message: str) -> None:
    file = _write(tmp_path, _set(path, value))
    with pytest.raises(InputError) as err:
        load_plan(file)
    assert str(err.value).startswith(f"{file}: ") and message in str(err.value)
    assert err.value.exit_code == 3


@pytest.mark.parametrize("key", ["s1", "01", "-1", "1.0"])
def test_stream_keys_must_be_stream_ids(tmp_path: Path, key: str) -> None:
    data = _good()
    data["streams"][key] = data["streams"].pop("1")
    with pytest.raises(InputError, match=f"streams key '{key}': expected a stream id key"):
        load_plan(_write(tmp_path, data))


def test_not_json_and_missing_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"plan.json:2: not valid JSON"):
        load_plan(_write(tmp_path, '{"format":\n oops}'))
    for ends in ("\r\n", "\r"):  # lines counted as a text file counts them
        with pytest.raises(InputError, match=r"plan.json:3: not valid JSON"):
            load_plan(_write(tmp_path, f'{{{ends}"format":{ends} oops}}'))
    with pytest.raises(InputError, match=r"plan.json:3: not valid JSON \(key 'format' repeats "
                                         r"the key of line 1\)"):
        load_plan(_write(tmp_path, '{"format": "a",\n "graph": "g",\n "format": "b"}'))
    with pytest.raises(InputError, match="cannot read the plan file: 'utf-8' codec"):
        path = tmp_path / "latin1.json"
        path.write_bytes(b'{"graph": "\xe9"}')
        load_plan(path)
    with pytest.raises(InputError, match="cannot read the plan file"):
        load_plan(tmp_path / "absent.json")
    with pytest.raises(InputError, match="plan: expected a JSON object"):
        plan_from_dict([1, 2])


def test_unknown_top_level_keys_are_allowed() -> None:
    data = _good()
    data["solver"] = {"status": "OPTIMAL"}
    data["huge_streams"] = []
    assert plan_from_dict(data).graph == "fork_join"


GRAPH = EXAMPLES / "fork_join.yaml"


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(graph="other"), "the plan is for graph 'other'"),
    (lambda d: d["streams"]["1"].append("ghost"), "streams['1'][3]: 'ghost' is neither a node"),
    (lambda d: d["streams"]["1"].append("a"), "task 'a' is listed twice (first on stream 0"),
    (lambda d: d["streams"]["0"].remove("fork_join_Send_0"),
     "sync_nodes[0]: sync node 'fork_join_Send_0' is in no stream list"),
    (lambda d: d["sync_nodes"][0].update(stream=1),
     "sync node 'fork_join_Send_0' says stream 1 in sync_nodes but is listed on stream 0"),
    (lambda d: d["stream_activations"].update(nobody=[1]),
     "stream_activations['nobody']: activator 'nobody' is neither"),
    (lambda d: d["stream_activations"].update(fork_join_Send_0=[1]),
     "activator 'fork_join_Send_0' is a Send; streams are activated by tasks"),
])
def test_plans_that_do_not_fit_the_graph_are_input_errors(change: Any, message: str) -> None:
    data = _good()
    change(data)
    with pytest.raises(InputError) as err:
        emulate(load_graph(GRAPH), data)
    assert message in str(err.value)


def test_event_and_notify_counts_are_checked_against_the_device_limits() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [])
    plan = plan_dict("g", {0: ["a", "S"], 1: ["R", "b"]}, [("S", "Send", 0, 70000),
                                                         ("R", "Recv", 1, 70000)])
    with pytest.raises(LimitExceeded, match="uses 70001 events, the device allows 65535"):
        emulate(graph, plan)
    plan = plan_dict("g", {0: ["a", "S"], 1: ["R", "b"]}, [("S", "SendNotify", 0, 1024),
                                                         ("R", "RecvNotify", 1, 1024)])
    with pytest.raises(LimitExceeded, match="1025 notifies, the device allows 1024") as err:
        emulate(graph, plan)
    assert err.value.exit_code == 4


def test_the_limits_come_from_the_graph_options() -> None:
    b = GraphBuilder("g", options={"streamalloc.max_events": "1"})
    b.add_node("a", "Relu", cost_us=1)
    b.add_node("b", "Relu", cost_us=1)
    plan = plan_dict("g", {0: ["a", "S"], 1: ["R", "b"]}, [("S", "Send", 0, 1),
                                                         ("R", "Recv", 1, 1)])
    with pytest.raises(LimitExceeded, match="uses 2 events, the device allows 1"):
        emulate(b.build(), plan)


def _wide(n: int) -> tuple[Any, dict[str, Any]]:
    b = GraphBuilder("wide")
    for i in range(n):
        b.add_node(f"n{i}", "Relu", inputs=[], cost_us=1)
    return b.build(), plan_dict("wide", {i: [f"n{i}"] for i in range(n)})


def test_a_plan_needing_more_streams_than_the_pool_is_limit_exceeded() -> None:
    graph, plan = _wide(2024)
    with pytest.raises(LimitExceeded, match=r"needs 2024 streams.*2024 slots.*at most 2023"):
        emulate(graph, plan)
    graph, plan = _wide(2023)
    result = emulate(graph, plan)
    assert result.status == "ok" and result.stream_pool["created"] == 2022


def test_unconnected_inputs_and_subgraph_nodes_compile() -> None:
    b = GraphBuilder("g")
    b.add_node("x", "Data")
    b.add_node("a", "Relu", inputs=[None, DataInput("x")], cost_us=1)
    result = emulate(b.build(), plan_dict("g", {0: ["a"]}))
    assert result.makespan_us == 3.0
