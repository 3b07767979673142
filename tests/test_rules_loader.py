"""Rule files (formats.md 2, 4, 5): the loader, its errors, ordering, `extends:`, `when:` gating,
and the commands `rules check`, `schema rules`, `allocate --rules/--set` and `explain`."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from textwrap import dedent

import jsonschema
import pytest
import yaml

from streamalloc.allocation import Allocation
from streamalloc.cli import main
from streamalloc.errors import RuleSchemaError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.loaders import load_graph
from streamalloc.rules import builtin_names, builtin_rules, load_rules
from streamalloc.rules.kinds import KINDS

HEAD = "format: streamalloc.rules/v1\n"
ALL_KINDS = ", ".join(sorted(KINDS))
SHIPPED = ("ge-dynamic-shape", "ge-static-multi-stream", "ge-static-single-stream")
ORDER = {
    "ge-static-multi-stream": (
        "static", ["cmo-label", "user-stream-label", "mde-group", "assign-by-label",
                   "independent-stream", "assign-by-dependency", "node-stream-update",
                   "parallel-group", "allreduce-parallel", "skipped-engine",
                   "optimize-ineffective", "mini-dag", "compact", "attached-streams"]),
    "ge-static-single-stream": (
        "static", ["cmo-label", "user-stream-label", "single-stream", "node-stream-update",
                   "skipped-engine", "compact", "attached-streams"]),
    "ge-dynamic-shape": (
        "dynamic", ["cmo-label", "user-stream-label", "dynamic-engine-streams",
                    "dynamic-renumber", "mini-dag", "attached-streams"]),
}

# Example 7.7: with ge.hcomParallel = 1 (set in the file) g 1, ar 0, u 2, out 2; without it the
# AllReduce folds onto the AI Core stream and everything is on 0.
GRAPH = """\
format: streamalloc.graph/v1
name: ar
options: {ge.hcomParallel: "1"}
nodes:
  - {name: d, type: Data}
  - {name: g, type: Relu, inputs: [d]}
  - {name: ar, type: HcomAllReduce, inputs: [g], attrs: {fusion: 1}}
  - {name: u, type: Relu, inputs: [ar]}
  - {name: out, type: NetOutput, inputs: [u]}
"""
HCOM = {"d": -1, "g": 1, "ar": 0, "u": 2, "out": 2}
FOLDED = {"d": -1, "g": 0, "ar": 0, "u": 0, "out": 0}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    head = HEAD if text.startswith(HEAD) else ""
    path.write_text(head + dedent(text[len(head):]), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def streams(allocation: Allocation) -> dict[str, int]:
    return {n: s.stream for n, s in allocation.nodes.items()}


# --- shipped rule sets --------------------------------------------------------------------------

def test_shipped_names() -> None:
    assert tuple(builtin_names()) == ("free", *SHIPPED)  # free: no rules, for optimal mode
    assert builtin_rules("free").rules == ()


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_rule_order(name: str) -> None:
    """The pass chains of spec 2.0 / 4 in GE's order, then the model-wide steps."""
    flow, order = ORDER[name]
    rules = builtin_rules(name)
    assert (rules.name, rules.flow, [r.name for r in rules.rules]) == (name, flow, order)
    assert [r.kind for r in rules.rules] == order  # every shipped rule is named after its kind


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_file_loads_the_same_from_a_path(name: str, tmp_path: Path) -> None:
    text = resources.files("streamalloc.rules").joinpath("builtin", f"{name}.yaml").read_text()
    loaded = load_rules(write(tmp_path, f"{name}.yaml", text))
    assert [(r.name, r.priority, r.kind) for r in loaded.rules] == \
        [(r.name, r.priority, r.kind) for r in builtin_rules(name).rules]


def test_unknown_shipped_set() -> None:
    with pytest.raises(RuleSchemaError, match="unknown rule set 'nope'; shipped: "
                       + ", ".join(("free", *SHIPPED))):
        builtin_rules("nope")


@pytest.mark.parametrize("name", SHIPPED)
def test_rules_check_shipped(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run(capsys, "rules", "check", name)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"{name}: ok, rule set {name!r} ({ORDER[name][0]} flow), "
                               f"{len(ORDER[name][1])} rules in order:")
    assert [line.split()[1] for line in lines[1:]] == ORDER[name][1]


def test_rules_check_marks_gated_rules(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "rules", "check", "ge-static-multi-stream")
    gated = [line.split()[1] for line in out.splitlines()[1:] if "(gated)" in line]
    assert gated == ["allreduce-parallel"]


def test_schema_rules_validates_shipped_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema", "rules")
    assert code == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for name in SHIPPED:
        text = resources.files("streamalloc.rules").joinpath("builtin", f"{name}.yaml")
        document = yaml.safe_load(text.read_text())
        assert list(validator.iter_errors(document)) == [], name
    bad = {"format": "streamalloc.rules/v1", "rules": [{"name": "a", "kind": "nope"}]}
    assert not validator.is_valid(bad)
    assert not validator.is_valid({"format": "streamalloc.rules/v1", "rules": [], "x": 1})


# --- errors: exit 3, file:line, rule, key, valid choices ----------------------------------------

_RULE_KEYS = "after, before, description, disable, kind, match, name, options, priority, when"
_LEAVES = "all, any, attr, engine, graph, name, not, type"

ERRORS: dict[str, tuple[str, list[str]]] = {
    "malformed yaml": ("rules:\n  - name: a\n     kind: compact\n",
                       ["bad.yaml:4:10", "malformed YAML"]),
    "wrong format": ("!rules: []\n",  # `!` replaced by the wrong header below
                     ["bad.yaml:1", "'format'", "expected 'streamalloc.rules/v1'",
                      "found 'streamalloc.rules/v2'"]),
    "unknown top-level key": ("rules: []\nrulez: []\n",
                              ["bad.yaml:", "unknown key 'rulez'",
                               "valid keys: description, extends, flow, format, name, rules"]),
    "unknown rule key": ("rules:\n  - name: a\n    kind: compact\n    priorty: 3\n",
                         ["bad.yaml:3", "rule 'a'", "unknown key 'priorty'",
                          f"valid keys: {_RULE_KEYS}"]),
    "unknown kind": ("rules:\n  - name: a\n    kind: compactify\n",
                     ["bad.yaml:4", "rule 'a'", "'kind'", "'compactify'", ALL_KINDS]),
    "missing kind": ("rules:\n  - name: a\n    priority: 3\n",
                     ["bad.yaml:3", "rule 'a'", "missing 'kind'", f"valid kinds: {ALL_KINDS}"]),
    "unknown option key": (
        "rules:\n  - name: a\n    kind: stream-label\n    options: {label: x, colour: red}\n",
        ["bad.yaml:3", "rule 'a' (stream-label)", "'options'", "unknown key 'colour'",
         "valid keys: label, user"]),
    "missing required option": (
        "rules:\n  - name: a\n    kind: stream-label\n    options: {user: true}\n",
        ["bad.yaml:3", "rule 'a' (stream-label)", "'options'", "'label'", "required"]),
    "missing options block": ("rules:\n  - name: a\n    kind: stream-label\n",
                              ["bad.yaml:3", "rule 'a' (stream-label)", "'label'", "required"]),
    "option of the wrong type": (
        "rules:\n  - name: a\n    kind: pin-stream\n    options: {stream: zero}\n",
        ["bad.yaml:3", "rule 'a' (pin-stream)", "'options.stream'", "expected integer",
         '"zero"']),
    "option outside its enum": (
        "rules:\n  - name: a\n    kind: assign-by-dependency\n"
        "    options: {memory_priority: maybe}\n",
        ["bad.yaml:3", "rule 'a' (assign-by-dependency)", "'options.memory_priority'",
         "'maybe'", "auto"]),
    "unknown match leaf": ("rules:\n  - name: a\n    kind: compact\n    match: {engin: X}\n",
                           ["bad.yaml:5", "rule 'a'", "'match'", "unknown key 'engin'",
                            f"valid keys: {_LEAVES}"]),
    "unknown nested match leaf": (
        "rules:\n  - name: a\n    kind: compact\n    match:\n      all:\n"
        "        - {type: Relu}\n        - {nme: x}\n",
        ["bad.yaml:8", "rule 'a'", "'match.all.1'", "unknown key 'nme'",
         f"valid keys: {_LEAVES}"]),
    "empty match": ("rules:\n  - name: a\n    kind: compact\n    match: {}\n",
                    ["bad.yaml:5", "rule 'a'", "'match'", "an empty mapping"]),
    "attr leaf without key": (
        "rules:\n  - name: a\n    kind: compact\n    match: {attr: {equals: 1}}\n",
        ["bad.yaml:", "rule 'a'", "'match.attr'", "'key'"]),
    "unknown when key": ("rules:\n  - name: a\n    kind: compact\n    when: {optoin: x}\n",
                         ["bad.yaml:5", "rule 'a'", "'when'", "unknown key 'optoin'",
                          "valid keys: all, any, equals, in, not, not_equals, option, set"]),
    "bad rule name": ("rules:\n  - name: Bad Name\n    kind: compact\n",
                      ["bad.yaml:3", "'Bad Name'", "'name'"]),
    "duplicate rule name": ("rules:\n  - {name: a, kind: compact}\n  - {name: a, kind: compact}\n",
                            ["bad.yaml:4", "'a'", "used twice", "first at bad.yaml:3"]),
    "after names an unknown rule": (
        "rules:\n  - {name: a, kind: compact, after: [zz]}\n  - {name: b, kind: compact}\n",
        ["bad.yaml:3", "rule 'a'", "unknown rule 'zz'", "known: a, b"]),
    "before names an unknown rule": (
        "rules:\n  - {name: a, kind: compact}\n  - {name: b, kind: compact, before: [zz]}\n",
        ["bad.yaml:4", "rule 'b'", "unknown rule 'zz'", "known: a, b"]),
    "ordering cycle": (
        "rules:\n  - {name: a, kind: compact, after: [b]}\n"
        "  - {name: b, kind: compact, after: [c]}\n  - {name: c, kind: compact, before: [b]}\n"
        "  - {name: d, kind: compact, before: [c], after: [a]}\n",
        ["bad.yaml", "cycle", "a -> d -> c -> b -> a"]),
    "rule ordered after itself": ("rules:\n  - {name: a, kind: compact, after: [a]}\n",
                                  ["bad.yaml", "cycle", "a -> a"]),
    "disabling without extends": ("rules:\n  - {name: a, disable: true}\n",
                                  ["bad.yaml:3", "'a'", "disabled", "inherited: none"]),
    "not a mapping": ("- a\n", ["bad.yaml", "expected a mapping with 'format' and 'rules'"]),
    "missing rules": ("name: x\n", ["bad.yaml:1", "'rules'", "required"]),
}


def _bad_file(folder: Path, what: str) -> Path:
    body = ERRORS[what][0]
    if body.startswith("!"):
        text = "format: streamalloc.rules/v2\n" + body[1:]
    elif body.startswith("- "):
        text = body
    else:
        text = HEAD + body
    return write(folder, "bad.yaml", text)


@pytest.mark.parametrize("what", sorted(ERRORS))
def test_rule_file_error(what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # messages name the file as given: "bad.yaml:LINE"
    _bad_file(tmp_path, what)
    with pytest.raises(RuleSchemaError) as info:
        load_rules("bad.yaml")
    assert info.value.exit_code == 3
    for fragment in ERRORS[what][1]:
        assert fragment in str(info.value), (fragment, str(info.value))


@pytest.mark.parametrize("what", ["unknown kind", "ordering cycle", "malformed yaml"])
def test_rules_check_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    monkeypatch.chdir(tmp_path)
    _bad_file(tmp_path, what)
    code, out, err = run(capsys, "rules", "check", "bad.yaml")
    assert (code, out) == (3, "")
    assert err.startswith("streamalloc: error: bad.yaml")
    assert ERRORS[what][1][-1] in err and "Traceback" not in err and err.count("\n") == 1


def test_missing_rule_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "rules", "check", str(tmp_path / "none.yaml"))
    assert code == 3 and "no such rule file" in err


def test_invalid_name_pattern(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.yaml", HEAD + "rules:\n  - name: a\n    kind: compact\n"
          "    match: {name: '('}\n")
    code, _, err = run(capsys, "rules", "check", "bad.yaml")
    assert code == 3 and "bad.yaml:5" in err and "rule 'a'" in err


@pytest.mark.parametrize("when", ["{equals: '1'}", "{set: false}",
                                  "{option: x, equals: '1', in: ['2']}"])
def test_malformed_when_block(when: str, tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", HEAD + f"rules:\n  - name: a\n    kind: compact\n"
                 f"    when: {when}\n")
    with pytest.raises(RuleSchemaError, match="when"):
        load_rules(path)


@pytest.mark.parametrize(("what", "choices"), [("missing required option", "label, user"),
                                               ("empty match", _LEAVES)])
def test_error_lists_valid_choices(what: str, choices: str, tmp_path: Path) -> None:
    with pytest.raises(RuleSchemaError) as info:
        load_rules(_bad_file(tmp_path, what))
    assert choices in str(info.value)


# --- ordering -----------------------------------------------------------------------------------

def test_ties_broken_by_priority_then_name(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", HEAD + """\
        rules:
          - {name: zz, kind: compact, priority: 1}
          - {name: aa, kind: compact, priority: 1}
          - {name: mm, kind: compact}
          - {name: bb, kind: compact, priority: 1, after: [zz]}
          - {name: ab, kind: compact, priority: -5, after: [bb]}
          - {name: ba, kind: compact, priority: 9, before: [aa]}
        """)
    # Kahn's order taking the smallest (priority, name) among the rules whose after/before
    # constraints are met: mm (0); then zz (1) < ba (9) (aa waits for ba); bb (1) as soon as zz
    # is done; ab (-5) once bb is; only then ba (9) and aa, which a constraint holds back.
    assert [r.name for r in load_rules(path).rules] == ["mm", "zz", "bb", "ab", "ba", "aa"]


def test_origin_and_default_priority(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", HEAD + "rules:\n  - {name: a, kind: compact}\n")
    (rule,) = load_rules(path).rules
    assert (rule.priority, rule.origin, rule.kind) == (0, f"{path}:3", "compact")


# --- extends ------------------------------------------------------------------------------------

def test_extends_shipped_set(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.yaml", HEAD + """\
        name: mine
        extends: ge-static-multi-stream
        rules:
          - {name: relu-label, kind: stream-label, priority: 15, match: {type: Relu},
             options: {label: R}}
          - {name: optimize-ineffective, kind: optimize-ineffective, priority: 1150,
             match: {not: {engine: DNN_HCCL}}}
          - {name: allreduce-parallel, disable: true}
        """)
    rules = load_rules(path)
    base = ORDER["ge-static-multi-stream"][1]
    expected = [n for n in base if n not in ("allreduce-parallel", "optimize-ineffective")]
    expected.insert(1, "relu-label")
    expected.insert(expected.index("compact") + 1, "optimize-ineffective")
    assert (rules.name, rules.flow) == ("mine", "static")
    assert [r.name for r in rules.rules] == expected
    replaced = rules.rule("optimize-ineffective")
    assert replaced.priority == 1150 and replaced.origin.startswith(str(path))
    assert rules.rule("compact").origin.startswith("<builtin ge-static-multi-stream>")


def test_extends_relative_file_and_chain(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", HEAD + """\
        name: base
        rules:
          - {name: x, kind: compact, priority: 5}
          - {name: y, kind: single-stream, priority: 1}
        """)
    write(tmp_path, "sub/middle.yaml", HEAD + """\
        extends: ../base.yaml
        rules:
          - {name: z, kind: node-stream-update, priority: 3}
        """)
    leaf = write(tmp_path, "sub/deeper/leaf.yaml", HEAD + """\
        name: leaf
        extends: ../middle.yaml
        rules:
          - {name: y, disable: true}
          - {name: w, kind: skipped-engine, priority: 4}
        """)
    middle = load_rules(tmp_path / "sub" / "middle.yaml")
    assert (middle.name, [r.name for r in middle.rules]) == ("base", ["y", "z", "x"])
    rules = load_rules(leaf)
    assert (rules.name, [r.name for r in rules.rules]) == ("leaf", ["z", "w", "x"])


def test_extends_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", HEAD + "extends: nothere.yaml\nrules: []\n")
    with pytest.raises(RuleSchemaError) as info:
        load_rules(path)
    message = str(info.value)
    assert f"{path}:2" in message and "'nothere.yaml'" in message
    assert ", ".join(SHIPPED) in message


@pytest.mark.parametrize("files", [{"self.yaml": "self.yaml"},
                                   {"a.yaml": "b.yaml", "b.yaml": "c.yaml", "c.yaml": "a.yaml"}])
def test_extends_loop(files: dict[str, str], tmp_path: Path) -> None:
    for name, parent in files.items():
        write(tmp_path, name, HEAD + f"extends: {parent}\nrules: []\n")
    with pytest.raises(RuleSchemaError, match="extends") as info:
        load_rules(tmp_path / next(iter(files)))
    assert info.value.exit_code == 3


def test_disable_unknown_inherited_rule(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", HEAD + "extends: ge-static-single-stream\nrules:\n"
                 "  - {name: optimize-ineffective, disable: true}\n")
    with pytest.raises(RuleSchemaError) as info:
        load_rules(path)
    message = str(info.value)
    assert f"{path}:4" in message and "'optimize-ineffective'" in message
    assert "inherited: " + ", ".join(ORDER["ge-static-single-stream"][1]) in message


def test_extends_may_order_against_inherited_rules(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", HEAD + """\
        extends: ge-static-single-stream
        rules:
          - {name: pin, kind: pin-stream, priority: 0, after: [compact], options: {stream: 0}}
        """)
    names = [r.name for r in load_rules(path).rules]
    assert names.index("pin") == names.index("compact") + 1


# --- when: gating -------------------------------------------------------------------------------

def _graph(tmp_path: Path, options: str = '{ge.hcomParallel: "1"}') -> Path:
    return write(tmp_path, "g.yaml", GRAPH.replace('{ge.hcomParallel: "1"}', options))


@pytest.mark.parametrize(("options", "expected"), [('{ge.hcomParallel: "1"}', HCOM),
                                                   ('{ge.hcomParallel: "0"}', FOLDED),
                                                   ("{}", FOLDED)])
def test_allreduce_parallel_gated_by_hcom_parallel(tmp_path: Path, options: str,
                                                   expected: dict[str, int]) -> None:
    graph = load_graph(_graph(tmp_path, options))
    rules = builtin_rules("ge-static-multi-stream")
    assert rules.rule("allreduce-parallel").enabled(graph.options) == (expected is HCOM)
    allocation = allocate_ge(graph)
    assert streams(allocation) == expected
    touched = {t.note.rule for touches in allocation.provenance.values() for t in touches}
    assert ("allreduce-parallel" in touched) == (expected is HCOM)


@pytest.mark.parametrize(("when", "options", "enabled"), [
    ("{option: my.flag, equals: 'on'}", {"my.flag": "on"}, True),
    ("{option: my.flag, equals: 'on'}", {"my.flag": "off"}, False),
    ("{option: my.flag, not_equals: 'on'}", {}, True),
    ("{option: my.flag, in: [a, b]}", {"my.flag": "b"}, True),
    ("{option: my.flag}", {"my.flag": ""}, False),
    ("{option: my.flag, set: false}", {}, True),
    ("{not: {option: my.flag}}", {"my.flag": "x"}, False),
    ("{any: [{option: a}, {option: b, equals: '2'}]}", {"b": "2"}, True),
    ("{all: [{option: a}, {option: b, equals: '2'}]}", {"b": "2"}, False),
])
def test_when_predicates(tmp_path: Path, when: str, options: dict[str, str],
                         enabled: bool) -> None:
    path = write(tmp_path, "r.yaml",
                 HEAD + f"rules:\n  - {{name: a, kind: compact, when: {when}}}\n")
    assert load_rules(path).rules[0].enabled(options) is enabled


def test_gated_user_rule_runs_only_when_its_option_matches(tmp_path: Path) -> None:
    """A gated `pin-stream` moves ar to stream 2 only with my.pin = "yes"."""
    rules = load_rules(write(tmp_path, "r.yaml", HEAD + """\
        extends: ge-static-multi-stream
        rules:
          - {name: pin-ar, kind: pin-stream, priority: 1150, match: {type: HcomAllReduce},
             when: {option: my.pin, equals: "yes"}, options: {stream: 2}}
        """))
    graph = load_graph(_graph(tmp_path))
    assert streams(allocate_ge(graph, rules)) == HCOM
    pinned = load_graph(_graph(tmp_path, '{ge.hcomParallel: "1", my.pin: "yes"}'))
    assert streams(allocate_ge(pinned, rules)) == {**HCOM, "ar": 2}


# --- the commands: allocate --rules / --set, explain ---------------------------------------------

def _plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> dict[str, object]:
    out = tmp_path / "plan.json"
    code, _, err = run(capsys, "allocate", str(_graph(tmp_path)), "-o", str(out), *argv)
    assert (code, err) == (0, "")
    return json.loads(out.read_text(encoding="utf-8"))


def _plan_streams(plan: dict[str, object]) -> dict[str, int]:
    return {n: e["stream"] for n, e in plan["nodes"].items()}  # type: ignore[attr-defined]


def test_allocate_default_rules(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = _plan(capsys, tmp_path)
    assert _plan_streams(plan) == HCOM and plan["logical_stream_count"] == 3


def test_allocate_with_replacing_rules(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """Without the Optimize pass nothing folds ar; without AllReduceParallel u stays with g."""
    rules = write(tmp_path, "plain.yaml", HEAD + """\
        name: plain
        rules:
          - {name: labels, kind: assign-by-label, priority: 1}
          - {name: hccl, kind: independent-stream, priority: 2}
          - {name: deps, kind: assign-by-dependency, priority: 3}
          - {name: nodes, kind: node-stream-update, priority: 4}
          - {name: compact, kind: compact, priority: 5}
        """)
    plan = _plan(capsys, tmp_path, "--rules", str(rules))
    assert _plan_streams(plan) == {"d": -1, "g": 1, "ar": 0, "u": 1, "out": 1}
    assert plan["nodes"]["u"]["rule"] == "deps"  # type: ignore[index]


def test_allocate_with_extending_rules(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    rules = write(tmp_path, "pin.yaml", HEAD + """\
        name: pin-ar
        extends: ge-static-multi-stream
        rules:
          - {name: pin-ar, kind: pin-stream, priority: 1150, match: {type: HcomAllReduce},
             options: {stream: 2}}
        """)
    plan = _plan(capsys, tmp_path, "--rules", str(rules))
    assert _plan_streams(plan) == {**HCOM, "ar": 2}
    assert plan["nodes"]["ar"]["rule"] == "pin-ar"  # type: ignore[index]


def test_allocate_with_shipped_set_name(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    plan = _plan(capsys, tmp_path, "--rules", "ge-static-single-stream")
    assert _plan_streams(plan) == FOLDED


def test_set_wins_over_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert _plan_streams(_plan(capsys, tmp_path, "--set", "ge.hcomParallel=0")) == FOLDED


def test_set_gates_a_rule_of_a_rule_file(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    rules = write(tmp_path, "pin.yaml", HEAD + """\
        extends: ge-static-multi-stream
        rules:
          - {name: pin-ar, kind: pin-stream, priority: 1150, match: {type: HcomAllReduce},
             when: {option: my.pin, set: true}, options: {stream: 1}}
        """)
    assert _plan_streams(_plan(capsys, tmp_path, "--rules", str(rules))) == HCOM
    plan = _plan(capsys, tmp_path, "--rules", str(rules), "--set", "my.pin=1")
    assert _plan_streams(plan) == {**HCOM, "ar": 1}


def test_allocate_with_a_bad_rule_file(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    rules = write(tmp_path, "bad.yaml", HEAD + "rules:\n  - {name: a, kind: nope}\n")
    out = tmp_path / "plan.json"
    code, stdout, err = run(capsys, "allocate", str(_graph(tmp_path)), "--rules", str(rules),
                            "-o", str(out))
    assert (code, stdout) == (3, "") and f"{rules}:3" in err and not out.exists()


def _explained_rules(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    return [line.split()[0] for line in lines[start:] if line.strip()]


@pytest.mark.parametrize("node", ["g", "ar", "u", "out"])
def test_explain_lists_every_rule_that_touched_the_node(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, node: str) -> None:
    rules = write(tmp_path, "mine.yaml", HEAD + """\
        extends: ge-static-multi-stream
        rules:
          - {name: relu-label, kind: stream-label, priority: 15, match: {type: Relu},
             options: {label: R}}
        """)
    graph = _graph(tmp_path)
    code, out, err = run(capsys, "explain", str(graph), node, "--rules", str(rules))
    assert (code, err) == (0, "")
    allocation = allocate_ge(load_graph(graph), load_rules(rules))
    touched = [t.note.rule for t in allocation.provenance[node]]
    assert touched and _explained_rules(out) == touched
    result = allocation.nodes[node]
    assert out.startswith(f"node {node} (") and f"stream {result.stream}, decided by " \
        f"{result.rule}" in out


def test_explain_with_label_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """g and u share the R label stream 0; ar keeps its HCCL stream 1, out gets LOC 2."""
    rules = write(tmp_path, "mine.yaml", HEAD + """\
        extends: ge-static-multi-stream
        rules:
          - {name: relu-label, kind: stream-label, priority: 15, match: {type: Relu},
             options: {label: R}}
        """)
    graph = _graph(tmp_path)
    allocation = allocate_ge(load_graph(graph), load_rules(rules))
    assert streams(allocation) == {"d": -1, "g": 0, "ar": 1, "u": 0, "out": 2}
    _, out, _ = run(capsys, "explain", str(graph), "g", "--rules", str(rules))
    assert _explained_rules(out) == ["relu-label", "assign-by-label", "node-stream-update"]
    assert "decided by assign-by-label" in out


def test_explain_unknown_node(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "explain", str(_graph(tmp_path)), "nope")
    assert code == 2 and "'nope'" in err
