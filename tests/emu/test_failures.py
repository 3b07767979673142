"""Plans that cannot run right: deadlocks (never a hang) and broken dependencies (exit 5)."""

from __future__ import annotations

import pytest
from emu.conftest import EXAMPLES, chain_graph, plan_dict

from streamalloc.commands.emulate import emulate_command
from streamalloc.errors import PlanVerifyError
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, load_plan, report_dict


def example(plan: str, graph: str = "fork_join") -> dict:
    return report_dict(emulate(load_graph(EXAMPLES / f"{graph}.yaml"),
                               load_plan(EXAMPLES / f"{plan}.plan.json")))


def test_crossed_waits_are_a_deadlock_naming_streams_tasks_and_events() -> None:
    report = example("fork_join.deadlock")
    assert report["status"] == "deadlock"
    assert report["deadlock"] == [
        {"stream": 0, "task": "fork_join_Recv_1", "waits_for": "event", "id": 1,
         "by": [{"task": "fork_join_Send_1", "stream": 1}]},
        {"stream": 1, "task": "fork_join_Recv_0", "waits_for": "event", "id": 0,
         "by": [{"task": "fork_join_Send_0", "stream": 0}]}]
    assert report["makespan_us"] == 12.0  # a ran, then nothing could


def test_deadlock_and_violation_are_exit_5_with_the_report_printed() -> None:
    graph = EXAMPLES / "fork_join.yaml"
    for plan, status in (("fork_join.deadlock", "deadlock"), ("fork_join.no_events", "violation")):
        text, code = emulate_command(graph, EXAMPLES / f"{plan}.plan.json", json_out=False,
                                     trace=None, gantt=None, cost=None, verify=False)
        assert code == 5 and f"status {status}" in text


@pytest.mark.parametrize(("plan", "kind"), [("fork_join.deadlock", "deadlock"),
                                            ("fork_join.no_events", "dependency")])
def test_the_verifier_rejects_them_before_they_run(plan: str, kind: str) -> None:
    with pytest.raises(PlanVerifyError, match=f"not emulated.*\n.*\n  {kind}: ") as err:
        emulate_command(EXAMPLES / "fork_join.yaml", EXAMPLES / f"{plan}.plan.json",
                        json_out=True, trace=None, gantt=None, cost=None)
    assert err.value.exit_code == 5


def test_a_plan_with_its_events_removed_is_reported_not_run_as_if_fine() -> None:
    report = example("fork_join.no_events")
    assert report["status"] == "violation"
    pairs = [(v["kind"], v["producer"], v["consumer"]) for v in report["violations"]]
    # c starts before a ends; d starts after c ends, but only by luck of timing (a race)
    assert pairs == [("early_start", "a", "c"), ("unsynchronized", "c", "d")]
    assert report["violations"][0]["producer_end_us"] == 12.0
    assert report["violations"][0]["consumer_start_us"] == 0.0


def test_a_wait_nobody_records_is_a_deadlock() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [])
    report = report_dict(emulate(graph, plan_dict("g", {0: ["a"], 1: ["R", "b"]},
                                                  [("R", "Recv", 1, 0)])))
    assert report["status"] == "deadlock"
    assert report["deadlock"] == [{"stream": 1, "task": "R", "waits_for": "event", "id": 0,
                                   "by": []}]


def test_a_stream_whose_activator_issues_no_task_never_starts() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [])
    report = report_dict(emulate(graph, plan_dict("g", {0: ["a"], 1: ["b"]},
                                                  activations={"data": [1]})))
    assert report["status"] == "deadlock"
    assert report["deadlock"] == [{"stream": 1, "task": "b", "waits_for": "activation",
                                   "id": None, "by": [{"task": "data", "stream": None}]}]


def test_a_stream_activated_by_its_own_task_is_a_deadlock() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [])
    report = report_dict(emulate(graph, plan_dict("g", {0: ["a"], 1: ["b"]},
                                                  activations={"b": [1]})))
    assert report["deadlock"][0]["by"] == [{"task": "b", "stream": 1}]


def test_notify_deadlocks_name_the_notify() -> None:
    graph = chain_graph("g", {"a": 1}, [])
    report = report_dict(emulate(graph, plan_dict("g", {0: ["R", "a"]},
                                                  [("R", "RecvNotify", 0, 3)])))
    assert report["deadlock"][0]["waits_for"] == "notify" and report["deadlock"][0]["id"] == 3


def test_consumer_listed_before_its_producer_on_one_stream_is_a_violation() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [("a", "b")])
    report = report_dict(emulate(graph, plan_dict("g", {0: ["b", "a"]})))
    assert report["status"] == "violation"
    violation = report["violations"][0]
    assert violation["kind"] == "early_start"
    assert (violation["consumer_start_us"], violation["producer_end_us"]) == (0.0, 6.0)


def test_a_record_on_a_set_event_is_lost_and_reported() -> None:
    # two Sends of event 0 (at 4 and 5 us) before the only wait (at 12 us): one record is lost
    graph = chain_graph("g", {"a": 1, "b": 10}, [])
    plan = plan_dict("g", {0: ["a", "S", "S2"], 1: ["b", "R"]},
                     [("S", "Send", 0, 0), ("S2", "Send", 0, 0), ("R", "Recv", 1, 0)])
    report = report_dict(emulate(graph, plan))
    assert report["status"] == "violation"
    assert [(v["kind"], v["producer"], v["consumer"], v["event"])
            for v in report["violations"]] == [("unordered_reuse", "S", "S2", "event 0")]
    assert report["sync_warnings"] == {"lost_records": 1, "unconsumed": []}


def test_reuse_whose_outcome_depends_on_timing_is_reported_even_when_this_run_works() -> None:
    # event 0 twice: S (s0) -> R (s1), then S2 (s2) -> R2 (s3). Timing makes R take S's record
    # and R2 take S2's, but nothing orders S2 or R2 after R: on another device R2 could take
    # S's record, or S2's record could be lost.
    graph = chain_graph("g", {"a": 1, "b": 1, "c": 50, "d": 60}, [])
    plan = plan_dict("g", {0: ["a", "S"], 1: ["R", "b"], 2: ["c", "S2"], 3: ["d", "R2"]},
                     [("S", "Send", 0, 0), ("R", "Recv", 1, 0), ("S2", "Send", 2, 0),
                      ("R2", "Recv", 3, 0)])
    report = report_dict(emulate(graph, plan))
    assert report["status"] == "violation"
    assert [(v["kind"], v["producer"], v["consumer"]) for v in report["violations"]] == [
        ("unordered_reuse", "R", "S2"), ("unordered_reuse", "R", "R2")]


def test_reuse_ordered_after_the_previous_wait_is_fine() -> None:
    # S (s0) -> R (s1); S2 after R on s1 -> R2 on s2, which b (after R) activates
    graph = chain_graph("g", {"a": 1, "b": 1, "c": 1}, [])
    plan = plan_dict("g", {0: ["a", "S"], 1: ["R", "b", "S2"], 2: ["R2", "c"]},
                     [("S", "Send", 0, 0), ("R", "Recv", 1, 0), ("S2", "Send", 1, 0),
                      ("R2", "Recv", 2, 0)], activations={"b": [2]})
    result = emulate(graph, plan)
    assert result.status == "ok" and result.records == (2, 0) and result.waits == (2, 0)
    del plan["stream_activations"]["b"]  # R2 now arrives at 0 and takes S's record
    assert [v[0] for v in emulate(graph, plan).violations] == ["unordered_reuse"]
