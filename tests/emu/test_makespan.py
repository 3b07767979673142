"""Tiny plans with makespans computed by hand (default table: launch 2 us, record 1, wait 1).

fork_join (a=10, b=20, c=5, d=4 us; a feeds b and c, d joins them), two streams:
  stream 0: a 0-12 | Send_0 12-13 (records event 0 at 13) | b 13-35 | Recv_1 35-36 | d 36-42
  stream 1: Recv_0 waits 0-13, wait latency 13-14 | c 14-21 | Send_1 21-22
  makespan 42; critical path a+b+d = 12+22+6 = 40; work 47 us over 32 AI cores.
"""

from __future__ import annotations

import pytest
from emu.conftest import EXAMPLES, chain_graph, plan_dict

from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, load_plan, parse_cost_table, report_dict
from streamalloc.runtime_emu.cost_table import default_cost_table


def run_example(graph: str, plan: str) -> dict:
    result = emulate(load_graph(EXAMPLES / f"{graph}.yaml"),
                     load_plan(EXAMPLES / f"{plan}.plan.json"))
    return report_dict(result)


@pytest.mark.parametrize(("plan", "makespan"), [
    ("fork_join", 42.0),          # the timeline in the module docstring
    ("fork_join.notify", 42.0),   # the same with notifies (same latencies)
    ("fork_join.single", 47.0),   # 12 + 22 + 7 + 6 on one stream
])
def test_fork_join_makespans(plan: str, makespan: float) -> None:
    report = run_example("fork_join", plan)
    assert report["status"] == "ok"
    assert report["makespan_us"] == makespan
    assert report["lower_bounds"] == {"critical_path_us": 40.0, "work_over_units_us": 1.469}


def test_fork_join_per_stream_busy_idle_and_sync_counts() -> None:
    report = run_example("fork_join", "fork_join")
    assert report["streams"] == {"0": {"busy_us": 42.0, "idle_us": 0.0, "tasks": 5},
                                 "1": {"busy_us": 9.0, "idle_us": 33.0, "tasks": 3}}
    assert (report["event_records"], report["event_waits"]) == (2, 2)
    assert report["engines"]["AIcoreEngine"] == {"units": 32, "tasks": 4, "busy_us": 47.0,
                                                 "utilization": round(47 / (32 * 42), 4)}


def test_activation_starts_the_stream_when_the_activator_ends() -> None:
    # act is a StreamActive (RTS, fixed 1 us + 2 us launch): stream 0 act 0-3, y 3-10;
    # stream 1 starts at 3: x 3-15. The control edge act -> x is ordered by the activation.
    report = run_example("activation", "activation")
    assert (report["status"], report["makespan_us"]) == ("ok", 15.0)
    assert report["lower_bounds"]["critical_path_us"] == 15.0


def test_event_reuse_after_wait() -> None:
    # chain a(s0) -> b(s1) -> c(s0) -> d(s1), 10 us each; event 0 is used twice:
    # s0: a 0-12, Send_0 12-13, Recv_1 waits to 27, 27-28, c 28-40, Send_0 40-41
    # s1: Recv_0 waits to 13, 13-14, b 14-26, Send_1 26-27, Recv_0 waits to 41, 41-42, d 42-54
    graph = chain_graph("chain", {"a": 10, "b": 10, "c": 10, "d": 10},
                        [("a", "b"), ("b", "c"), ("c", "d")])
    plan = plan_dict("chain", {0: ["a", "S0", "R1", "c", "S0b"], 1: ["R0", "b", "S1", "R0b", "d"]},
                     [("S0", "Send", 0, 0), ("R0", "Recv", 1, 0), ("S1", "Send", 1, 1),
                      ("R1", "Recv", 0, 1), ("S0b", "Send", 0, 0), ("R0b", "Recv", 1, 0)])
    report = report_dict(emulate(graph, plan))
    assert (report["status"], report["makespan_us"]) == ("ok", 54.0)
    assert (report["event_records"], report["event_waits"]) == (3, 3)


def _units_table(units: int) -> str:
    text = (EXAMPLES.parents[1] / "src/streamalloc/runtime_emu/costs.yaml").read_text()
    old = "{units: 32, flops_per_s: 8.0e+12"
    return text.replace(old, old.replace("32", str(units)), 1)


@pytest.mark.parametrize(("units", "makespan"), [(1, 24.0), (2, 12.0)])
def test_streams_of_one_engine_contend_for_its_units(units: int, makespan: float) -> None:
    # two independent 10 us tasks (12 with launch) on two streams; with one AI core the second
    # waits for the first.
    graph = chain_graph("pair", {"a": 10, "b": 10}, [])
    table = parse_cost_table(_units_table(units), "test")
    result = emulate(graph, plan_dict("pair", {0: ["a"], 1: ["b"]}), costs=table)
    assert (result.status, result.makespan_us) == ("ok", makespan)
    assert result.bounds.work_over_units_us == 24.0 / units
    busy = report_dict(result)["streams"]
    assert busy["1"]["busy_us"] == 12.0  # waiting for a unit is not busy time


def test_no_task_nodes_take_no_time_but_keep_their_place() -> None:
    # Reshape is GE-local (no device task): zero time, no unit, still ordered on its stream.
    from streamalloc.ir import DataInput, GraphBuilder
    b = GraphBuilder("g")
    b.add_node("x", "Data")
    b.add_node("a", "Relu", inputs=[DataInput("x")], cost_us=3)
    b.add_node("r", "Reshape", inputs=[DataInput("a")])
    b.add_node("c", "Relu", inputs=[DataInput("r")], cost_us=3)
    result = emulate(b.build(), plan_dict("g", {0: ["a", "r", "c"]}))
    assert (result.status, result.makespan_us) == ("ok", 10.0)
    assert result.program.durations == (5.0, 0.0, 5.0)


def test_dependencies_are_followed_through_nodes_without_tasks() -> None:
    # a (stream 0) -> Reshape r (no stream at all) -> c (stream 1), no event: a violation
    from streamalloc.ir import DataInput, GraphBuilder
    b = GraphBuilder("g")
    b.add_node("x", "Data")
    b.add_node("a", "Relu", inputs=[DataInput("x")], cost_us=3)
    b.add_node("r", "Reshape", inputs=[DataInput("a")])
    b.add_node("c", "Relu", inputs=[DataInput("r")], cost_us=3)
    result = emulate(b.build(), plan_dict("g", {0: ["a"], 1: ["c"]}))
    assert result.status == "violation"
    assert result.violation_records()[0]["producer"] == "a"


def test_the_cost_table_sets_launch_and_sync_latencies() -> None:
    text = (EXAMPLES.parents[1] / "src/streamalloc/runtime_emu/costs.yaml").read_text()
    table = parse_cost_table(text.replace("launch_us: 2.0", "launch_us: 0.0")
                             .replace("event_record_us: 1.0", "event_record_us: 0.5"), "t")
    result = emulate(load_graph(EXAMPLES / "fork_join.yaml"),
                     load_plan(EXAMPLES / "fork_join.plan.json"), costs=table)
    # s0: a 0-10, Send 10-10.5, b 10.5-30.5; s1: Recv 10.5-11.5, c 11.5-16.5, Send -17;
    # s0: Recv 30.5-31.5, d 31.5-35.5
    assert result.makespan_us == 35.5
    assert default_cost_table().launch_us == 2.0
