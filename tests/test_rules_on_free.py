"""Rule files built on `free`: their rules alone bind the optimal mode, and ge mode (the
optimal mode's baseline, compare's ge rows) runs them over GE's default rule set, exactly as
the same file built on GE's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamalloc.cli import main
from streamalloc.commands.compare import CompareSettings, compare
from streamalloc.errors import RuleSchemaError
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.rules import builtin_rules, default_rule_set, ge_rules_for, load_rules
from streamalloc.rules.check import Placement, broken
from streamalloc.rules.constraints import rule_constraints
from streamalloc.verify import verify_plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GRAPH = EXAMPLES / "graphs" / "parallel_groups.yaml"
ON_FREE = EXAMPLES / "rules" / "aicpu_apart_optimal_only.yaml"
ON_GE = EXAMPLES / "rules" / "aicpu_apart_from_aicore.yaml"


def on_ge_twin(tmp_path: Path, source: Path) -> Path:
    """The same file built on GE's rules."""
    twin = tmp_path / "twin.yaml"
    twin.write_text(source.read_text(encoding="utf-8").replace("extends: free",
                                                               "extends: ge-static-multi-stream"),
                    encoding="utf-8")
    return twin


def test_a_file_built_on_free_runs_over_ges_rules_in_ge_mode(tmp_path: Path) -> None:
    graph = load_graph(GRAPH)
    rules = load_rules(ON_FREE)
    assert rules.on_free and rules.binds_optimal_only
    assert [r.name for r in rules.rules] == ["aicpu-apart"]
    composed = ge_rules_for(rules, graph)
    assert not composed.on_free
    assert composed.digest == load_rules(on_ge_twin(tmp_path, ON_FREE)).digest
    assert composed.digest != rules.digest
    # a file extending the file is built on free too
    child = tmp_path / "child.yaml"
    child.write_text(f"format: streamalloc.rules/v1\nname: child\nextends: {ON_FREE}\n"
                     "rules:\n  - {name: pin, kind: pin-stream, match: {name: '^e$'}, "
                     "options: {stream: 0}}\n", encoding="utf-8")
    assert load_rules(child).on_free
    # `free` itself runs GE's default; the shipped sets are not built on it
    assert ge_rules_for(builtin_rules("free"), graph) == default_rule_set(graph)
    assert not builtin_rules("free").on_free and builtin_rules("free").binds_optimal_only
    assert ge_rules_for(rules_ge := default_rule_set(graph), graph) is rules_ge


def test_a_file_built_on_free_orders_its_rules_against_its_own_alone(tmp_path: Path) -> None:
    path = tmp_path / "after.yaml"
    path.write_text("format: streamalloc.rules/v1\nname: x\nextends: free\nrules:\n"
                    "  - {name: p, kind: pin-stream, match: {type: Relu}, options: {stream: 0},\n"
                    "     after: [node-stream-update]}\n", encoding="utf-8")
    with pytest.raises(RuleSchemaError) as error:
        load_rules(path)
    assert "orders itself against unknown rule 'node-stream-update'; known: p (a file built " \
        "on 'free' inherits none of GE's rules" in str(error.value)


def test_a_file_named_free_with_rules_of_its_own_is_not_free(tmp_path: Path) -> None:
    """Only a set without rules, built on nothing, is `free`: a file that takes the name but
    extends GE's keeps its rules in ge mode and in the baseline."""
    graph = load_graph(GRAPH)
    named = tmp_path / "named.yaml"
    named.write_text(ON_GE.read_text(encoding="utf-8").replace(
        "name: aicpu-apart-from-aicore", "name: free"), encoding="utf-8")
    rules = load_rules(named)
    assert rules.name == "free" and not rules.is_free and not rules.binds_optimal_only
    assert ge_rules_for(rules, graph) is rules
    assert builtin_rules("free").is_free and not load_rules(ON_FREE).is_free


def test_the_optimal_mode_keeps_the_files_rules_alone() -> None:
    """Events: 2 under the file's rule alone, 4 with it over GE's (whose parallel groups stay
    apart), 0 without rules; the plan holds the rule and records the file's rule set."""
    graph = load_graph(GRAPH)
    options = OptimalOptions(time_limit=2.0)
    events = {}
    for name, rules in (("on_free", load_rules(ON_FREE)), ("on_ge", load_rules(ON_GE)),
                        ("free", builtin_rules("free"))):
        plan, report = allocate_optimal(graph, rules, options)
        document = plan.to_json()
        assert verify_plan(graph, document, rules=rules).exit_code == 0
        assert document["rules"] == {"name": rules.name, "digest": rules.digest}
        assert report.status == "OPTIMAL"
        events[name] = plan.event_count + plan.notify_count
        if name == "on_free":
            streams = {n: e["stream"] for n, e in document["nodes"].items()}
            assert streams["mask"] not in {streams[n] for n in "abce"}
            assert len({streams[n] for n in "abce"}) == 1  # GE's groups apart no more
            own = rule_constraints(rules, graph)
            assert own and not broken(own, graph, Placement(streams, {}))
    assert events == {"on_free": 2, "on_ge": 4, "free": 0}


def test_compare_runs_ge_rows_over_ges_rules_and_the_optimal_row_under_the_file(
        tmp_path: Path) -> None:
    settings = CompareSettings(("ge", "ge-minimal", "optimal"), load_rules(ON_FREE), {},
                               OptimalOptions(time_limit=2.0))
    twin = CompareSettings(("ge", "ge-minimal", "optimal"),
                           load_rules(on_ge_twin(tmp_path, ON_FREE)), {},
                           OptimalOptions(time_limit=2.0))
    figures = ("logical_streams", "events", "makespan_us")
    rows = compare([str(GRAPH)], settings)["rows"]
    twin_rows = compare([str(GRAPH)], twin)["rows"]
    assert [[r[f] for f in figures] for r in rows[:2]] == \
        [[r[f] for f in figures] for r in twin_rows[:2]] == [[4, 4, 46.0]] * 2
    assert [rows[2]["events"], twin_rows[2]["events"]] == [2, 4]


def test_rules_check_says_a_file_is_built_on_free(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "check", str(ON_FREE)]) == 0
    assert "(static flow; built on 'free': its rules alone bind --mode optimal" \
        in capsys.readouterr().out


def test_ge_mode_refuses_a_file_built_on_free(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", str(GRAPH), "--rules", str(ON_FREE)]) == 3
    error = capsys.readouterr().err
    assert "rule set 'aicpu-apart-optimal-only' is built on 'free'" in error
    assert "`extends: ge-static-multi-stream`" in error


def test_a_kept_baseline_verifies_against_what_ge_mode_ran_for_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No plan within an event budget of 0 under full concurrency: the baseline is kept; it
    records the composed set by the file's name, which the file given to verify finds."""
    plan = tmp_path / "plan.json"
    assert main(["allocate", str(GRAPH), "--mode", "optimal", "--rules", str(ON_FREE),
                 "--concurrency", "full", "--objective", "makespan", "--event-budget", "0",
                 "--time-limit", "0.3", "-o", str(plan)]) == 0
    document = json.loads(plan.read_text(encoding="utf-8"))
    assert document["solver"]["status"] == "FALLBACK"
    assert document["rules"] == {"name": "aicpu-apart-optimal-only",
                                 "digest": ge_rules_for(load_rules(ON_FREE),
                                                        load_graph(GRAPH)).digest}
    capsys.readouterr()
    assert main(["verify", str(GRAPH), str(plan), "--rules", str(ON_FREE)]) == 0
    capsys.readouterr()
    assert main(["verify", str(GRAPH), str(plan)]) == 3
    assert "which is not shipped; give its file with --rules FILE" in capsys.readouterr().err
    assert main(["verify", str(GRAPH), str(plan), "--rules", "free"]) == 3
    assert "give the rule file the plan was made with" in capsys.readouterr().err



def test_a_rule_ges_passes_undo_in_the_baseline_is_placed_by_priority_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At priority 0 a same-stream rule runs before GE's passes, which undo it in the
    baseline: the error names the pass, asks for a priority (a file built on free cannot name
    GE's rules in after:) and says the baseline runs the file over GE's rules."""
    policy = tmp_path / "together.yaml"
    policy.write_text("format: streamalloc.rules/v1\nname: together\nextends: free\nrules:\n"
                      "  - {name: together, kind: same-stream, "
                      "match: {name: '^layer0/(mask|grad)$'}}\n", encoding="utf-8")
    graph = EXAMPLES / "graphs" / "transformer_layers.yaml"
    assert main(["allocate", str(graph), "--mode", "optimal", "--rules", str(policy)]) == 3
    error = capsys.readouterr().err
    assert "rule 'node-stream-update' (GE's NodeStreamUpdatePass) runs after it and placed " \
        "layer0/grad. Order 'together' after it (a priority above 500) or disable it (rule " \
        "set 'together' is built on 'free': this is ge mode running it over GE's default " \
        "rules, the optimal mode's baseline)" in error


def test_a_rule_against_one_of_ges_in_the_baseline_asks_to_change_the_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "ab.yaml"
    policy.write_text("format: streamalloc.rules/v1\nname: ab\nextends: free\nrules:\n"
                      "  - {name: ab, kind: same-stream, priority: 950, "
                      "match: {name: '^(a|b)$'}}\n", encoding="utf-8")
    assert main(["allocate", str(GRAPH), "--mode", "optimal", "--rules", str(policy)]) == 3
    error = capsys.readouterr().err
    assert "rules 'parallel-group' (parallel-group, <builtin ge-static-multi-stream>:" in error
    assert "cannot both hold: a and b are in different groups but share stream" in error
    assert "Change the match of 'ab' (rule set 'ab' is built on 'free'" in error


@pytest.mark.filterwarnings("ignore::streamalloc.errors.InputWarning")  # 'ab' holds already
def test_a_file_built_on_free_disables_ges_rules_for_its_baseline(tmp_path: Path) -> None:
    """`disable:` of one of GE's rules in a file built on free: ge mode (the baseline)
    runs without it, as the twin file built on GE's that disables it; an unknown name is
    exit 3, listing GE's rules."""
    text = ("format: streamalloc.rules/v1\nname: ab\nextends: free\nrules:\n"
            "  - {name: ab, kind: same-stream, priority: 950, match: {name: '^(a|b)$'}}\n"
            "  - {name: parallel-group, disable: true}\n")
    policy = tmp_path / "ab.yaml"
    policy.write_text(text, encoding="utf-8")
    rules = load_rules(policy)
    assert rules.disabled == ("parallel-group",) and [r.name for r in rules.rules] == ["ab"]
    graph = load_graph(GRAPH)
    twin = tmp_path / "twin.yaml"
    twin.write_text(text.replace("extends: free", "extends: ge-static-multi-stream"),
                    encoding="utf-8")
    assert ge_rules_for(rules, graph).digest == load_rules(twin).digest
    rows = compare([str(GRAPH)], CompareSettings(("ge", "optimal"), rules, {},
                                                 OptimalOptions(time_limit=1.0)))["rows"]
    assert [(r["logical_streams"], r["events"]) for r in rows] == [(1, 0), (1, 0)]
    policy.write_text(text.replace("parallel-group, disable", "paralel-group, disable"),
                      encoding="utf-8")
    with pytest.raises(RuleSchemaError) as error:
        load_rules(policy)
    assert "rule 'paralel-group' is disabled but neither an inherited rule nor one of GE's " \
        "has that name; inherited: none; GE's: " in str(error.value)
    assert "parallel-group" in str(error.value).split("GE's: ")[1]


@pytest.mark.parametrize(("base", "mode"), [("ge-static-multi-stream", "ge"),
                                            ("free", "optimal")])
def test_a_rule_set_that_leaves_a_subgraph_without_a_stream_is_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], base: str, mode: str) -> None:
    """Disabling assign-by-dependency leaves the unlabelled subgraphs without a stream: GE's
    NodeStreamUpdatePass fails there, and the rule file is what to change (exit 3, not an
    internal error)."""
    policy = tmp_path / "noassign.yaml"
    policy.write_text(f"format: streamalloc.rules/v1\nname: noassign\nextends: {base}\nrules:\n"
                      "  - {name: assign-by-dependency, disable: true}\n", encoding="utf-8")
    assert main(["allocate", str(GRAPH), "--mode", mode, "--rules", str(policy)]) == 3
    assert "subgraph parallel_groups/sg0 (AIcoreEngine) has not been assigned a stream: no " \
        "enabled rule of the rule set gave it one" in capsys.readouterr().err
