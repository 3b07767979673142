"""The pytest plugin (streamalloc.pytest_plugin, entry point `streamalloc` in `pytest11`): a user's
test pins an allocation in a golden file with `assert_allocation_matches`, fails with a diff when
the allocation changes, and `--update-goldens` rewrites the golden."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from streamalloc import pytest_plugin
from streamalloc.allocation import allocation_text
from streamalloc.api import allocate, with_options
from streamalloc.ir.loaders import load_graph

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
GRAPH_TEXT = """format: streamalloc.graph/v1
name: user
nodes:
  - {name: data, type: Data}
  - {name: a, type: Relu, inputs: [data]}
  - {name: b, type: Relu, inputs: [a], attrs: {_stream_label: side}}
  - {name: c, type: Add, inputs: [a, b]}
"""
RULES_TEXT = """format: streamalloc.rules/v1
name: user-policy
extends: ge-static-multi-stream
rules:
  - {name: side-label, kind: stream-label, priority: 30, match: {name: "^c$"},
     options: {label: side}}
"""
USER_TEST = """
def test_default(assert_allocation_matches):
    assert_allocation_matches("graph.yaml", "goldens/default.alloc.txt")


def test_with_rules_and_options(assert_allocation_matches):
    assert_allocation_matches("graph.yaml", "goldens/policy.alloc.txt", rules="rules.yaml",
                              mode="ge", options={"ge.hcomParallel": "1"})


def test_any_text(golden_text):
    golden_text("goldens/note.txt", "hello\\n")


def test_importable_helper():
    from streamalloc.pytest_plugin import assert_allocation_matches
    assert_allocation_matches("graph.yaml", "goldens/helper.alloc.txt", mode="preset")
"""
GOLDENS = ("default.alloc.txt", "policy.alloc.txt", "note.txt", "helper.alloc.txt")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", graph=GRAPH_TEXT, rules=RULES_TEXT)
    pytester.makepyfile(test_user=USER_TEST)
    return pytester


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "streamalloc"]
    assert [ep.value for ep in found] == ["streamalloc.pytest_plugin"]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points.pytest11]\nstreamalloc = "streamalloc.pytest_plugin"' in text


def test_missing_goldens_fail_and_say_how_to_write_them(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*golden file */goldens/default.alloc.txt is missing; run "
                                 "pytest --update-goldens*"])


def test_update_goldens_writes_them_and_then_the_tests_pass(project: pytest.Pytester) -> None:
    project.runpytest("--update-goldens").assert_outcomes(passed=4)
    goldens = project.path / "goldens"
    assert sorted(p.name for p in goldens.iterdir()) == sorted(GOLDENS)
    graph = load_graph(project.path / "graph.yaml")
    assert (goldens / "default.alloc.txt").read_text() == allocation_text(allocate(graph))
    policy = (goldens / "policy.alloc.txt").read_text()
    assert policy.startswith("// streamalloc allocation v1: graph user, mode ge, rules "
                             "user-policy\n")
    assert (goldens / "helper.alloc.txt").read_text() == allocation_text(
        allocate(graph, mode="preset"))
    project.runpytest().assert_outcomes(passed=4)


def test_a_changed_golden_fails_with_a_diff_until_updated(project: pytest.Pytester) -> None:
    project.runpytest("--update-goldens").assert_outcomes(passed=4)
    golden = project.path / "goldens" / "default.alloc.txt"
    right = golden.read_text()
    assert "\nc 1 assign-by-dependency\n" in right
    golden.write_text(right.replace("\nc 1 ", "\nc 7 "), encoding="utf-8")
    result = project.runpytest()
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*output differs from */goldens/default.alloc.txt; if the change is intended, run pytest "
        "--update-goldens*",
        "*-c 7 assign-by-dependency*", "*+c 1 assign-by-dependency*"])
    project.runpytest("--update-goldens").assert_outcomes(passed=4)
    assert golden.read_text() == right
    project.runpytest().assert_outcomes(passed=4)


def test_fixture_paths_are_read_from_the_test_files_directory(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a docs walk-through: run from the parent directory, the goldens written from
    the test directory were "missing". The fixtures' paths now hold from any directory; the
    helper outside fixtures takes its paths from the working directory, and fails there."""
    project.runpytest("--update-goldens").assert_outcomes(passed=4)
    monkeypatch.chdir(project.path.parent)
    result = project.runpytest(str(project.path / "test_user.py"), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_importable_helper*"])


def test_the_option_is_the_plugins(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*streamalloc golden files*", "*--update-goldens*"])
    result = pytester.runpytest("-p", "no:streamalloc", "--update-goldens")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_the_helpers_work_outside_a_session(tmp_path: Path) -> None:
    graph = with_options(load_graph(ROOT / "examples" / "graphs" / "train_step.yaml"), {})
    path = tmp_path / "g.alloc.txt"
    pytest_plugin.assert_allocation_matches(graph, path, update=True)
    pytest_plugin.assert_allocation_matches(graph, path, update=False)
    with pytest.raises(AssertionError, match="output differs") as err:
        pytest_plugin.assert_allocation_matches(graph, path, update=False, mode="preset")
    assert "+// streamalloc allocation v1: graph train_step, mode preset" in str(err.value)
