"""The pass protocol and its instruments: every heuristic pass and sync stage is immutable
(a frozen dataclass, or a stage without options and without instance attributes), with a name
and one `apply` returning a `PassResult`; `allocate --print-after`,
`--dump-dir` and `rules list` show the passes and the plan text after them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from streamalloc.api import load_graph, plan, synchronize
from streamalloc.cli import main
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.heuristic.plan import GraphPlan, ModelPlan
from streamalloc.heuristic.registry import GRAPH_PASSES, LABEL_PASSES, MODEL_PASSES
from streamalloc.passes import Pass, PassPrinter, PassRecord
from streamalloc.rules import builtin_names, builtin_rules, load_rules
from streamalloc.rules.kinds import KINDS
from streamalloc.sync.driver import SYNC_STAGE_NAMES, sync_stages
from streamalloc.sync.state import SyncState

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml"

# One rule of every kind, with the required options (a rule file that stands alone).
ALL_KINDS = """\
format: streamalloc.rules/v1
name: every-kind
rules:
""" + "".join(
    f"  - {{name: r-{kind}, kind: {kind}, priority: {i}{extra}}}\n"
    for i, kind in enumerate(KINDS)
    for extra in [{"stream-label": ", options: {label: x, user: true}",
                   "separate-streams": ", options: {from: {type: Relu}}",
                   "pin-stream": ", options: {stream: 2}",
                   "same-stream": ", options: {group_by: g}",
                   "assign-by-dependency": ", options: {memory_priority: true}"}.get(kind, "")])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """main(argv) in-process: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def headers(text: str) -> list[str]:
    """The `// after ...` lines of a --print-after output, in order."""
    return [line for line in text.splitlines() if line.startswith("// after ")]


def expected_order() -> list[str]:
    """The pass names of the example in run order: label rules, the graph rules per graph
    (root, then R-order), model rules, then the sync stages."""
    graph = load_graph(EXAMPLE)
    rules = [r for r in builtin_rules("ge-static-multi-stream").rules
             if r.enabled(graph.options)]
    per_graph = [r.name for r in rules if r.spec.scope == "graph"]
    return ([r.name for r in rules if r.spec.scope == "label"]
            + per_graph * (1 + len(graph.r_order()))
            + [r.name for r in rules if r.spec.scope == "model"] + list(SYNC_STAGE_NAMES))


# --- the protocol --------------------------------------------------------------------------

def is_frozen_dataclass(obj: object) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return dataclasses.is_dataclass(obj) and params is not None and params.frozen


def test_every_registry_entry_follows_the_protocol(tmp_path: Path) -> None:
    path = tmp_path / "kinds.yaml"
    path.write_text(ALL_KINDS, encoding="utf-8")
    rules = load_rules(path)
    assert {r.kind for r in rules.rules} == set(KINDS)
    tables = (LABEL_PASSES, GRAPH_PASSES, MODEL_PASSES)
    assert sum(len(t) for t in tables) == len(KINDS)
    for rule in rules.rules:
        (table,) = [t for t in tables if rule.kind in t]
        made = table[rule.kind](rule)
        assert isinstance(made, Pass), rule.kind
        assert is_frozen_dataclass(made), rule.kind
        assert made.name == rule.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.rule = rule  # type: ignore[misc]


def test_typed_options_are_read_from_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "kinds.yaml"
    path.write_text(ALL_KINDS, encoding="utf-8")
    rules = load_rules(path)
    made = {r.kind: {**LABEL_PASSES, **GRAPH_PASSES, **MODEL_PASSES}[r.kind](r)
            for r in rules.rules}
    assert made["assign-by-dependency"].memory_priority is True  # type: ignore[attr-defined]
    assert made["same-stream"].group_by == "g"  # type: ignore[attr-defined]
    assert made["dedicated-stream"].group_by is None  # type: ignore[attr-defined]
    assert made["pin-stream"].stream == 2  # type: ignore[attr-defined]
    auto = builtin_rules("ge-static-multi-stream").rule("assign-by-dependency")
    assert GRAPH_PASSES["assign-by-dependency"](auto).memory_priority is None  # type: ignore


def test_every_sync_stage_follows_the_protocol() -> None:
    for strategy in ("ge", "minimal"):
        stages = sync_stages(strategy)
        assert tuple(s.name for s in stages) == SYNC_STAGE_NAMES
        for stage in stages:
            assert isinstance(stage, Pass), stage.name
            assert is_frozen_dataclass(stage) or not hasattr(stage, "__dict__"), stage.name
            with pytest.raises(AttributeError):
                stage.name = "renamed"  # type: ignore[misc]
    assert len(set(SYNC_STAGE_NAMES)) == len(SYNC_STAGE_NAMES)
    assert SYNC_STAGE_NAMES[:3] == ("activate", "insert", "eliminate")
    assert SYNC_STAGE_NAMES[-2:] == ("split", "limits")


class Recorder:
    """An observer that keeps every record."""

    def __init__(self) -> None:
        self.records: list[PassRecord] = []

    def after_pass(self, record: PassRecord) -> None:
        self.records.append(record)


def test_drivers_report_every_pass_with_its_new_plan() -> None:
    graph = load_graph(EXAMPLE)
    seen = Recorder()
    allocation = allocate_ge(graph, observer=seen)
    result = synchronize(graph, allocation, observer=seen)
    assert [r.name for r in seen.records] == expected_order()
    for record in seen.records:
        assert isinstance(record.changed, bool)
        scope = "sync" if record.name in SYNC_STAGE_NAMES else \
            builtin_rules("ge-static-multi-stream").rule(record.name).spec.scope
        kind = {"graph": GraphPlan, "model": ModelPlan, "sync": SyncState}.get(scope, object)
        assert isinstance(record.plan, kind), record.name
        assert (record.graph != "") == (scope == "graph")
    # an instrument observes; it changes nothing
    assert result.to_json() == plan(graph).to_json()
    by_name = {r.name: r for r in seen.records}
    assert not by_name["mini-dag"].changed and not by_name["limits"].changed
    assert by_name["insert"].changed and by_name["split"].changed


def test_intermediate_sync_states_stay_as_they_were() -> None:
    """A stage works on copies: an earlier state's text does not change later."""
    graph = load_graph(EXAMPLE)
    seen = Recorder()
    synchronize(graph, allocate_ge(graph), observer=seen)
    texts = [r.text() for r in seen.records]
    assert [r.text() for r in seen.records] == texts
    insert = next(r for r in seen.records if r.name == "insert")
    assert "sync-tasks" not in insert.text() and "_Send_" not in insert.text()


# --- --print-after -------------------------------------------------------------------------

def test_print_after_a_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "allocate", str(EXAMPLE), "--print-after",
                         "assign-by-dependency")
    assert code == 0 and "stream" in out  # the usual tables still go to stdout
    graph = load_graph(EXAMPLE)
    assert headers(err) == [f"// after assign-by-dependency (changed) on graph {g}"
                            for g in [graph.root.name, *graph.r_order()]]
    lines = err.splitlines()
    assert lines[1].startswith("// streamalloc allocation v1: graph train_step, mode ge")
    assert f"// subgraph streams of graph {graph.root.name}" in lines


def test_print_after_a_sync_stage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "plan.json"
    code, _, err = run(capsys, "allocate", str(EXAMPLE), "--print-after", "split",
                       "-o", str(out_file))
    assert code == 0
    assert headers(err) == ["// after split (changed)"]
    lines = err.splitlines()
    assert lines[1] == "// streamalloc sync state v1: graph train_step"
    document = json.loads(out_file.read_text())
    # the streams of the text are the plan's streams with their task order
    for stream, tasks in document["streams"].items():
        assert " ".join([f"stream {stream}:", *tasks]) in lines
    assert f"event_count {document['event_count']}" in lines


def test_print_after_all(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "allocate", str(EXAMPLE), "--print-after", "all")
    assert code == 0
    names = [h.removeprefix("// after ").split(" (")[0] for h in headers(err)]
    assert names == expected_order()
    assert all(h.split(" (")[1].startswith(("changed)", "unchanged)")) for h in headers(err))


def test_print_after_an_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    dump = tmp_path / "dumps"
    code, out, err = run(capsys, "allocate", str(EXAMPLE), "--print-after", "nope",
                         "--dump-dir", str(dump))
    assert code == 2 and out == ""
    assert "'nope'" in err and "valid: all, cmo-label," in err
    assert "assign-by-dependency" in err and "sync-tasks" in err
    assert not dump.exists()  # nothing ran


def test_preset_mode_runs_only_the_sync_stages(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "allocate", str(EXAMPLE), "--mode", "preset", "--print-after",
                       "assign-by-label")
    assert code == 2 and "valid: all, activate, insert" in err
    code, _, err = run(capsys, "allocate", str(EXAMPLE), "--mode", "preset", "--print-after",
                       "all")
    assert code == 0
    assert [h.split(" (")[0].removeprefix("// after ") for h in headers(err)] == list(
        SYNC_STAGE_NAMES)


# --- --dump-dir ----------------------------------------------------------------------------

def test_dump_dir_writes_one_file_per_pass(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    dump = tmp_path / "dumps"
    code, _, err = run(capsys, "allocate", str(EXAMPLE), "--dump-dir", str(dump))
    assert code == 0 and err == ""  # no --print-after: nothing on stderr
    order = expected_order()
    files = sorted(dump.iterdir(), key=lambda p: int(p.name.split("-")[0]))
    assert [p.name for p in files] == [f"{i:02d}-{name}.txt" for i, name in
                                       enumerate(order, start=1)]
    _, _, printed = run(capsys, "allocate", str(EXAMPLE), "--print-after", "all")
    chunks = ["// after " + c for c in printed.split("// after ")[1:]]
    assert [p.read_text(encoding="utf-8") for p in files] == chunks
    assert files[-1].read_text().startswith("// after limits (unchanged)\n"
                                            "// streamalloc sync state v1")


def test_dump_dir_replaces_earlier_dumps_only(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    dump = tmp_path / "dumps"
    dump.mkdir()
    (dump / "99-stale.txt").write_text("old")
    (dump / "notes.txt").write_text("mine")
    assert run(capsys, "allocate", str(EXAMPLE), "--dump-dir", str(dump),
               "--print-after", "compact")[0] == 0
    names = {p.name for p in dump.iterdir()}
    assert "99-stale.txt" not in names and "notes.txt" in names
    assert len(names) == len(expected_order()) + 1


def test_printer_selects_by_name(tmp_path: Path) -> None:
    import io
    stream = io.StringIO()
    printer = PassPrinter({"b"}, stream)
    for name, changed in (("a", True), ("b", False)):
        printer.after_pass(PassRecord(name, "", changed, None, lambda: "text\n"))
    assert stream.getvalue() == "// after b (unchanged)\ntext\n" and printer.count == 2


# --- rules list ----------------------------------------------------------------------------

def test_rules_list_without_argument_lists_the_shipped_sets(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == builtin_names()
    static = builtin_rules("ge-static-multi-stream")
    assert f"static flow, {len(static.rules)} rules" in out


def test_rules_list_shows_the_passes_in_run_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "list", "ge-static-multi-stream")
    assert code == 0
    lines = out.splitlines()
    rules = builtin_rules("ge-static-multi-stream").rules
    rule_lines = lines[1:1 + len(rules)]
    assert [line.split()[:3] for line in rule_lines] == [
        [str(r.priority), r.name, f"[{r.kind},"] for r in rules]
    assert lines[1 + len(rules)] == "sync stages:"
    assert [line.strip() for line in lines[2 + len(rules):]] == list(SYNC_STAGE_NAMES)


def test_rules_list_of_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("format: streamalloc.rules/v1\nname: mine\nextends: ge-static-multi-stream\n"
                    "rules:\n  - {name: late-same, kind: same-stream, priority: 950, "
                    "match: {type: Relu}}\n", encoding="utf-8")
    code, out, _ = run(capsys, "rules", "list", str(path))
    assert code == 0 and "rule set 'mine'" in out
    assert "     950  late-same  [same-stream, graph]" in out.splitlines()
    assert run(capsys, "rules", "list", str(tmp_path / "missing.yaml"))[0] == 3
