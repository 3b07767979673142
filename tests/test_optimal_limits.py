"""The limits a written plan must meet in the optimal mode, and what it writes when the
solver's plan misses one.

* The device's stream, event and notify limits: the model states them, a ge-mode plan over
  one is the solver's reference (its events and makespan, its streams the hint) but never the
  plan written, and when no plan fits the error says so; `compare` and `sweep` show such rows
  as OVER_LIMIT and NO_PLAN and go on.
* A ge-mode plan over the stream limit hints the search with its streams merged within it;
  one over the event limit is polished down to it.
* The events objective's makespan limit: when no solution of the model meets it in emulation,
  the polished baseline does; a plan exactly as fast as ge mode's meets it.
* Fallbacks: only the solver's own verdict (`Unsolvable`) keeps the baseline; a graph with no
  streamed node is no fallback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from node_graphs import graph_of
from real_models import DATA, LIGHT
from test_attached_sync import attached
from test_optimal import control_flow_graph
from test_schemas import valid

from streamalloc import api
from streamalloc.cli import main
from streamalloc.commands import compare as compare_module
from streamalloc.commands.compare import CompareSettings, compare
from streamalloc.commands.sweep import sweep, sweep_table
from streamalloc.errors import LimitExceeded
from streamalloc.ir import DataInput, Graph, GraphBuilder
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.ir.training import training_step
from streamalloc.optimal import OptimalOptions, allocate_optimal, driver
from streamalloc.optimal import search as search_module
from streamalloc.report.compare_report import compare_table, frontier_plot
from streamalloc.rules import builtin_rules, load_rules
from streamalloc.runtime_emu.cost_table import load_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ROOT / "examples" / "graphs" / "transformer_layers.yaml"
TRAIN_STEP = ROOT / "examples" / "graphs" / "train_step.yaml"
GOLDEN_CASES_DIR = ROOT / "tests" / "goldens" / "cases"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
# ge mode: 2 streams and 2 events at 182 us; one stream and no event runs 232 us


def planned(settings: dict[str, str], **options: object) -> tuple[dict, dict]:
    graph = api.read_graph(LAYERS, settings)
    plan, report = allocate_optimal(graph, options.pop("rules", None),  # type: ignore[arg-type]
                                    OptimalOptions(**{"time_limit": 1.0, **options}))
    document = plan.to_json()
    assert verify_plan(graph, document).exit_code == 0  # the limits included
    assert emulate(graph, document).status == "ok"
    return document, report.to_json()


def test_ge_mode_over_the_event_limit_is_the_reference_not_the_fallback() -> None:
    with pytest.raises(LimitExceeded, match="over the limit of 1"):
        api.plan(api.read_graph(LAYERS, {"streamalloc.max_events": "1"}))
    plan, solver = planned({"streamalloc.max_events": "1"}, makespan_slack=50.0)
    assert plan["event_count"] <= 1 and solver["status"] != "FALLBACK"
    assert "streamalloc.max_events" in solver["baseline_over_limit"]
    assert solver["baseline_events"] == 2 and solver["baseline_makespan_us"] == pytest.approx(182)
    assert solver["makespan_us"] <= 182 * 1.5


def test_no_plan_within_the_limits_is_exit_4_naming_the_way_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At slack 0 no plan of at most one event runs as fast as ge mode's two: the events
    bound says so, and the solver is not run. The error names the best plan within the
    limits the makespan objective finds without a makespan limit (one stream, 232 us) and
    the options that admit it; with them that plan is written."""
    graph = api.read_graph(LAYERS, {"streamalloc.max_events": "1"})
    with monkeypatch.context() as patched:
        patched.setattr(driver, "search", pytest.fail)
        with pytest.raises(LimitExceeded, match="no plan within the device limits") as caught:
            allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    message = str(caught.value)
    assert "needs 2 events or more, over the device's 1" in message
    assert "streamalloc.max_events" in message and caught.value.exit_code == 4
    assert ("needs 0 events and runs 232.0 us, ge mode's 182.0 us x 1.275: --objective "
            "makespan --makespan-slack 28 admits it") in message
    plan, report = allocate_optimal(graph, None, OptimalOptions(
        time_limit=1.0, objective="makespan", makespan_slack=28.0))
    assert report.events_final <= 1 and report.makespan_us <= 182 * 1.28
    assert verify_plan(graph, plan.to_json()).exit_code == 0


def test_an_event_limit_below_what_every_plan_needs_fails_before_any_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Llama tiny training step under the parallel options fills 12 streams with its
    nodes' task units, so every plan needs 11 events whatever its makespan. Under 3 events
    the command searched for 11 s (the events objective, then the rescue without a makespan
    limit) and then advised a longer --time-limit; it fails at once and says why."""
    graph = api.with_options(training_step(load_graph(DATA / "onnx" / "llama_tiny.onnx")),
                             {**PARALLEL, "streamalloc.max_events": "3"})
    monkeypatch.setattr(driver, "search", pytest.fail)
    monkeypatch.setattr(driver, "fastest_within_limits", pytest.fail)
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    message = str(caught.value)
    assert "it needs at least 11 events whatever its makespan" in message
    assert "task units" in message and "over the device's 3" in message
    assert "--time-limit" not in message and caught.value.exit_code == 4


@pytest.mark.filterwarnings("ignore::streamalloc.errors.InputWarning")  # the rule is idle
def test_the_error_names_the_event_budget_and_the_slack_that_admit_a_plan() -> None:
    """A generated graph under a rule file that keeps AI CPU apart from AI Core: ge mode
    needs 21 events against the device's 8, and no plan of at most 3 events (the budget)
    was found within its makespan. The error names the best plan within the limits found
    without a makespan limit (4 events, 2% slower than ge mode) and the options that admit
    it; with them a plan is written."""
    rules = load_rules(ROOT / "examples" / "rules" / "aicpu_apart_from_aicore.yaml")
    graph = api.with_options(layered_graph(68, seed=38, label_every=7),
                             {"streamalloc.max_events": "8"})
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, rules, OptimalOptions(time_limit=0.3, objective="makespan",
                                                      event_budget=3))
    assert "the plan needs 21 events, over the limit of 8" in str(caught.value)
    assert ("needs 4 events and runs 292.0 us, ge mode's 286.0 us x 1.021: --event-budget 4 "
            "--makespan-slack 3 admits it") in str(caught.value)
    plan, report = allocate_optimal(graph, rules, OptimalOptions(
        time_limit=0.3, objective="makespan", event_budget=4, makespan_slack=3.0))
    assert report.events_final <= 4 and report.makespan_us <= 286 * 1.03
    assert verify_plan(graph, plan.to_json(), rules=rules).exit_code == 0


def test_rules_that_need_more_streams_than_the_device_leaves_fail_before_the_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The example training step under a rule file that gives each AllReduce a stream of its
    own: its two AllReduces and the other nodes need 3 streams, and `max_streams` 3 leaves
    2 beside the caller's. No slack or time makes room, so the error says so at once."""
    rules = load_rules(ROOT / "examples" / "rules" / "allreduce_own_stream.yaml")
    graph = api.read_graph(TRAIN_STEP, {"streamalloc.max_streams": "3"})
    monkeypatch.setattr(driver, "search", pytest.fail)
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, rules, OptimalOptions(time_limit=1.0))
    assert caught.value.exit_code == 4
    assert ("it needs at least 3 streams (2 that rule 'allreduce-dedicated' keeps each for a "
            "group of nodes alone, 1 for the other nodes), over the limit of 2"
            ) in str(caught.value)
    assert "--makespan-slack" not in str(caught.value)


def test_attached_streams_beyond_the_limit_fail_before_the_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Four MatMuls that each ask for an attached stream of their own (GE's pass gives four,
    whatever the main streams): with 4 slots (3 beside the caller's) no plan fits, and the
    error says why at once, not after a search that could not find one."""
    builder = GraphBuilder("att4")
    builder.add_node("d", "Data")
    for i in range(4):
        builder.add_node(f"m{i}", "MatMul", inputs=[DataInput("d")],
                         attrs=attached(name=f"aux{i}"))
    builder.add_node("out", "NetOutput", inputs=[DataInput(f"m{i}") for i in range(4)])
    graph = api.with_options(builder.build(), {"streamalloc.max_streams": "4"})
    monkeypatch.setattr(driver, "search", pytest.fail)
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    assert "it needs at least 1 stream (" in str(caught.value)
    assert "and the 4 attached streams its nodes ask for" in str(caught.value)


def test_under_full_concurrency_the_way_out_is_nimbles_minimum_not_a_slack() -> None:
    """The example training step needs at least 5 events when only ordered nodes share a
    stream, so none fits `max_events` 2; a makespan slack, which full concurrency does not
    read, is no way out."""
    graph = api.read_graph(TRAIN_STEP, {"streamalloc.max_events": "2"})
    with pytest.raises(LimitExceeded, match="Nimble's minimum of 5 events") as caught:
        allocate_optimal(graph, builtin_rules("free"),
                         OptimalOptions(time_limit=1.0, concurrency="full"))
    assert "--makespan-slack" not in str(caught.value)


def test_the_stream_limit_binds_the_makespan_objective() -> None:
    """Free rules and the makespan objective use 4 streams; a limit of 3 leaves 2 (the
    runtime keeps a slot for the caller's stream) and ge mode's 2 still fit."""
    free = builtin_rules("free")
    unlimited, _ = planned({}, rules=free, objective="makespan")
    assert unlimited["physical_stream_count"] > 2
    plan, solver = planned({"streamalloc.max_streams": "3"}, rules=free, objective="makespan")
    assert plan["physical_stream_count"] + plan["attached_stream_count"] <= 2
    assert solver["status"] != "FALLBACK" and "baseline_over_limit" not in solver


def test_ge_mode_over_the_stream_limit_gets_one_stream() -> None:
    plan, solver = planned({"streamalloc.max_streams": "2"}, makespan_slack=50.0)
    assert plan["physical_stream_count"] == 1 and plan["event_count"] == 0
    assert "caller's stream" in solver["baseline_over_limit"]


@pytest.mark.parametrize("objective", ["events", "makespan"])
def test_ge_mode_streams_over_the_limit_are_merged_within_it(objective: str) -> None:
    """The example training step: ge mode's 4 streams are over `max_streams` 3 (2 beside the
    caller's). Every move of the polish from ge mode's streams stayed over the limit, so the
    optimal mode failed (exit 4); its start is now ge mode's streams merged within it."""
    graph = api.read_graph(TRAIN_STEP, {"streamalloc.max_streams": "3"})
    plan, report = allocate_optimal(graph, builtin_rules("free"),
                                    OptimalOptions(time_limit=1.0, objective=objective))
    document, solver = plan.to_json(), report.to_json()
    assert document["physical_stream_count"] + document["attached_stream_count"] <= 2
    assert verify_plan(graph, document).exit_code == 0
    assert emulate(graph, document).status == "ok"
    assert "streamalloc.max_streams" in solver["baseline_over_limit"]
    assert solver["events_final"] <= solver["baseline_events"] == 7
    assert solver["makespan_us"] <= solver["baseline_makespan_us"]


def test_ge_mode_streams_over_the_limit_across_subgraphs_are_merged_within_it(
        tmp_path: Path) -> None:
    """A graph with While and If nodes: ge mode needs 4 streams (218 us), one of them an If
    branch's alone. Every start was over `max_streams` 4 (3 beside the caller's), since a
    stream joined only one of its own graph, and the makespan objective failed (exit 4);
    now the plan runs faster than ge mode within the limit."""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(7), sort_keys=False), encoding="utf-8")
    graph = api.with_options(load_graph(path), {"streamalloc.max_streams": "4"})
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.3,
                                                                objective="makespan"))
    document, solver = plan.to_json(), report.to_json()
    assert document["physical_stream_count"] + document["attached_stream_count"] <= 3
    assert verify_plan(graph, document).exit_code == 0
    assert emulate(graph, document).status == "ok"
    assert "streamalloc.max_streams" in solver["baseline_over_limit"]
    assert solver["makespan_us"] < solver["baseline_makespan_us"]


def test_several_workers_on_a_model_the_limits_make_infeasible() -> None:
    """OR-Tools 9.15 aborted the whole process (exit 134, no message) when interleaved workers
    loaded an infeasible model with a hint: a graph with While and If nodes under 3 stream
    slots, while the model kept each stream in one graph. Several workers now get only a hint
    that is a solution. Here two nodes no path orders, under full concurrency and one stream,
    hinted on two streams: the hint is left out, and CP-SAT proves the model infeasible. In a
    child process, since the failure is an abort."""
    code = (
        "from streamalloc.solver import run\n"
        "from streamalloc.solver.dag import TaskDag\n"
        "from streamalloc.solver.model import SolveInput, build\n"
        "dag = TaskDag.build(['a', 'b', 'c'], [('a', 'b'), ('a', 'c')], ['g'] * 3)\n"
        "data = SolveInput(dag=dag, units=[1] * 3, durations=[1] * 3, capacity=None,\n"
        "                  concurrency='full', hint=[[0, 1], [2]], stream_limit=1)\n"
        "print(run._hint_holds(build(data).cp),\n"
        "      run.solve(build(data), time_limit=1.0, seed=0, workers=2).status)\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "INFEASIBLE"]


def test_several_workers_on_a_model_whose_hint_breaks_the_limits(tmp_path: Path) -> None:
    """The graph with While and If nodes above, under 3 stream slots and 5 events, 2 workers:
    ge mode's plan (4 streams) is over the limit; the plan written holds both."""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(3353), sort_keys=False), encoding="utf-8")
    out = tmp_path / "plan.json"
    run = subprocess.run([sys.executable, "-m", "streamalloc", "allocate", str(path), "--mode",
                          "optimal", "--set", "streamalloc.max_streams=3", "--set",
                          "streamalloc.max_events=5", "--time-limit", "0.2", "--seed", "3",
                          "--workers", "2", "-o", str(out)], check=False, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["event_count"] <= 5 and document["physical_stream_count"] <= 2
    assert verify_plan(load_graph(path).with_options(
        {"streamalloc.max_streams": "3", "streamalloc.max_events": "5"}), document).exit_code == 0


def limited_control_flow(tmp_path: Path, seed: int, *, slots: int, events: int) -> Graph:
    """`control_flow_graph(seed)` of the tests, loaded from a file, under `slots` stream slots
    and `events` events."""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(seed), sort_keys=False), encoding="utf-8")
    return api.with_options(load_graph(path), {"streamalloc.max_streams": str(slots),
                                               "streamalloc.max_events": str(events)})


def test_the_fastest_plan_within_the_limits_is_written_where_it_keeps_their_makespan(
        tmp_path: Path) -> None:
    """A graph with While and If nodes under 3 stream slots and 2 events: ge mode needs 4
    streams and 8 events and runs 258 us. The events objective's search found no plan within
    the limits, and the command failed (exit 4), naming `--objective makespan`, whose plan
    within them needs 0 events and runs 184 us. That plan keeps the events objective's
    limits, so it is now the plan (status FEASIBLE, the makespan search's phase)."""
    graph = limited_control_flow(tmp_path, 2, slots=3, events=2)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=2.0))
    document = plan.to_json()
    assert report.status == "FEASIBLE" and "+fastest" in report.phase
    assert "streamalloc.max_streams" in report.baseline_over_limit
    assert report.events_final == 0 and report.makespan_us < report.baseline_makespan_us
    assert document["physical_stream_count"] + document["attached_stream_count"] <= 2
    assert verify_plan(graph, document).exit_code == 0
    assert emulate(graph, document).status == "ok"


def test_the_events_objective_polishes_the_fastest_plan_for_events(tmp_path: Path) -> None:
    """The same with `control_flow_graph(1)` under 3 stream slots and 5 events: ge mode needs
    5 streams and 7 events at 199 us; the fastest plan within the limits needs 2 events at
    187 us, and the events objective writes it polished: 1 event at 189 us."""
    graph = limited_control_flow(tmp_path, 1, slots=3, events=5)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=2.0))
    assert report.status == "FEASIBLE" and report.phase.endswith("+fastest+critical+polish+polish")
    assert report.events_final == 1 and report.makespan_us <= report.baseline_makespan_us
    assert verify_plan(graph, plan.to_json()).exit_code == 0


def test_the_fastest_plan_within_the_limits_replaces_a_search_plan_with_more_events(
        tmp_path: Path) -> None:
    """`control_flow_graph(2)` under 3 stream slots and 5 events: ge mode's plan (4 streams, 8
    events, 258 us) is over the stream limit, and the events objective's search, started
    from ge mode's streams merged within it, ended at 3 events and 236 us (CP-SAT found no
    plan of its model), while with 2 events allowed the fastest plan within the limits was
    written: 0 events at 184 us. That plan is now compared with the search's wherever ge
    mode's plan is over a limit, and written."""
    graph = limited_control_flow(tmp_path, 2, slots=3, events=5)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.5))
    document = plan.to_json()
    assert report.status == "FEASIBLE" and "+fastest" in report.phase
    assert report.events_final == 0 and report.makespan_us < 236
    assert document["physical_stream_count"] + document["attached_stream_count"] <= 2
    assert verify_plan(graph, document).exit_code == 0
    assert emulate(graph, document).status == "ok"


def test_a_search_within_an_event_budget_finds_the_plan_a_lower_event_limit_gets(
        tmp_path: Path) -> None:
    """`control_flow_graph(0)` under 3 stream slots and 5 events: no plan of the events
    objective's search fits, and the fastest plan within the limits, polished, needed 1
    event at 221 us, while the same graph under 2 events allowed got 0. The makespan
    objective's search once more, within an event budget of 0, finds 0 events at 212 us."""
    graph = limited_control_flow(tmp_path, 0, slots=3, events=5)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.2))
    assert report.status == "FEASIBLE" and "+fastest" in report.phase
    assert report.events_final == 0 and report.makespan_us <= report.baseline_makespan_us
    assert verify_plan(graph, plan.to_json()).exit_code == 0


def test_streams_that_span_graphs_are_proven_after_the_retry(tmp_path: Path) -> None:
    """`control_flow_graph(28)` under 4 stream slots and 3 events: the model with each stream
    in one graph is INFEASIBLE, and its retry finds streams that span graphs. The resolve from
    the slot relaxation's streams kept each stream in one graph, so it did not run: 1 event,
    FEASIBLE. It now states the model of the retry, and proves 0 events."""
    graph = limited_control_flow(tmp_path, 28, slots=4, events=3)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.2))
    assert report.status == "OPTIMAL" and report.events_final == 0
    assert report.makespan_us <= report.baseline_makespan_us
    assert verify_plan(graph, plan.to_json()).exit_code == 0


def test_explain_says_when_cp_sat_found_no_plan_of_its_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`control_flow_graph(3)`, one worker: CP-SAT finds no plan in its 0.2 s, and `explain`
    gives its status with the same words as the summary line. (Under a device limit ge
    mode's plan is over, the fastest plan within the limits would replace the polish's.)"""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(3), sort_keys=False), encoding="utf-8")
    args = [str(path), "--mode", "optimal", "--time-limit", "0.2"]
    assert main(["allocate", *args]) == 0
    assert "solver: UNKNOWN (CP-SAT found no plan of its model; phase hint+polish)" \
        in capsys.readouterr().out
    assert main(["explain", args[0], "n1", *args[1:]]) == 0
    assert "; status UNKNOWN, CP-SAT found no plan of its model, phase hint+polish)" \
        in capsys.readouterr().out


def test_the_polish_brings_ge_modes_streams_within_the_event_limit() -> None:
    """The ResNet-50 training step under the parallel options: ge mode (minimal sync) needs
    159 events, over `max_events` 150, and CP-SAT finds nothing within a second. The polish,
    which only lowers events, used to reject each of its moves over the limit, so none was
    kept and the optimal mode failed (exit 4); it now probes with the limits lifted and comes
    within them step by step."""
    graph = training_step(load_graph(LIGHT / "light_resnet50.onnx")).with_options(
        {**PARALLEL, "streamalloc.max_events": "150"})
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    document, solver = plan.to_json(), report.to_json()
    assert solver["baseline_events"] == 159 and "max_events" in solver["baseline_over_limit"]
    assert document["event_count"] <= 150 and solver["status"] != "FALLBACK"
    assert solver["makespan_us"] <= solver["baseline_makespan_us"]
    assert verify_plan(graph, document).exit_code == 0


def test_the_notify_limit_binds_in_notify_mode() -> None:
    plan, solver = planned({"ge.event": "notify", "streamalloc.max_notifies": "1"},
                           makespan_slack=50.0)
    assert plan["notify_count"] <= 1
    assert "streamalloc.max_notifies" in solver["baseline_over_limit"]


def test_compare_shows_a_ge_plan_over_a_limit() -> None:
    settings = CompareSettings(("ge", "optimal"), None, {"streamalloc.max_events": "1"},
                               OptimalOptions(time_limit=0.5, makespan_slack=50.0))
    document = compare([str(LAYERS)], settings)
    ge, optimal = document["rows"]
    assert ge["status"] == "OVER_LIMIT" and "streamalloc.max_events" in ge["reason"]
    assert ge["events"] == 2 and ge["makespan_us"] == pytest.approx(182)
    assert optimal["events"] <= 1 and optimal["status"] != "FALLBACK"
    valid("compare", document)


def test_a_frontier_point_is_the_plan_allocate_writes_with_its_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`control_flow_graph(2)` under 3 stream slots and 5 events (ge mode's plan over the
    stream limit): the frontier's events point at slack 0 skipped the later searches over a
    device limit, and showed 3 events at 236 us beside the optimal row's 0 events at 184 us
    under the same options. It is now the same run."""
    monkeypatch.setattr(compare_module, "FRONTIER_SLACKS", (0.0,))  # (one slack is enough)
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(2), sort_keys=False), encoding="utf-8")
    settings = CompareSettings(("optimal",), None, {"streamalloc.max_streams": "3",
                                                    "streamalloc.max_events": "5"},
                               OptimalOptions(time_limit=0.5), frontier=True)
    document = compare([str(path)], settings)
    (row,), point = document["rows"], document["frontier"][0]
    assert (point["objective"], point["slack"], point["carried_from"]) == ("events", 0.0, None)
    assert point["events"] == row["events"] == 0
    assert point["makespan_us"] == row["makespan_us"] < 236
    valid("compare", document)


def test_the_event_limit_binds_the_makespan_objective() -> None:
    """Free rules and the makespan objective use 7 events; within 4 the model still finds a
    plan faster than ge mode's."""
    free = builtin_rules("free")
    unlimited, _ = planned({}, rules=free, objective="makespan")
    assert unlimited["event_count"] > 4
    plan, solver = planned({"streamalloc.max_events": "4"}, rules=free, objective="makespan")
    assert plan["event_count"] <= 4 and solver["status"] != "FALLBACK"
    assert solver["makespan_us"] < solver["baseline_makespan_us"]


@pytest.mark.parametrize("workers", [1, 2])
def test_ge_mode_over_the_event_limit_is_the_makespan_objectives_reference_too(
        workers: int) -> None:
    """The makespan bound (the search's floor, the plan's `bound`) reads the program of the
    ge-mode plan over the limit: measured with the limits lifted, as the baseline is, it is
    no error."""
    plan, solver = planned({"streamalloc.max_events": "1"}, rules=builtin_rules("free"),
                           objective="makespan", makespan_slack=50.0, workers=workers)
    assert plan["event_count"] <= 1 and solver["status"] != "FALLBACK"
    assert "streamalloc.max_events" in solver["baseline_over_limit"]
    assert solver["bound"] <= solver["makespan_us"] <= solver["baseline_makespan_us"] * 1.5


TIGHT_LIMITS = ({"streamalloc.max_events": "8"}, {"streamalloc.max_streams": "4"},
                {"streamalloc.max_events": "4", "ge.streamMaxParallelNum": "AIcoreEngine:2"})


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_under_tight_limits_get_a_plan_within_them_or_an_error_that_says_so(
        tmp_path: Path, seed: int) -> None:
    """Layered graphs and graphs with While and If subgraphs under few streams or events,
    the makespan objective, GE's rules and free ones: the plan verifies with the limits and
    runs within ge mode's makespan x (1 + slack), or the error says that no plan fits (or
    that ge mode fails, whose plan is the baseline), never another one (a ge-mode plan over
    the event limit once failed the makespan bound)."""
    if seed % 2:
        path = tmp_path / "cf.yaml"
        path.write_text(yaml.safe_dump(control_flow_graph(seed), sort_keys=False),
                        encoding="utf-8")
        graph = load_graph(path)
    else:
        graph = layered_graph(40 + 9 * seed, seed=seed, label_every=7)
    graph = api.with_options(graph, TIGHT_LIMITS[seed % 3])
    rules = builtin_rules("free") if seed % 4 < 2 else None
    try:
        plan, report = allocate_optimal(graph, rules, OptimalOptions(
            time_limit=0.3, objective="makespan", makespan_slack=25.0, seed=seed))
    except LimitExceeded as exc:
        assert str(exc).startswith(("no plan within the device limits",
                                    "optimal mode starts from the ge-mode plan"))
        return
    document, solver = plan.to_json(), report.to_json()
    assert verify_plan(graph, document, rules=rules).exit_code == 0
    assert emulate(graph, document).status == "ok"
    assert solver["makespan_us"] <= solver["baseline_makespan_us"] * 1.25 + 1e-6


def test_a_model_plan_slower_in_emulation_leaves_the_polished_baseline() -> None:
    """With a cost table of whole-device kernels, CP-SAT's optimum for the example's training
    step (no event) emulates slower than ge mode (363.4 against 352.4 us). The baseline's
    streams, polished, still save events within ge's makespan; no fallback, and no model
    figures for a plan that is not the model's."""
    graph = api.read_graph(TRAIN_STEP)
    costs = load_cost_table(ROOT / "examples" / "plans" / "whole_device_costs.yaml")
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.5, costs=costs))
    solver = report.to_json()
    assert solver["status"] == "FEASIBLE" and solver["phase"] == "hint+polish"
    assert solver["objective"] is None and solver["bound"] is None
    assert solver["events_final"] < solver["baseline_events"] == 7
    assert solver["makespan_us"] <= solver["baseline_makespan_us"]
    assert verify_plan(graph, plan.to_json()).exit_code == 0


@pytest.mark.parametrize("objective", ["events", "makespan"])
def test_a_graph_without_a_streamed_node_is_no_fallback(tmp_path: Path, objective: str) -> None:
    """Nothing to place: the plan is ge mode's, kept as the solver's own (it fell back with
    the reason "max() arg is an empty sequence")."""
    graph = graph_of(tmp_path, "empty", ["{name: d, type: Data}",
                                         "{name: out, type: NetOutput, inputs: [d]}"])
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=0.5,
                                                                objective=objective))
    solver = report.to_json()
    assert solver["status"] != "FALLBACK" and "reason" not in solver
    assert plan.event_count == 0 and verify_plan(graph, plan.to_json()).exit_code == 0


def test_a_model_too_large_to_state_keeps_the_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only that verdict falls back (an error in the search is a bug: it is not hidden as a
    fallback)."""
    monkeypatch.setattr("streamalloc.solver.rules.PAIR_LIMIT", 0)
    graph = api.read_graph(TRAIN_STEP)
    rules = api.load_rule_set(ROOT / "examples" / "rules" / "aicpu_apart_from_aicore.yaml")
    plan, report = allocate_optimal(graph, rules, OptimalOptions(time_limit=0.5))
    solver = report.to_json()
    assert solver["status"] == "FALLBACK" and plan.event_count == solver["baseline_events"]
    assert solver["reason"].endswith("pairwise stream inequalities")
    monkeypatch.setattr("streamalloc.optimal.search.solved", _broken_search)
    with pytest.raises(ValueError, match="a bug"):
        allocate_optimal(graph, None, OptimalOptions(time_limit=0.5))


def _broken_search(*_: object, **__: object) -> None:
    raise ValueError("a bug")


@pytest.mark.parametrize("bounded", [True, False])
def test_a_plan_exactly_as_fast_as_ge_mode_is_the_models(
        bounded: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """AlexNet is one chain: every plan runs as long as ge mode's. Its one stream, without an
    event, is kept at once where the events bound proves it minimal, and as CP-SAT's plan
    with its proof without that bound. Rounded to schedule units (0.1 us) the limit had
    rejected it."""
    if not bounded:
        monkeypatch.setattr("streamalloc.optimal.driver.events_bound",
                            lambda *_, **__: None)
    graph = api.read_graph(LIGHT / "light_bvlc_alexnet.onnx")
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))
    solver = report.to_json()
    assert solver["makespan_us"] == solver["baseline_makespan_us"] and plan.event_count == 0
    assert solver["status"] == "OPTIMAL"
    assert solver["phase"] == ("one-stream" if bounded else "cp-sat+polish")


@pytest.mark.parametrize("limit", [None, "5"])
def test_full_concurrency_takes_the_fewest_streams_nimbles_minimum_allows(limit: str | None
                                                                        ) -> None:
    """Nimble's 10 events on 4 streams, the fewest any plan with 10 events needs: within a
    limit of 5 (4 usable) too. A maximum matching of the reduction edges alone took 6, so
    under that limit the model had to place the graph."""
    settings = {"streamalloc.unlimited_stream_depth": "true"}
    if limit is not None:
        settings["streamalloc.max_streams"] = limit
    plan, solver = planned(settings, rules=builtin_rules("free"), concurrency="full")
    assert plan["physical_stream_count"] == 4 and plan["event_count"] == 10
    assert solver["status"] == "OPTIMAL" and solver["phase"] == "matching"


def test_full_concurrency_below_the_graphs_width_is_a_fallback() -> None:
    """Four of the layers' nodes are pairwise unordered, so no plan under full concurrency
    fits 3 usable streams: found before the search (CP-SAT proved it before), and ge mode's
    plan is kept."""
    settings = {"streamalloc.unlimited_stream_depth": "true", "streamalloc.max_streams": "4"}
    plan, solver = planned(settings, rules=builtin_rules("free"), concurrency="full")
    assert solver["status"] == "FALLBACK" and solver["deterministic_time"] == 0
    assert "which no path orders, need 4 streams, over the 3 the device leaves (option " \
        "streamalloc.max_streams: 4 slots, less the caller's stream)" in solver["reason"]
    assert plan["event_count"] == solver["baseline_events"]


def test_full_concurrency_beyond_the_stream_limit_is_a_fallback_that_says_why() -> None:
    """Inception v1's modules run four branches side by side, which full concurrency keeps on
    four streams; a limit of 3 leaves 2, so no plan exists (proven before the search; CP-SAT
    proved it before, in 0.6 deterministic s, and named two nodes GE's plan shares). ge mode's one
    stream is kept as a fallback, without the events bound of full concurrency's plans: it
    used to be written as CP-SAT's answer (status INFEASIBLE, phase `hint`), 0 events against
    an events bound of 54."""
    graph = load_graph(LIGHT / "light_inception_v1.onnx").with_options(
        {"streamalloc.max_streams": "3"})
    plan, report = allocate_optimal(graph, builtin_rules("free"),
                                    OptimalOptions(time_limit=1.0, concurrency="full"))
    assert report.status == "FALLBACK" and report.events_bound is None
    assert report.reason == (
        "no plan under --concurrency full holds the rules and the device limits (proven before "
        "any search): nodes 'n20', 'n10', 'n12' and 1 more, which no path orders, need 4 "
        "streams, over the 2 the device leaves (option streamalloc.max_streams: 3 slots, less "
        "the caller's stream)")
    assert report.nimble_min_events == 54 and plan.event_count == report.baseline_events == 0


def test_full_concurrency_above_the_solvers_size_takes_nimbles_chains(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the size CP-SAT solves whole, Nimble's chains, brought within the rules, are
    still the plan (a 13k-node transformer training step: 5501 events on 1762 streams in
    3.4 s; it was a fallback): OPTIMAL where they are at the bounds, else FEASIBLE, such as
    where the task capacity splits them and the split's events are counted (a generated
    100k-node graph: 57,706 events on 3 logical streams, 475 physical; it was a fallback).
    The size is lowered here."""
    monkeypatch.setattr(driver, "MAX_SOLVER_NODES", 5)
    monkeypatch.setattr(search_module, "MAX_SOLVER_NODES", 5)
    unsplit = {"streamalloc.unlimited_stream_depth": "true"}
    split = {"streamalloc.max_task_per_stream": "300"}
    for settings, rules, phase in ((unsplit, builtin_rules("free"), "matching"),
                                   (split, builtin_rules("free"), "matching"),
                                   ({**PARALLEL, **unsplit}, None, "matching+rules"),
                                   ({**PARALLEL, **split}, None, "matching+rules")):
        plan, solver = planned(settings, rules=rules, concurrency="full")
        assert solver["phase"] == phase and solver["nimble_min_events"] == 10
        assert plan["logical_stream_count"] == 4
        if settings.get("streamalloc.max_task_per_stream"):
            assert solver["status"] == "FEASIBLE" and plan["event_count"] == 12
            assert plan["physical_stream_count"] == 6
        else:
            assert solver["status"] == "OPTIMAL" and plan["event_count"] == 10


def test_full_concurrency_above_the_solvers_size_says_when_no_chains_hold_the_rules(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where Nimble's chains cannot be brought within the rules and the stream limit (the
    repair, stood in for here), nothing is searched above the size: the fallback says so."""
    monkeypatch.setattr(driver, "MAX_SOLVER_NODES", 5)
    monkeypatch.setattr(search_module, "MAX_SOLVER_NODES", 5)
    monkeypatch.setattr(search_module, "full_start", lambda *_, **__: None)
    _, solver = planned(PARALLEL, concurrency="full")
    assert solver["status"] == "FALLBACK" and solver["reason"] == (
        "under --concurrency full Nimble's chains do not fit the stream limit within the rules, "
        "and the model is not solved above 5 streamed nodes")


def test_compare_goes_on_past_a_graph_ge_fails_on() -> None:
    """GE's quirk Q1 fails the first graph in every mode (the optimal mode starts from ge
    mode's plan): its rows say NO_PLAN with GE's error, and the next graph is compared (the
    whole command once stopped at exit 4)."""
    q1 = GOLDEN_CASES_DIR / "ex7_4b_quirk_q1.yaml"
    settings = CompareSettings(("ge", "ge-minimal", "optimal"), None, {},
                               OptimalOptions(time_limit=0.5), frontier=True)
    document = compare([str(q1), str(LAYERS)], settings)
    failed = [r for r in document["rows"] if r["input"] == q1.stem]
    assert [r["status"] for r in failed] == ["NO_PLAN"] * 3
    assert all("GE's split fails on it" in r["reason"] and r["events"] is None
               and r["makespan_bound_us"] is None for r in failed)
    assert "ge mode fails" in failed[2]["reason"]
    assert [r["status"] for r in document["rows"] if r["input"] == LAYERS.stem][:2] == ["-", "-"]
    valid("compare", document)
    assert frontier_plot(document)[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_goes_on_past_input_ge_rejects(tmp_path: Path) -> None:
    """Single-stream mode with a stream label is GE's error E10055 (exit 3 for `allocate`):
    in `compare` the graph's rows say NO_PLAN with that error, and the other graph is
    compared (the whole command once stopped at exit 3)."""
    rejected = tmp_path / "single_labelled.yaml"
    rejected.write_text(
        "format: streamalloc.graph/v1\nname: r\noptions: {ge.enableSingleStream: 'true'}\n"
        "nodes:\n- {name: d, type: Data}\n"
        "- {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}\n", encoding="utf-8")
    settings = CompareSettings(("ge", "optimal"), None, {}, OptimalOptions(time_limit=0.2))
    document = compare([str(rejected), str(LAYERS)], settings)
    failed = [r for r in document["rows"] if r["input"] == rejected.stem]
    assert [r["status"] for r in failed] == ["NO_PLAN"] * 2
    assert all("E10055" in r["reason"] and r["events"] is None for r in failed)
    assert [r["events"] is not None for r in document["rows"] if r["input"] == LAYERS.stem] \
        == [True, True]
    valid("compare", document)


def test_compare_and_sweep_show_no_plan_within_the_limits(tmp_path: Path) -> None:
    """A result, not a failure: the row says NO_PLAN with the reason and no plan figures, and
    the other rows and the frontier go on (at slack 50% a plan fits)."""
    settings = CompareSettings(("ge", "optimal"), None, {"streamalloc.max_events": "1"},
                               OptimalOptions(time_limit=0.5), frontier=True)
    document = compare([str(LAYERS)], settings)
    ge, optimal = document["rows"]
    assert ge["status"] == "OVER_LIMIT" and optimal["status"] == "NO_PLAN"
    assert "no plan within the device limits" in optimal["reason"]
    assert optimal["events"] is None and optimal["makespan_us"] is None
    assert optimal["makespan_bound_us"] == ge["makespan_bound_us"]
    why = compare_table(document).split("\nwhy:\n")[1].splitlines()  # in the text too
    assert why[0].startswith(f"  {ge['input']} ge (OVER_LIMIT): ")
    assert any(line.startswith(f"  {ge['input']} optimal (NO_PLAN): no plan within the "
                               "device limits") for line in why)
    slack_50 = next(p for p in document["frontier"] if p["slack"] == 50.0)
    assert slack_50["events"] == 0 and slack_50["status"] != "NO_PLAN"
    valid("compare", document)
    assert frontier_plot(document)[:8] == b"\x89PNG\r\n\x1a\n"
    spec = tmp_path / "limits.yaml"
    spec.write_text(f"format: streamalloc.sweep-spec/v1\ngraphs: [{LAYERS}]\n"
                    "options: {streamalloc.max_events: ['1', '65535']}\nmodes: [optimal]\n"
                    "solver: {time_limit: 0.5}\n", encoding="utf-8")
    swept = sweep(str(spec))
    rows = swept["rows"]
    assert rows[0]["status"] == "NO_PLAN" and rows[1]["events"] is not None
    why = sweep_table(swept).split("\nwhy:\n")[1].splitlines()  # in the text, as compare's
    assert len(why) == 1 and why[0].startswith(
        f"  point 0: {rows[0]['input']} optimal (NO_PLAN): no plan within the device limits")


@pytest.mark.parametrize("rules", [None, "free"])
def test_full_concurrency_in_single_stream_mode_keeps_the_baseline(rules: str | None) -> None:
    """Found by an option-matrix run: under --concurrency full Nimble's chains went to the
    sync layer, which refused several main streams in single-stream mode and blamed the rule
    set (exit 4). One stream and full concurrency cannot both hold where two nodes are
    unordered: the baseline is kept, saying why, and it verifies."""
    b = GraphBuilder("diamond")
    b.add_node("d", "Data")
    b.add_node("a", "Relu", inputs=[DataInput("d")])
    b.add_node("b", "Relu", inputs=[DataInput("d")])
    b.add_node("c", "Add", inputs=[DataInput("a"), DataInput("b")])
    graph = api.with_options(b.build(), {"ge.enableSingleStream": "true"})
    plan, report = api.optimal_plan(graph, api.load_rule_set(rules),
                                    api.OptimalOptions(concurrency="full", time_limit=1.0))
    assert report.status == "FALLBACK"
    assert report.reason.startswith("single-stream mode (ge.enableSingleStream) keeps every "
                                    "node on one stream, and --concurrency full")
    assert plan.allocation.main_stream_num == 1
    assert verify_plan(graph, plan.to_json()).ok
