"""What a user meets with their own rules: a rule that decides no node is one warning, two
rules that cannot both hold are exit 3 naming both, and the deciding rule is credited."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from streamalloc.cli import main
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.loaders import load_graph
from streamalloc.rules import load_rules
from streamalloc.rules.conflicts import static_conflicts, user_constraints

GRAPH = str(Path(__file__).resolve().parents[1] / "examples" / "graphs"
            / "transformer_layers.yaml")


def rules_file(tmp_path: Path, body: str, name: str = "policy.yaml") -> str:
    path = tmp_path / name
    path.write_text("format: streamalloc.rules/v1\nname: policy\nextends: "
                    "ge-static-multi-stream\nrules:\n" + textwrap.dedent(body))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("streamalloc: warning: ")]


# --- 1. a user rule that decides no node is a warning ------------------------------------------

def test_a_rule_whose_match_selects_no_node_is_one_warning(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = rules_file(tmp_path, """\
        - name: typo-pin
          kind: pin-stream
          priority: 1150
          match: {name: "^layr0/"}
          options: {stream: 0}
        - name: label-data
          kind: stream-label
          match: {type: Data}
          options: {label: x}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 0
    lines = warnings_of(err)
    assert len(lines) == 2, err
    # compare runs ge mode four times (its Nimble reference, ge, ge-minimal, the optimal
    # mode's baseline): each warning is still said once
    code, _, compared = run(capsys, "compare", GRAPH, "--rules", rules, "--time-limit", "0.5")
    assert code == 0 and sorted(warnings_of(compared)) == sorted(lines), compared
    pin = next(line for line in lines if "'typo-pin'" in line)
    assert f"{rules}:5: rule 'typo-pin' (pin-stream) decides no node: its match selects no " \
        "node of graph 'transformer_layers'" in pin
    # a Data node is no task node: a label on it decides nothing
    label = next(line for line in lines if "'label-data'" in line)
    assert f"{rules}:10:" in label and "its match selects no node" in label


def test_a_rule_placed_over_by_later_passes_is_a_warning(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # at the default priority 0 the policy runs before GE's passes; GE happens to put these
    # nodes on one stream, so the rule holds but decided nothing
    rules = rules_file(tmp_path, """\
        - name: early-same
          kind: same-stream
          match: {name: "^layer0/mlp/"}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 0
    (line,) = warnings_of(err)
    assert f"{rules}:5: rule 'early-same' (same-stream) decides no node: every node it " \
        "matches was placed by rules that run after it (assign-by-dependency)" in line
    assert "above 500 (node-stream-update)" in line


def test_a_rule_with_nothing_to_act_on_is_a_warning(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = rules_file(tmp_path, """\
        - name: held-already
          kind: same-stream
          priority: 950
          match: {name: "^layer1/mlp/"}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 0
    (line,) = warnings_of(err)
    assert "rule 'held-already' (same-stream) decides no node: it had nothing to act on: the " \
        "3 node(s) it matches already satisfy it" in line


def test_rules_that_decide_and_gated_rules_are_silent(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = rules_file(tmp_path, """\
        - name: own
          kind: dedicated-stream
          priority: 950
          match: {type: HcomAllReduce}
        - name: gated
          kind: pin-stream
          priority: 1150
          match: {name: nothing}
          when: {option: ge.hcomParallel, equals: "1"}
          options: {stream: 0}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 0
    assert warnings_of(err) == []
    examples = Path(GRAPH).parents[1] / "rules"
    for policy in sorted(examples.glob("*.yaml")):  # (one built on free is for the optimal
        mode = ["--mode", "optimal", "--time-limit", "0.5"] if load_rules(policy).on_free \
            else []  # mode alone)
        code, _, err = run(capsys, "allocate", GRAPH, "--rules", str(policy), *mode)
        assert code == 0 and warnings_of(err) == [], (policy, err)


# --- 2. two user rules that cannot both hold are exit 3 naming both ----------------------------

CONFLICTS = {
    "same-vs-separate": ("""\
        - name: together
          kind: same-stream
          priority: 950
          match: {name: "^layer0/(mask|grad)$"}
        - name: apart
          kind: separate-streams
          priority: 960
          match: {type: NonZero}
          options: {from: {engine: DNN_HCCL}}
    """, "rules 'together' (same-stream, {f}:5) and 'apart' (separate-streams, {f}:9) cannot "
         "both hold: layer0/mask and layer0/grad must not share a stream, yet must share one"),
    "two-pins": ("""\
        - {name: pin0, kind: pin-stream, priority: 1150, match: {name: "^embed$"},
           options: {stream: 0}}
        - {name: pin1, kind: pin-stream, priority: 1160, match: {type: Gather},
           options: {stream: 1}}
    """, "rules 'pin0' (pin-stream, {f}:5) and 'pin1' (pin-stream, {f}:7) cannot both hold: "
         "embed is pinned to stream 0 and to stream 1"),
    "dedicated-vs-same": ("""\
        - {name: own, kind: dedicated-stream, priority: 950, match: {name: "^layer0/grad$"}}
        - {name: with-mask, kind: same-stream, priority: 960,
           match: {name: "^layer0/(grad|mask)$"}}
    """, "rules 'own' (dedicated-stream, {f}:5) and 'with-mask' (same-stream, {f}:6) cannot "
         "both hold: layer0/grad must have a stream of its own, yet layer0/grad and "
         "layer0/mask must be on one stream"),
    "dedicated-vs-pin": ("""\
        - {name: own, kind: dedicated-stream, priority: 950, match: {type: HcomAllReduce},
           options: {group_by: fusion}}
        - {name: pin, kind: pin-stream, priority: 1150,
           match: {name: "^layer0/(grad|mask)$"}, options: {stream: 0}}
    """, "rules 'own' (dedicated-stream, {f}:5) and 'pin' (pin-stream, {f}:7) cannot both "
         "hold: layer0/grad must have a stream shared only with layer1/grad, yet layer0/grad "
         "and layer0/mask must be pinned to stream 0"),
    "separate-vs-pin": ("""\
        - name: apart
          kind: separate-streams
          priority: 950
          match: {type: NonZero}
          options: {from: {type: Gelu}}
        - {name: pin, kind: pin-stream, priority: 1150,
           match: {name: "^layer0/(mask|mlp/act)$"}, options: {stream: 0}}
    """, "rules 'apart' (separate-streams, {f}:5) and 'pin' (pin-stream, {f}:10) cannot both "
         "hold: layer0/mask and layer0/mlp/act must not share a stream, yet both are pinned "
         "to stream 0"),
}


@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_static_conflicts_are_exit_3_naming_both_rules(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    body, expected = CONFLICTS[case]
    rules = rules_file(tmp_path, body)
    code, out, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 3
    assert out == ""
    assert expected.format(f=rules) in err, err
    # explain and the optimal mode meet the same check
    code, _, err = run(capsys, "explain", GRAPH, "embed", "--rules", rules)
    assert code == 3 and "cannot both hold" in err


def test_the_static_check_is_pairwise_and_silent_on_compatible_rules(tmp_path: Path) -> None:
    graph = load_graph(GRAPH)
    compatible = rules_file(tmp_path, """\
        - {name: own, kind: dedicated-stream, priority: 950, match: {type: HcomAllReduce},
           options: {group_by: fusion}}
        - {name: same, kind: same-stream, priority: 960, match: {type: HcomAllReduce}}
        - {name: apart, kind: separate-streams, priority: 970, match: {type: NonZero},
           options: {from: {type: Gelu}}}
        - {name: pin, kind: pin-stream, priority: 1150, match: {type: Gelu},
           options: {stream: 0}}
    """)
    assert static_conflicts(user_constraints(load_rules(compatible), graph)) == []


def test_a_later_user_rule_breaking_an_earlier_one_names_both(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the forms alone do not show it (a pin on one node of a same-stream group); the
    # heuristic's own check finds that the pin moved the node after same-stream joined them
    rules = rules_file(tmp_path, """\
        - name: masks-together
          kind: same-stream
          priority: 950
          match: {type: NonZero}
        - name: pin-mask
          kind: pin-stream
          priority: 1150
          match: {name: "^layer0/mask$"}
          options: {stream: 0}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 3
    assert f"rules 'masks-together' (same-stream, {rules}:5) and 'pin-mask' (pin-stream, " \
        f"{rules}:9) cannot both hold: nodes must share a stream" in err
    assert "'pin-mask' runs after 'masks-together' and placed layer0/mask" in err


def test_a_policy_undone_by_a_ge_pass_still_names_the_pass(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = rules_file(tmp_path, """\
        - name: together
          kind: same-stream
          match: {name: "^layer0/(mask|grad)$"}
    """)
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules)
    assert code == 3
    assert f"{rules}:5: rule 'together' (same-stream) does not hold" in err
    assert "rule 'node-stream-update' (GE's NodeStreamUpdatePass) runs after it" in err
    assert "a priority above 500" in err


# --- 3. explain credits the rule that decided ----------------------------------------------------

CREDITS = {
    # a model rule at priority 0 still runs after every graph rule
    "pin-stream": ("""\
        - name: pin-attn
          kind: pin-stream
          match: {name: "^layer0/attn/"}
          options: {stream: 0}
    """, "layer0/attn/q", "pin-attn"),
    "same-stream": ("""\
        - name: grads-together
          kind: same-stream
          priority: 950
          match: {name: "^layer0/(mask|grad)$"}
    """, "layer0/grad", "grads-together"),
    "dedicated-stream": ("""\
        - name: allreduce-dedicated
          kind: dedicated-stream
          priority: 950
          match: {type: HcomAllReduce}
    """, "layer0/grad", "allreduce-dedicated"),
}


@pytest.mark.parametrize("kind", sorted(CREDITS))
def test_the_deciding_user_rule_is_credited(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str) -> None:
    body, node, rule = CREDITS[kind]
    rules = rules_file(tmp_path, body)
    plan_file = tmp_path / "plan.json"
    code, _, err = run(capsys, "allocate", GRAPH, "--rules", rules, "-o", str(plan_file))
    assert code == 0 and warnings_of(err) == [], err
    nodes = json.loads(plan_file.read_text())["nodes"]
    assert nodes[node]["rule"] == rule
    code, out, _ = run(capsys, "explain", GRAPH, node, "--rules", rules)
    assert code == 0
    head, _, table = out.partition("\n")
    assert head.endswith(f"decided by {rule}")
    # the table lists the notes in the order the rules ran: the deciding rule after GE's
    # passes that placed the node first (compaction may rename the id after it)
    rows = [line.split()[0] for line in table.splitlines()[3:] if line.strip()]
    assert rows.index(rule) > rows.index("node-stream-update")


def test_ge_rules_credit_as_before() -> None:
    allocation = allocate_ge(load_graph(GRAPH))
    assert allocation.nodes["layer0/attn/q"].rule == "assign-by-dependency"
    assert allocation.nodes["layer0/mask"].rule == "optimize-ineffective"
    assert allocation.nodes["layer0/grad"].rule == "independent-stream"


# --- 4. the default priority is documented ------------------------------------------------------

def test_docs_explain_the_default_priority() -> None:
    root = Path(__file__).resolve().parents[1]
    for doc in (root / "docs" / "rules.md", root / "README.md"):
        text = doc.read_text()
        assert "priority 0" in text and "node-stream-update" in text
        assert "does not hold" in text and "decides no node" in text, doc


def test_a_user_label_rule_that_splits_a_user_label_group_names_both_rules(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Found by a fuzz run with the shipped attention_stream.yaml: its stream label on
    layer1/attn38 labels the subgraph that the user label 'U' merged it into with n39, so n39
    leaves the other node of 'U' (GE's user-stream-label). The message once blamed
    node-stream-update and told the user to reorder a built-in rule; it names the user's rule
    and the node it changed instead."""
    graph = tmp_path / "labels.yaml"
    graph.write_text(
        "format: streamalloc.graph/v1\nname: g\nnodes:\n"
        "  - {name: n27, type: ConvBnBiasHost, attrs: {_user_stream_label: U}}\n"
        "  - {name: layer1/attn38, type: ResizeV2, attrs: {_user_stream_label: U}}\n"
        "  - {name: n39, type: MatMul, inputs: [layer1/attn38], attrs: {_user_stream_label: U}}\n",
        encoding="utf-8")
    policy = Path(__file__).parents[1] / "examples" / "rules" / "attention_stream.yaml"
    code, out, err = run(capsys, "allocate", str(graph), "--rules", str(policy))
    assert code == 3 and out == ""
    assert "rules 'user-stream-label' (user-stream-label, <builtin ge-static-multi-stream>:" in err
    assert f"'attention-label' (stream-label, {policy}:8) cannot both hold" in err
    assert "changed layer1/attn38 (stream label 'attn', user label 'U'), which GE's partition " \
        "put with n39 in subgraph g/sg1" in err
    assert "Order" not in err


def test_compaction_is_never_the_pass_that_undid_a_rule(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Found by a fuzz run: LoadBalance's mini-DAG pass puts the AllReduce back with its
    consumer after the shipped allreduce_own_stream.yaml gave it a stream of its own; the
    message named compaction, which only renumbered the stream after it."""
    graph = tmp_path / "load_balance.yaml"
    graph.write_text(
        "format: streamalloc.graph/v1\nname: g\n"
        "options: {ge.autoMultistreamParallelMode: 'LoadBalance:3'}\nnodes:\n"
        "  - {name: n2, type: HcomAllReduce, task_count: 2}\n"
        "  - {name: n7, type: TransData, inputs: [n2], task_count: 5}\n", encoding="utf-8")
    policy = Path(__file__).parents[1] / "examples" / "rules" / "allreduce_own_stream.yaml"
    code, _, err = run(capsys, "allocate", str(graph), "--rules", str(policy))
    assert code == 3
    assert "rule 'allreduce-dedicated' (dedicated-stream) does not hold" in err
    assert "rule 'mini-dag' (GE's MiniDAGStreamPass) runs after it and placed n2" in err
    assert "compact" not in err
