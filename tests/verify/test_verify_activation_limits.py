"""Activation as an ordering, device limits (exit 4 with the numbers), notify plans."""

from __future__ import annotations

from typing import Any

import pytest
from verify.verify_plans import plan, yaml_graph

from streamalloc.verify import VerifyReport, verify_plan

# relu1 -> relu2; act is a StreamActive after relu1 that starts relu2's stream.
ACTIVE = yaml_graph("""
name: act
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: act, type: StreamActive, control_inputs: [relu1]}
  - {name: relu2, type: Relu, inputs: [relu1]}
""")


def messages(report: VerifyReport, kind: str) -> list[str]:
    return [v.message for v in report.violations if v.kind == kind]


def test_a_consumer_on_a_stream_activated_after_the_producer_needs_no_event() -> None:
    p = plan(ACTIVE, {0: ["relu1", "act"], 1: ["relu2"]}, activations={"act": [1]})
    report = verify_plan(ACTIVE, p)
    assert report.ok, report.text()


def test_activation_before_the_producer_does_not_order_it() -> None:
    p = plan(ACTIVE, {0: ["act", "relu1"], 1: ["relu2"]}, activations={"act": [1]})
    report = verify_plan(ACTIVE, p)
    assert sorted(m.split(" is not")[0] for m in messages(report, "dependency")) == [
        "control edge relu1 -> act", "data edge relu1 -> relu2"]


def test_a_stream_nobody_activates_starts_with_the_model() -> None:
    report = verify_plan(ACTIVE, plan(ACTIVE, {0: ["relu1", "act"], 1: ["relu2"]}))
    assert "dependency" in report.kinds()


def test_the_loop_activator_restarts_streams_and_orders_nothing() -> None:
    graph = yaml_graph("""
name: loop
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: act, type: StreamActive, control_inputs: [relu1], attrs: {is_loop_active: true}}
  - {name: relu2, type: Relu, inputs: [relu1]}
""")
    p = plan(graph, {0: ["relu1", "act"], 1: ["relu2"]}, activations={"act": [1]})
    assert "dependency" in verify_plan(graph, p).kinds()


def test_an_activation_after_the_stream_s_own_work_is_a_restart_not_a_deadlock() -> None:
    # act0 starts stream 1; act, after relu2 (stream 1) in T-order, re-activates it (a loop's
    # back edge); relu1 -> relu2 still needs its event.
    graph = yaml_graph("""
name: back
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: act0, type: StreamActive, control_inputs: [relu1]}
  - {name: relu2, type: Relu, inputs: [relu1]}
  - {name: act, type: StreamActive, control_inputs: [relu2]}
""")
    p = plan(graph, {0: ["relu1", "back_Send_0", "act0"],
                     1: ["back_Recv_0", "relu2", "back_Send_1"], 2: ["back_Recv_1", "act"]},
             events=[(0, "relu1", "relu2"), (1, "relu2", "act")],
             activations={"act0": [1], "act": [1]})
    assert verify_plan(graph, p).ok


# relu2 (stream 1, a label stream) comes before its only activator act in T-order.
LATE = yaml_graph("""
name: late
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: relu2, type: Relu, inputs: [relu1]}
  - {name: act, type: StreamActive, control_inputs: [relu1]}
""")


def test_a_stream_whose_only_activator_comes_later_starts_there() -> None:
    # GE runs an activated stream only once activated (sync spec 2.2 rule 5, 3.3 drop the
    # event relu1 -> relu2 for that reason), wherever G-order puts the activator
    p = plan(LATE, {0: ["relu1", "act"], 1: ["relu2"]}, activations={"act": [1]})
    assert verify_plan(LATE, p).ok


def test_an_only_activator_waiting_for_its_stream_deadlocks() -> None:
    graph = yaml_graph("""
name: cycle
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: relu2, type: Relu, inputs: [relu1]}
  - {name: act, type: StreamActive, control_inputs: [relu2]}
""")
    p = plan(graph, {0: ["relu1", "cycle_Send_0"], 1: ["cycle_Recv_0", "relu2", "cycle_Send_1"],
                     2: ["cycle_Recv_1", "act"]},
             events=[(0, "relu1", "relu2"), (1, "relu2", "act")], activations={"act": [1]})
    assert verify_plan(graph, p).kinds() == {"deadlock"}


# Two activators that both run start relu3's stream: act1 after relu1, act2 after relu2.
TWO_ACTIVATORS = yaml_graph("""
name: two
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: act1, type: StreamActive, control_inputs: [relu1]}
  - {name: relu2, type: Relu, inputs: [data]}
  - {name: act2, type: StreamActive, control_inputs: [relu2]}
  - {name: relu3, type: Add, inputs: [relu1, relu2]}
""")


def test_a_stream_two_activators_start_runs_after_the_first_of_them() -> None:
    """Found by a fuzz run: the stream starts when act1 or act2 has run, whichever is first,
    so only what precedes both is ordered before relu3. The verifier once waited for both and
    accepted the plan GE's "by activation" elimination makes (no event from relu2), which the
    emulator ran with relu3 before relu2."""
    p = plan(TWO_ACTIVATORS, {0: ["relu1", "act1"], 1: ["relu2", "act2"], 2: ["relu3"]},
             activations={"act1": [2], "act2": [2]})
    report = verify_plan(TWO_ACTIVATORS, p)
    assert sorted(m.split(" is not")[0] for m in messages(report, "dependency")) == [
        "data edge relu1 -> relu3", "data edge relu2 -> relu3"]
    # with relu1 and relu2 before both activators, the activation orders them
    p = plan(TWO_ACTIVATORS, {0: ["relu1", "relu2", "act1", "act2"], 1: ["relu3"]},
             activations={"act1": [1], "act2": [1]})
    assert verify_plan(TWO_ACTIVATORS, p).ok


def test_activator_mistakes() -> None:
    p = plan(ACTIVE, {0: ["relu1", "act"], 1: ["relu2"]},
             activations={"act": [0, 7], "data": [1], "nobody": [1]})
    report = verify_plan(ACTIVE, p)
    assert messages(report, "activation-own-stream") == [
        "act activates its own stream 0 (GE rejects this; docs/ge-behaviour.md section 6)"]
    assert messages(report, "activation") == [
        "act activates stream 7, which has no task list",
        "stream_activations names data (Data), whose task starts no stream: only StreamActive and "
        "StreamSwitch tasks, and nodes with _active_label_list, subgraph_first_active or "
        "is_loop_active, activate streams",
        "stream_activations names nobody, which is neither a graph node nor a sync node"]
    unlisted = verify_plan(ACTIVE, plan(ACTIVE, {0: ["relu1"], 1: ["relu2"]},
                                        activations={"act": [1]}))
    assert messages(unlisted, "activation") == [
        "activator act is in no stream list: a node without a stream issues no activation task"]


def test_only_activators_start_streams() -> None:
    """Found by a fuzz run: any node named in stream_activations started streams, in the
    verifier and the emulator alike, so a plan naming a Relu passed. Now a node GE makes an
    activator (by type or attribute) or a generated StreamActive may; a Relu may not, even
    where its activation would order everything."""
    p = plan(ACTIVE, {0: ["relu1"], 1: ["relu2", "act"]}, activations={"relu1": [1]})
    p["nodes"]["act"]["stream"] = 1
    report = verify_plan(ACTIVE, p)
    assert messages(report, "activation") == [
        "stream_activations names relu1 (Relu), whose task starts no stream: only StreamActive and "
        "StreamSwitch tasks, and nodes with _active_label_list, subgraph_first_active or "
        "is_loop_active, activate streams"]


def test_a_generated_stream_active_can_activate() -> None:
    p = plan(ACTIVE, {0: ["relu1", "sw_StreamActive_0"], 1: ["relu2"], 2: ["act"]},
             activations={"sw_StreamActive_0": [1]})
    p["sync_nodes"].append({"name": "sw_StreamActive_0", "type": "StreamActive", "stream": 0})
    p["nodes"]["act"]["stream"] = 2
    p["logical_stream_count"] = 3
    report = verify_plan(ACTIVE, p)
    assert report.kinds() == {"dependency"}  # relu1 -> act (control) is on another stream
    assert messages(report, "dependency")[0].startswith("control edge relu1 -> act")


def test_activation_cycle_is_a_deadlock() -> None:
    # Stream 1 starts after act, and act waits (an event) for relu2 on stream 1.
    graph = yaml_graph("""
name: cyc
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: act, type: StreamActive, control_inputs: [relu1]}
  - {name: relu2, type: Relu, inputs: [relu1]}
""")
    p = plan(graph, {0: ["relu1", "cyc_Recv_0", "act"], 1: ["relu2", "cyc_Send_0"]},
             events=[(0, "relu2", "act")], activations={"act": [1]})
    [message] = messages(verify_plan(graph, p), "deadlock")
    assert "stream 1 at position 0: its first task relu2 waits for its activator act " \
           "(stream 0, position 2)" in message
    assert "stream 0 at position 1: Recv cyc_Recv_0 waits for event 0, recorded by " \
           "cyc_Send_0 (stream 1, position 1)" in message


def limited(options: str) -> Any:
    return yaml_graph(f"""
name: lim
options: {{{options}}}
nodes:
  - {{name: data, type: Data}}
  - {{name: a, type: Relu, inputs: [data], task_count: 10}}
  - {{name: b, type: Relu, inputs: [a], task_count: 10}}
  - {{name: c, type: HcomAllReduce, inputs: [b], attrs: {{_hccl_task_num: 5}}}}
""")


def test_tasks_per_stream_count_units_plus_the_7_profiling_units() -> None:
    graph = limited("streamalloc.max_task_per_stream: 28")
    # stream 0: a 10 + b 10 + Send 1 = 21 (+7 = 28, fits); stream 1: Recv 2 + c 5 = 7.
    p = plan(graph, {0: ["a", "b", "lim_Send_0"], 1: ["lim_Recv_0", "c"]},
             events=[(0, "b", "c")])
    assert verify_plan(graph, p).ok
    graph = limited("streamalloc.max_task_per_stream: 27")
    report = verify_plan(graph, p)
    assert report.exit_code == 4
    assert messages(report, "limit-tasks") == [
        "stream 0 holds 21 task units, with the 7 profiling units 28, over the limit of 27 "
        "(graph option streamalloc.max_task_per_stream); split the stream"]


def test_plan_task_units_and_huge_streams_win() -> None:
    graph = limited("streamalloc.max_task_per_stream: 27, streamalloc.max_task_per_huge_stream: 99")
    p = plan(graph, {0: ["a", "b", "lim_Send_0"], 1: ["lim_Recv_0", "c"]},
             events=[(0, "b", "c")], tasks={"0": 5, "1": 30})
    assert messages(verify_plan(graph, p), "limit-tasks") == [
        "stream 1 holds 30 task units, with the 7 profiling units 37, over the limit of 27 "
        "(graph option streamalloc.max_task_per_stream); split the stream"]
    # only stream 0 in single-stream mode is huge (sync spec 5.2): a plan cannot exempt
    # another from the limit by listing it (found by a fuzz run)
    p["huge_streams"] = [1]
    report = verify_plan(graph, p)
    assert report.exit_code == 5 and report.kinds() == {"huge-stream", "limit-tasks"}
    assert messages(report, "huge-stream") == [
        "huge_streams lists stream 1, but only stream 0 of a graph in single-stream mode "
        "(ge.enableSingleStream) is huge; it is held to max_task_per_stream"]
    single = limited("streamalloc.max_task_per_stream: 27, streamalloc.max_task_per_huge_stream: "
                     '99, ge.enableSingleStream: "true"')
    one = plan(single, {0: ["a", "b", "c"]}, tasks={"0": 30})
    one["huge_streams"] = []  # GE's estimate found it small enough: a normal stream
    assert messages(verify_plan(single, one), "limit-tasks")
    one["huge_streams"] = [0]
    assert verify_plan(single, one).ok


def test_single_stream_mode_makes_stream_0_huge() -> None:
    graph = limited('streamalloc.max_task_per_stream: 40, ge.enableSingleStream: "true"')
    assert verify_plan(graph, plan(graph, {0: ["a", "b", "c"]})).ok


@pytest.mark.parametrize(("option", "kind", "text"), [
    ("streamalloc.max_streams: 2", "limit-streams", "the plan uses 2 streams, the device "
     "allows 1 (graph option streamalloc.max_streams: 2 slots, less the caller's stream)"),
    ("streamalloc.max_events: 0", "limit-events", "the plan uses 1 events, the device allows 0 "
     "(graph option streamalloc.max_events)"),
])
def test_too_many_streams_or_events(option: str, kind: str, text: str) -> None:
    graph = limited(option)
    p = plan(graph, {0: ["a", "b", "lim_Send_0"], 1: ["lim_Recv_0", "c"]},
             events=[(0, "b", "c")])
    report = verify_plan(graph, p)
    assert (report.exit_code, messages(report, kind)) == (4, [text])


def test_limits_and_a_wrong_plan_exit_5() -> None:
    graph = limited("streamalloc.max_streams: 2")
    report = verify_plan(graph, plan(graph, {0: ["a", "b"], 1: ["c"]}))
    assert report.kinds() == {"limit-streams", "dependency"}
    assert report.exit_code == 5


def notify_plan(graph: Any) -> dict[str, Any]:
    return plan(graph, {0: ["a", "b", "lim_Send_Notify_0"], 1: ["lim_Recv_Notify_0", "c"]},
                events=[(0, "b", "c")])


def test_notify_plans_verify_and_count_notifies() -> None:
    graph = limited('ge.event: "notify"')
    p = notify_plan(graph)
    assert (p["event_count"], p["notify_count"]) == (0, 1)
    report = verify_plan(graph, p)
    assert report.ok, report.text()
    assert (report.stats.events, report.stats.notifies) == (0, 1)


def test_notify_limit_and_gap() -> None:
    graph = limited('ge.event: "notify", streamalloc.max_notifies: 0')
    report = verify_plan(graph, notify_plan(graph))
    assert messages(report, "limit-notifies") == [
        "the plan uses 1 notifies, the device allows 0 (graph option streamalloc.max_notifies)"]
    p = notify_plan(graph)
    p["notify_count"] = 3
    assert messages(verify_plan(graph, p), "notify-id-gap")[0].startswith(
        "notify ids 1-2 have no Send or Recv although notify_count is 3")


def test_an_event_record_does_not_satisfy_a_notify_wait() -> None:
    graph = limited("")
    p = notify_plan(graph)
    p["sync_nodes"][0]["type"] = "Send"  # records event 0, but the wait is on notify 0
    p["event_count"] = 1
    report = verify_plan(graph, p)
    assert {"event-unpaired", "notify-unpaired", "dependency"} <= report.kinds()
