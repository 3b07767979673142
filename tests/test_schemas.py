"""JSON Schemas of the files the tool writes (streamalloc.schemas): each one accepts the real
outputs of the commands, rejects broken documents with messages that name the file, the field
and the expected value, and agrees with the format constants of the modules that write them
and with the examples in docs/."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from real_models import LIGHT
from test_user_documents import graph_blocks

from streamalloc import api, schemas
from streamalloc.cli import main
from streamalloc.commands.compare import CompareSettings, compare
from streamalloc.errors import InputError, StreamallocError
from streamalloc.ir.loaders import load_graph
from streamalloc.memory.plan import PLAN_FORMAT as VARS_WRITER_FORMAT
from streamalloc.report.compare_report import COMPARE_FORMAT as COMPARE_WRITER_FORMAT
from streamalloc.report.graph_report import SHOW_FORMAT as SHOW_WRITER_FORMAT
from streamalloc.runtime_emu.report import REPORT_FORMAT as EMULATION_WRITER_FORMAT
from streamalloc.schemas import SCHEMAS, check_document
from streamalloc.sync.result import PLAN_FORMAT as PLAN_WRITER_FORMAT

ROOT = Path(__file__).resolve().parents[1]
TRAIN_STEP = ROOT / "examples" / "graphs" / "train_step.yaml"
PLANS = ROOT / "examples" / "plans"
CASES = ROOT / "tests" / "goldens" / "cases"
DOCS = ROOT / "docs"
DOC_OF = {"plan": "plan-format.md", "vars": "vars-format.md",
          "emulation": "emulation-report.md", "compare": "compare-format.md",
          "show": "show-format.md"}


def valid(kind: str, document: Any) -> None:
    """Both validators accept the document (the fast one is what the readers run)."""
    jsonschema.Draft202012Validator(SCHEMAS[kind]).validate(document)
    check_document(kind, document, f"<{kind}>")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """allocate -o, vars -o, emulate --json and compare --json on the train step example."""
    tmp = tmp_path_factory.mktemp("outputs")
    plan, var = tmp / "plan.json", tmp / "vars.json"
    assert main(["allocate", str(TRAIN_STEP), "-o", str(plan)]) == 0
    assert main(["vars", str(TRAIN_STEP), "-o", str(var)]) == 0
    return {"plan": json.loads(plan.read_text()), "vars": json.loads(var.read_text()),
            "plan_path": plan}


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert set(SCHEMAS) == {"plan", "vars", "emulation", "compare", "sweep", "show"}
    for schema in SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_format_strings_agree_with_the_modules_that_write_the_files() -> None:
    assert schemas.PLAN_FORMAT == PLAN_WRITER_FORMAT
    assert schemas.VARS_FORMAT == VARS_WRITER_FORMAT
    assert schemas.EMULATION_FORMAT == EMULATION_WRITER_FORMAT
    assert schemas.COMPARE_FORMAT == COMPARE_WRITER_FORMAT
    assert schemas.SHOW_FORMAT == SHOW_WRITER_FORMAT
    for kind, fmt in (("plan", PLAN_WRITER_FORMAT), ("vars", VARS_WRITER_FORMAT),
                      ("emulation", EMULATION_WRITER_FORMAT),
                      ("compare", COMPARE_WRITER_FORMAT), ("show", SHOW_WRITER_FORMAT)):
        assert SCHEMAS[kind]["properties"]["format"] == {"const": fmt}


def test_the_real_plan_and_variable_plan_validate(outputs: dict[str, Any]) -> None:
    valid("plan", outputs["plan"])
    valid("vars", outputs["vars"])


def test_the_real_emulation_report_validates(outputs: dict[str, Any],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(run(capsys, "emulate", str(TRAIN_STEP), str(outputs["plan_path"]),
                            "--json"))
    valid("emulation", report)
    assert report["status"] == "ok" and "variables" in report


def test_the_real_comparison_validates(capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(run(capsys, "compare", str(TRAIN_STEP), "--json", "--time-limit", "1"))
    valid("compare", document)
    assert [row["mode"] for row in document["rows"]] == ["ge", "ge-minimal", "optimal"]


def test_a_comparison_with_its_frontier_validates() -> None:
    settings = CompareSettings(("ge",), None, {},
                               api.OptimalOptions(time_limit=0.5), frontier=True)
    document = compare([str(TRAIN_STEP)], settings)
    assert [(p["objective"], p["slack"], p["event_budget"]) for p in document["frontier"]] == [
        ("events", 0.0, None), ("events", 5.0, None), ("events", 10.0, None),
        ("events", 25.0, None), ("events", 50.0, None), ("makespan", None, 1),
        ("makespan", None, None)]
    ge = document["rows"][0]
    for point in document["frontier"]:  # what the optimal mode guarantees at each point
        slack = point["slack"] or 0.0
        assert point["makespan_us"] <= ge["makespan_us"] * (1 + slack / 100) + 1e-3
        assert point["makespan_us"] >= ge["makespan_bound_us"]
        if point["objective"] == "events":
            assert point["events"] <= ge["events"]
        if point["event_budget"] is not None:
            assert point["events"] <= point["event_budget"]
    valid("compare", document)


def test_optimal_mode_plans_with_their_solver_block_validate(tmp_path: Path) -> None:
    plan = tmp_path / "opt.json"
    assert main(["allocate", str(TRAIN_STEP), "--mode", "optimal", "--time-limit", "1",
                 "-o", str(plan)]) == 0
    document = json.loads(plan.read_text())
    valid("plan", document)
    assert document["solver"]["status"] in schemas.SOLVER_STATUSES
    fallback = {**document, "solver": {**document["solver"], "status": "FALLBACK",
                                       "objective": None, "bound": None, "gap": None,
                                       "phase": "", "reason": "over the makespan bound"}}
    valid("plan", fallback)


def test_plans_of_switches_notifies_and_every_golden_case_validate(tmp_path: Path) -> None:
    switch = tmp_path / "switch.yaml"
    switch.write_text("""format: streamalloc.graph/v1
name: g
nodes:
  - {name: p, type: Relu, stream_id: 0}
  - {name: sw, type: StreamSwitch, inputs: [p], stream_id: 0, attrs: {_active_label_list: [T]}}
  - {name: t1, type: Relu, control_inputs: [sw], stream_id: 1, attrs: {_stream_label: T}}
  - {name: t2, type: Relu, control_inputs: [sw], stream_id: 2, attrs: {_stream_label: T}}
""", encoding="utf-8")
    document = api.plan(load_graph(switch), mode="preset").to_json()
    assert any(n["type"] == "StreamActive" for n in document["sync_nodes"])
    valid("plan", document)
    notify = api.plan(api.with_options(load_graph(TRAIN_STEP), {"ge.event": "notify"})).to_json()
    assert notify["notify_count"] > 0
    valid("plan", notify)
    checked = 0
    for case in sorted(CASES.glob("*.yaml")):
        try:
            graph = load_graph(case)
            for sync in ("ge", "minimal"):
                valid("plan", api.plan(graph, sync=sync).to_json())
        except StreamallocError:
            continue  # the error cases
        checked += 1
    assert checked >= 25


def test_the_hand_written_example_plans_validate() -> None:
    for path in sorted(PLANS.glob("*.plan.json")):
        valid("plan", json.loads(path.read_text()))


def test_failed_emulation_reports_validate(capsys: pytest.CaptureFixture[str]) -> None:
    for plan, status in (("fork_join.deadlock", "deadlock"), ("fork_join.no_events", "violation")):
        capsys.readouterr()
        assert main(["emulate", str(PLANS / "fork_join.yaml"), str(PLANS / f"{plan}.plan.json"),
                     "--json", "--no-verify"]) == 5
        report = json.loads(capsys.readouterr().out)
        assert report["status"] == status
        valid("emulation", report)


def _readme_graph(tmp_path: Path) -> Path:
    """The README's example graph file (a While with two subgraphs)."""
    _, block = next(graph_blocks(ROOT / "README.md"))
    path = tmp_path / "readme.yaml"
    path.write_text(block, encoding="utf-8")
    return path


def test_the_real_graph_summaries_validate(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    train = json.loads(run(capsys, "show", str(TRAIN_STEP), "--json"))
    valid("show", train)
    assert next(iter(train["partitions"])) == train["graph"] == "train_step"
    nested = json.loads(run(capsys, "show", str(_readme_graph(tmp_path)), "--json"))
    valid("show", nested)
    assert list(nested["partitions"]) == ["demo", "loop_body", "loop_cond"]
    assert {n["graph"] for n in nested["nodes"].values()} == set(nested["partitions"])
    onnx = json.loads(run(capsys, "show", str(LIGHT / "light_squeezenet.onnx"), "--json"))
    valid("show", onnx)
    assert onnx["partitions"][onnx["graph"]]["subgraphs"]
    options = json.loads(run(capsys, "show", str(TRAIN_STEP), "--json", "--set",
                             "ge.streamMaxParallelNum=AIcoreEngine:4"))
    valid("show", options)
    assert {sg["engine"]: sg["max_parallel_num"] for sg in options["partitions"]["train_step"][
        "subgraphs"]}["AIcoreEngine"] == 4


def test_the_graph_summaries_of_every_golden_case_validate() -> None:
    from streamalloc.report.graph_report import graph_summary_json
    checked = 0
    for case in sorted(CASES.glob("*.yaml")):
        try:
            graph = load_graph(case)
            document = graph_summary_json(graph, api.partitions(graph))
        except StreamallocError:
            continue  # the error cases
        valid("show", json.loads(json.dumps(document)))
        checked += 1
    assert checked >= 25


def test_the_examples_in_the_documents_validate() -> None:
    for kind, name in DOC_OF.items():
        text = (DOCS / name).read_text(encoding="utf-8")
        blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
        examples = [b for b in blocks if b.get("format") == SCHEMAS[kind]["properties"][
            "format"]["const"]]
        assert examples, f"docs/{name} has no example of its format"
        for example in examples:
            valid(kind, example)


# --- broken documents -------------------------------------------------------------------------

Change = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Change:
    def change(document: dict[str, Any]) -> None:
        target: Any = document
        keys = path.split("/")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if value is KeyError:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return change


BROKEN_PLANS = [
    (_set("events/0/id", 1e30), "field events[0].id: expected an integer >= 0 (up to "
                                "2147483647), found 1e+30"),
    (_set("events/0/id", 10**30), "field events[0].id: expected an integer >= 0"),
    (_set("sync_nodes/0/stream", True), "field sync_nodes[0].stream: expected an integer >= 0"),
    (_set("nodes/loss/physical_stream", False),
     "field nodes['loss'].physical_stream: expected an integer >= -1"),
    (_set("physical_stream_count", 10**12), "field physical_stream_count: expected an integer"),
    (_set("streams", KeyError), "field streams: expected a JSON object, found nothing "
                                "(missing key 'streams')"),
    (_set("format", "streamalloc.plan/v0"), "field format: expected 'streamalloc.plan/v1'"),
    (_set("sync", "fast"), "field sync: expected 'ge' or 'minimal', found \"fast\""),
    (_set("events/0/colour", "red"), "field events[0]: unknown key 'colour'"),
    (_set("sync_nodes/0/event", KeyError), "field sync_nodes[0].event: expected an integer >= 0"),
    (_set("rules/digest", "md5:1"), "field rules.digest: expected sha256:<64 hex digits>"),
    (lambda d: d["streams"].update({"s1": []}), "field streams key 's1': expected a stream id "
                                                "key such as \"0\""),
]


@pytest.mark.parametrize(("change", "message"), BROKEN_PLANS,
                         ids=[m.split(":")[0] for _, m in BROKEN_PLANS])
def test_broken_plans_are_rejected_naming_the_field(outputs: dict[str, Any], change: Change,
                                                    message: str) -> None:
    document = copy.deepcopy(outputs["plan"])
    change(document)
    _rejected("plan", document, message, "docs/plan-format.md")


def _rejected(kind: str, document: Any, message: str, doc: str) -> None:
    """Both validators reject `document`; ours names the file, the field (`message`) and the
    document that describes the format, with exit 3."""
    assert not jsonschema.Draft202012Validator(SCHEMAS[kind]).is_valid(document)
    with pytest.raises(InputError) as err:
        check_document(kind, document, f"{kind}.json")
    text = str(err.value)
    assert text.startswith(f"{kind}.json: ") and message in text, text
    assert text.endswith(f"({doc})") and err.value.exit_code == 3


@pytest.mark.parametrize(("change", "message"), [
    (_set("variables/w1/size", -1), "field variables['w1'].size: expected an integer >= 0"),
    (_set("variables/w1/kind", "Tensor"), "field variables['w1'].kind: expected one of"),
    (_set("total_size/HOST", KeyError), "field total_size.HOST: expected an integer >= 0"),
    (_set("session", "0"), "field session: expected an integer >= 0, found \"0\""),
])
def test_broken_variable_plans_are_rejected(outputs: dict[str, Any], change: Change,
                                            message: str) -> None:
    document = copy.deepcopy(outputs["vars"])
    change(document)
    with pytest.raises(InputError, match=re.escape(message)):
        check_document("vars", document, "vars.json")


def test_broken_reports_and_comparisons_are_rejected(outputs: dict[str, Any]) -> None:
    report = {"format": "streamalloc.emulation/v1", "graph": "g", "makespan_us": 1.0,
              "status": "deadlock", "streams": {}, "event_records": 0, "event_waits": 0,
              "lower_bounds": {"critical_path_us": 0.0, "work_over_units_us": 0.0},
              "tasks": 0, "notify_records": 0, "notify_waits": 0, "engines": {},
              "stream_pool": {"runtime": "v1", "requested": 0, "created": 0, "reused": 0},
              "device": {"name": "d", "cost_table": "t"}}
    with pytest.raises(InputError, match=r"field deadlock: expected a JSON list, found nothing"):
        check_document("emulation", report, "report.json")
    with pytest.raises(InputError, match=r"field status: expected one of ok, deadlock"):
        check_document("emulation", {**report, "status": "fine"}, "report.json")
    with pytest.raises(InputError, match=r"field critical_chain: expected a JSON object, found "
                                         r"nothing"):
        check_document("emulation", {**report, "status": "ok"}, "report.json")
    row = {"input": "g", "graph": "g", "file": "g.yaml", "mode": "ge", "nimble_min_events": 0,
           "makespan_bound_us": 1.0,
           "logical_streams": 1, "physical_streams": 1, "events": 0, "notifies": 0,
           "makespan_us": 1.0, "chain_sync_us": 0.0, "critical_path_us": 1.0,
           "work_over_units_us": 1.0,
           "status": "-", "gap": None, "events_bound": None, "reason": "", "wall_s": 0.1}
    valid("compare", {"format": "streamalloc.compare/v1", "rows": [row], "frontier": []})
    with pytest.raises(InputError, match=r"field rows\[0\].mode: expected one of ge, "):
        check_document("compare", {"format": "streamalloc.compare/v1",
                                   "rows": [{**row, "mode": "fast"}], "frontier": []}, "c.json")
    with pytest.raises(InputError, match=r"field rows\[0\].events: expected an integer >= 0"):
        check_document("compare", {"format": "streamalloc.compare/v1",
                                   "rows": [{**row, "events": -1}], "frontier": []}, "c.json")


def _show_document() -> dict[str, Any]:
    from streamalloc.report.graph_report import graph_summary_json
    graph = load_graph(TRAIN_STEP)
    return json.loads(json.dumps(graph_summary_json(graph, api.partitions(graph))))


@pytest.mark.parametrize(("change", "message"), [
    (_set("colour", "red"), "field the graph summary: unknown key 'colour'"),
    (_set("nodes/conv1/stream", 0), "field nodes['conv1']: unknown key 'stream'"),
    (_set("partitions/train_step/subgraphs/0/label", "a"),
     "field partitions['train_step'].subgraphs[0]: unknown key 'label'"),
    (_set("partitions", KeyError), "field partitions: expected a JSON object, found nothing "
                                   "(missing key 'partitions')"),
    (_set("nodes/conv1/engine", KeyError), "field nodes['conv1'].engine: expected a non-empty "
                                           "string, found nothing"),
    (_set("partitions/train_step/subgraphs/0/max_parallel_num", KeyError),
     "field partitions['train_step'].subgraphs[0].max_parallel_num: expected an integer >= 1, "
     "found nothing"),
    (_set("partitions/train_step/subgraphs/0/stream_label", None),
     "field partitions['train_step'].subgraphs[0].stream_label: expected a string, found null"),
    (_set("partitions/train_step/subgraphs/0/max_parallel_num", 0),
     "subgraphs[0].max_parallel_num: expected an integer >= 1, found 0"),
    (_set("partitions/train_step/subgraphs/0/nodes", []),
     "subgraphs[0].nodes: expected a JSON list, found []"),
    (_set("format", "streamalloc.show/v2"), "field format: expected 'streamalloc.show/v1'"),
])
def test_broken_graph_summaries_are_rejected(change: Change, message: str) -> None:
    document = _show_document()
    valid("show", document)
    change(document)
    _rejected("show", document, message, "docs/show-format.md")
