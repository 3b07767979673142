"""Plans record their options and rule set; `verify` checks a plan under them.

A plan made with `--set` verifies with the options it was made with; the rule set a plan names
is found when shipped, given with `--rules` otherwise (its digest must match); a plan that
breaks a rule's constraint form is exit 5 (violation kind `rule`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamalloc.cli import main
from streamalloc.rules import builtin_rules

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "graphs"

CHAIN = "\n".join(["format: streamalloc.graph/v1", "name: chain", "nodes:",
                   "  - {name: d, type: Data}"]
                  + [f"  - {{name: n{i}, type: Relu, inputs: [{'d' if i == 0 else f'n{i-1}'}], "
                     "task_count: 5}" for i in range(300)]) + "\n"

TWO_ENGINES = """format: streamalloc.graph/v1
name: two
options: {ge.hcomParallel: "1"}
nodes:
  - {name: d, type: Data}
  - {name: a, type: Relu, inputs: [d]}
  - {name: h, type: HcomAllReduce, inputs: [a]}
  - {name: b, type: Relu, inputs: [h]}
  - {name: c, type: Relu, inputs: [a]}
  - {name: out, type: NetOutput, inputs: [b, c]}
"""

APART = """format: streamalloc.rules/v1
name: apart
extends: ge-static-multi-stream
rules:
  - {name: apart, kind: separate-streams, priority: 950, match: {type: HcomAllReduce},
     options: {from: {engine: AIcoreEngine}}}
"""


def allocate(tmp_path: Path, graph_text: str, *args: str) -> tuple[Path, Path]:
    graph, plan = tmp_path / "g.yaml", tmp_path / "plan.json"
    graph.write_text(graph_text, encoding="utf-8")
    assert main(["allocate", str(graph), "-o", str(plan), *args]) == 0
    return graph, plan


def test_the_plan_records_options_and_rule_set(tmp_path: Path) -> None:
    _, plan = allocate(tmp_path, TWO_ENGINES, "--set", "ge.streamMaxParallelNum=AIcoreEngine:2")
    document = json.loads(plan.read_text(encoding="utf-8"))
    assert document["options"] == {"ge.hcomParallel": "1",
                                   "ge.streamMaxParallelNum": "AIcoreEngine:2"}
    shipped = builtin_rules("ge-static-multi-stream")
    assert document["rules"] == {"name": shipped.name, "digest": shipped.digest}
    assert document["rules"]["digest"].startswith("sha256:")


def test_a_plan_made_with_set_verifies_under_its_own_options(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph, plan = allocate(tmp_path, CHAIN, "--set", "streamalloc.max_task_per_stream=4096")
    assert json.loads(plan.read_text(encoding="utf-8"))["physical_stream_count"] == 1
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan)]) == 0
    assert "is valid" in capsys.readouterr().out
    assert main(["verify", str(graph), str(plan), "--set",
                 "streamalloc.max_task_per_stream=1024"]) == 4  # --set wins over the plan's
    assert "limit-tasks" in capsys.readouterr().out


def test_a_user_rule_set_must_be_given(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "apart.yaml"
    rules.write_text(APART, encoding="utf-8")
    graph, plan = allocate(tmp_path, TWO_ENGINES, "--rules", str(rules))
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan)]) == 3
    out, err = capsys.readouterr()
    assert not out and "rule set 'apart', which is not shipped" in err
    assert main(["verify", str(graph), str(plan), "--rules", str(rules)]) == 0
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan), "--rules", "ge-static-multi-stream"]) == 3
    assert "give the rule file the plan was made with" in capsys.readouterr().err


def test_a_plan_that_breaks_a_rule_is_exit_5(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "apart.yaml"
    rules.write_text(APART, encoding="utf-8")
    graph, plan = allocate(tmp_path, TWO_ENGINES, "--rules", str(rules))
    document = json.loads(plan.read_text(encoding="utf-8"))
    h = document["nodes"]["h"]["stream"]
    a = document["nodes"]["a"]["stream"]
    assert h != a
    document["nodes"]["h"]["stream"] = a  # the logical allocation now breaks the rule
    plan.write_text(json.dumps(document), encoding="utf-8")
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan), "--rules", str(rules)]) == 5
    out = capsys.readouterr().out
    assert "rule: rule 'apart' (separate-streams, rule set 'apart') does not hold" in out
    assert "h shares stream" in out


def test_a_fallback_under_free_rules_verifies_with_ges_rules(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An optimal plan under --rules free that keeps its ge-mode baseline (no plan within an
    event budget of 0 under full concurrency) was made with GE's rules, which it records:
    verify checks it against them without --rules and with --rules free (what ge mode runs
    for it); another rule set is exit 3, naming the shipped one."""
    graph = EXAMPLES / "train_step.yaml"
    plan = tmp_path / "plan.json"
    assert main(["allocate", str(graph), "--mode", "optimal", "--rules", "free",
                 "--concurrency", "full", "--objective", "makespan", "--event-budget", "0",
                 "--time-limit", "0.3", "-o", str(plan)]) == 0
    document = json.loads(plan.read_text(encoding="utf-8"))
    assert document["solver"]["status"] == "FALLBACK"
    assert document["rules"]["name"] == "ge-static-multi-stream"
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan)]) == 0
    capsys.readouterr()
    assert main(["verify", str(graph), str(plan), "--rules", "free"]) == 0
    assert "rule set 'ge-static-multi-stream'" not in capsys.readouterr().err
    assert main(["verify", str(graph), str(plan), "--rules", "ge-static-single-stream"]) == 3
    assert "'ge-static-multi-stream' is shipped: verify without --rules, or with --rules " \
        "ge-static-multi-stream" in capsys.readouterr().err
