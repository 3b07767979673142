"""The verifier on small hand-written plans: the valid case, and one mistake at a time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from verify.verify_plans import plan, yaml_graph

from streamalloc.errors import LimitExceeded, PlanVerifyError
from streamalloc.verify import VerifyReport, verify_plan

# data -> relu1 -> relu2, relu1 on stream 0, relu2 on stream 1 (formats.md section 3).
TWO = yaml_graph("""
name: demo
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: relu2, type: Relu, inputs: [relu1]}
""")


def two_stream_plan() -> dict[str, Any]:
    return plan(TWO, {0: ["relu1", "demo_Send_0"], 1: ["demo_Recv_0", "relu2"]},
                events=[(0, "relu1", "relu2")])


def messages(report: VerifyReport, kind: str) -> list[str]:
    return [v.message for v in report.violations if v.kind == kind]


def test_correct_two_stream_plan_passes() -> None:
    report = verify_plan(TWO, two_stream_plan())
    assert report.ok, report.text()
    assert report.exit_code == 0
    assert (report.stats.tasks, report.stats.streams, report.stats.events,
            report.stats.dependencies) == (4, 2, 1, 1)
    assert report.text() == ("<plan>: plan for graph 'demo' is valid\nchecked 4 tasks on 2 "
                             "streams, 1 event, 0 notifies, 1 dependency\n")


def test_removing_the_event_is_a_dependency_violation() -> None:
    p = plan(TWO, {0: ["relu1"], 1: ["relu2"]})
    report = verify_plan(TWO, p)
    assert report.kinds() == {"dependency"}
    assert report.exit_code == 5
    [message] = messages(report, "dependency")
    assert message.startswith("data edge relu1 -> relu2 is not ordered: relu1 runs on stream 0 "
                              "(position 0), relu2 on stream 1 (position 0)")
    with pytest.raises(PlanVerifyError, match="relu1 -> relu2"):
        report.raise_for_failure()


def test_same_stream_order_is_checked() -> None:
    report = verify_plan(TWO, plan(TWO, {0: ["relu2", "relu1"]}))
    [message] = messages(report, "dependency")
    assert "both run on stream 0, but relu2 is at position 0 and relu1 at position 1" in message


def test_recv_before_its_own_send_on_one_stream_deadlocks() -> None:
    p = plan(TWO, {0: ["demo_Recv_0", "relu1", "demo_Send_0", "relu2"]},
             events=[(0, "relu1", "relu2")])
    report = verify_plan(TWO, p)
    [message] = messages(report, "deadlock")
    assert "stream 0 at position 0: Recv demo_Recv_0 waits for event 0, recorded by " \
           "demo_Send_0 (stream 0, position 2), later on the same stream" in message
    assert "(4 tasks can never run)" in message
    assert report.stats.unchecked == 1  # relu1 -> relu2 cannot be decided: both blocked


CROSS = yaml_graph("""
name: cross
nodes:
  - {name: data, type: Data}
  - {name: a, type: Relu, inputs: [data]}
  - {name: b, type: Relu, inputs: [data]}
  - {name: c, type: Add, inputs: [a, b]}
""")


def test_two_streams_waiting_on_each_other_is_a_cycle_naming_both_events() -> None:
    # stream 0 waits for b's record before running a; stream 1 waits for a's before b.
    p = plan(CROSS, {0: ["cross_Recv_1", "a", "cross_Send_0", "c"],
                     1: ["cross_Recv_0", "b", "cross_Send_1"]},
             events=[(0, "a", "b"), (1, "b", "c")])
    report = verify_plan(CROSS, p)
    [message] = messages(report, "deadlock")
    assert message.startswith("streams 0, 1 wait for each other forever")
    assert "Recv cross_Recv_1 waits for event 1, recorded by cross_Send_1 (stream 1" in message
    assert "Recv cross_Recv_0 waits for event 0, recorded by cross_Send_0 (stream 0" in message


def test_cross_plan_with_events_in_order_passes() -> None:
    p = plan(CROSS, {0: ["a", "cross_Recv_0", "c"], 1: ["b", "cross_Send_0"]},
             events=[(0, "b", "c")])
    assert verify_plan(CROSS, p).ok


Mutation = Callable[[dict[str, Any]], None]


def _set(path: tuple[Any, ...], value: Any) -> Mutation:
    def apply(p: dict[str, Any]) -> None:
        target = p
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return apply


def _del(path: tuple[Any, ...]) -> Mutation:
    def apply(p: dict[str, Any]) -> None:
        target = p
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return apply


def _renumber(p: dict[str, Any], ident: int) -> None:
    for sync in p["sync_nodes"]:
        sync["event"] = ident
    for event in p["events"]:
        event["id"] = ident


def _off_stream(name: str) -> Mutation:
    """The node off every stream list, its entry without a stream (found by a fuzz run: the
    verifier passed its orderings on as for a node without work, and accepted the plan)."""
    def mutate(p: dict[str, Any]) -> None:
        p["streams"] = {s: [t for t in tasks if t != name] for s, tasks in p["streams"].items()}
        p["nodes"][name].update(stream=-1, physical_stream=-1)
    return mutate


MUTATIONS: list[tuple[str, Mutation, str, str]] = [
    ("gap in event ids", _set(("event_count",), 2), "event-id-gap", "event id 1 has no Send"),
    ("id beyond count", lambda p: _renumber(p, 3), "event-id-range",
     "event id 3 is used but event_count is 1; ids run 0..0"),
    ("duplicate task", lambda p: p["streams"]["1"].append("relu1"), "duplicate-task",
     "task relu1 is listed 2 times (stream 0 position 0, stream 1 position 2)"),
    ("missing node entry", _del(("nodes", "data")), "missing-node-entry",
     "graph node data has no entry"),
    ("unknown node entry", _set(("nodes", "ghost"), {"stream": 0, "physical_stream": -1}),
     "unknown-node-entry", "entry for ghost"),
    ("node on the wrong stream list", _set(("nodes", "relu2", "physical_stream"), 0),
     "node-on-wrong-stream", "node relu2 has physical stream 0 but is listed as relu2 "
     "(stream 1, position 1)"),
    ("node not listed", _set(("streams", "1"), ["demo_Recv_0"]), "node-not-listed",
     "node relu2 has physical stream 1 but is in no stream list"),
    ("stream-less node listed", lambda p: p["streams"]["0"].insert(0, "data"),
     "streamless-node-listed", "node data has physical_stream -1"),
    ("a node with work taken off its stream", _off_stream("relu1"), "streamless-work",
     "node relu1 issues 3 task unit(s) (engine AIcoreEngine's default) but has "
     "physical_stream -1: its work never runs"),
    ("unknown task", lambda p: p["streams"]["0"].append("mystery"), "unknown-task",
     "mystery (stream 0, position 2) is neither"),
    ("stream gap", _set(("physical_stream_count",), 3), "stream-gap",
     "stream 2 has no task list"),
    ("stream beyond count", _set(("physical_stream_count",), 1), "stream-id-range",
     "stream 1 has a task list, but ids run 0..0"),
    ("sync node on the wrong stream", _set(("sync_nodes", 0, "stream"), 1),
     "sync-node-wrong-stream", "sync node demo_Send_0 is declared on stream 1"),
    ("sync node not listed", lambda p: p["sync_nodes"].append(
        {"name": "demo_Send_9", "type": "Send", "stream": 0, "event": 0}),
     "sync-node-not-listed", "sync node demo_Send_9 (Send, stream 0) is in no stream list"),
    ("entry on the wrong stream", _set(("events", 0, "send_stream"), 1), "event-entry",
     "no Send of event 0 is listed on its stream 1"),
    ("no entry", _set(("events",), []), "event-entry", "event 0 has demo_Send_0"),
    ("Send before its sender", _set(("streams", "0"), ["demo_Send_0", "relu1"]),
     "event-placement", "the Send demo_Send_0 (stream 0, position 0) is not after relu1"),
    ("a second Recv", lambda p: (p["streams"]["1"].append("demo_Recv_0_Reuse_1"),
                                 p["sync_nodes"].append({"name": "demo_Recv_0_Reuse_1",
                                                         "type": "Recv", "stream": 1,
                                                         "event": 0})),
     "event-multiple-recv", "a wait resets the event"),
    ("a second Send outside a Case", lambda p: (
        p["streams"]["0"].append("demo_Send_0_Reuse_1"),
        p["sync_nodes"].append({"name": "demo_Send_0_Reuse_1", "type": "Send", "stream": 0,
                                "event": 0})),
     "event-multiple-send", "not in different subgraph instances of one Case node"),
    ("Send without Recv", _set(("streams", "1"), ["relu2"]), "event-unpaired",
     "records event 0, but no Recv waits for it"),
    ("logical stream out of range", _set(("nodes", "relu1", "stream"), 5), "stream-id-range",
     "node relu1 has logical stream 5, but logical_stream_count is 2"),
    ("another graph", _set(("graph",), "other"), "graph-mismatch", "plan is for graph 'other'"),
]


@pytest.mark.parametrize(("mutate", "kind", "text"), [m[1:] for m in MUTATIONS],
                         ids=[m[0] for m in MUTATIONS])
def test_each_mistake_is_reported(mutate: Mutation, kind: str, text: str | None) -> None:
    p = copy.deepcopy(two_stream_plan())
    mutate(p)
    report = verify_plan(TWO, p)
    assert kind in report.kinds(), report.text()
    assert report.exit_code == 5
    if text is not None:
        assert any(text in m for m in messages(report, kind)), report.text()


def test_one_physical_stream_holds_one_logical_stream() -> None:
    p = plan(CROSS, {0: ["a", "cross_Recv_0", "c"], 1: ["b", "cross_Send_0"]},
             events=[(0, "b", "c")])
    p["nodes"]["c"]["stream"] = 1
    [message] = messages(verify_plan(CROSS, p), "physical-mixes-logical")
    assert message == ("physical stream 0 holds nodes of 2 logical streams: a (logical 0), "
                       "c (logical 1); a physical stream is one logical stream or a split "
                       "piece of one")


def test_sync_node_with_a_graph_node_name_is_reported() -> None:
    p = two_stream_plan()
    p["sync_nodes"].append({"name": "relu2", "type": "Recv", "stream": 1, "event": 0})
    assert "sync-name-clash" in verify_plan(TWO, p).kinds()


def test_report_keeps_the_first_violations_and_counts_all() -> None:
    p = two_stream_plan()
    p["streams"]["0"] += [f"ghost{i}" for i in range(30)]
    report = verify_plan(TWO, p, cap=5)
    assert len(report.violations) == 5
    assert report.total == report.counts["unknown-task"] == 30
    assert report.text().splitlines()[0] == \
        "<plan>: plan for graph 'demo': 30 violations, the first 5 shown"


def test_only_limits_exceeded_raises_limit_exceeded() -> None:
    graph = yaml_graph(TWO_TEXT_LIMITED)
    report = verify_plan(graph, plan(graph, {0: ["relu1", "demo_Send_0"],
                                             1: ["demo_Recv_0", "relu2"]},
                                     events=[(0, "relu1", "relu2")]))
    assert report.exit_code == 4
    with pytest.raises(LimitExceeded, match="the plan uses 2 streams, the device allows 1"):
        report.raise_for_failure()


TWO_TEXT_LIMITED = """
name: demo
options: {streamalloc.max_streams: 2}
nodes:
  - {name: data, type: Data}
  - {name: relu1, type: Relu, inputs: [data]}
  - {name: relu2, type: Relu, inputs: [relu1]}
"""


def test_a_plan_without_tasks_is_valid() -> None:
    graph = yaml_graph("name: empty\nnodes:\n  - {name: data, type: Data}\n")
    report = verify_plan(graph, plan(graph, {}))
    assert report.ok and report.stats.tasks == 0


def test_streams_stuck_behind_a_cycle_are_counted_not_reported() -> None:
    # Streams 0 and 1 wait for each other; stream 2 waits for stream 0's record of a.
    graph = yaml_graph("""
name: three
nodes:
  - {name: data, type: Data}
  - {name: a, type: Relu, inputs: [data]}
  - {name: b, type: Relu, inputs: [data]}
  - {name: c, type: Relu, inputs: [a]}
""")
    p = plan(graph, {0: ["three_Recv_1", "a", "three_Send_0", "three_Send_2"],
                     1: ["three_Recv_0", "b", "three_Send_1"],
                     2: ["three_Recv_2", "c"]},
             events=[(0, "a", "b"), (1, "b", "a"), (2, "a", "c")])
    [message] = messages(verify_plan(graph, p), "deadlock")
    assert message.startswith("streams 0, 1 wait for each other forever")
    assert message.endswith("(9 tasks can never run)")
