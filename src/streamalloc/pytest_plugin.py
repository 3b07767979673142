"""pytest plugin: golden files of allocations, rewritten with `pytest --update-goldens`.

Installed with the package (entry point `streamalloc` in the `pytest11` group), so any test
suite in an environment with streamalloc has:

* the fixture `assert_allocation_matches(graph, golden, rules=None, mode="ge", options=None)`:
  allocates `graph` (a `Graph` or a graph file) and compares the canonical allocation text
  (`streamalloc.allocation.allocation_text`) with the file `golden`; under `--update-goldens`
  it writes the file instead. A missing golden fails and says how to create it;
* the fixture `golden_text(path, actual)`: the same for any text;
* the option `--update-goldens`; the functions `assert_allocation_matches` and
  `check_golden` below read it from the running session, so helpers outside fixtures work too.

The fixtures read a relative `golden` path from the test file's directory, and a relative graph
or rule file path there too when the file is there, so a suite runs from any directory; the
functions take paths as given (from the working directory).

    def test_my_policy(assert_allocation_matches):
        assert_allocation_matches("graphs/attn.yaml", "goldens/attn.alloc.txt",
                                  rules="rules/attention.yaml",
                                  options={"ge.hcomParallel": "1"})

`pytest -p no:streamalloc` turns the plugin off. streamalloc itself is imported only when an
allocation is asked for, so the plugin costs other test suites nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import pytest

if TYPE_CHECKING:
    from streamalloc.ir.graph import Graph
    from streamalloc.rules import RuleSet

UPDATE_OPTION = "--update-goldens"
_Given = TypeVar("_Given")
DIFF_LINES = 40
_session: dict[str, bool] = {"update": False}  # the option of the running session


class AllocationMatcher(Protocol):
    """What the `assert_allocation_matches` fixture returns."""

    def __call__(self, graph: Graph | str | Path, golden: str | Path, *,
                 rules: RuleSet | str | Path | None = None, mode: str = "ge",
                 options: Mapping[str, str] | None = None) -> None: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--update-goldens`."""
    group = parser.getgroup("streamalloc", "streamalloc golden files")
    group.addoption(UPDATE_OPTION, action="store_true", default=False,
                    help="rewrite golden files with the current output (review the diff)")


def pytest_configure(config: pytest.Config) -> None:
    """Remember the option for the module-level helpers."""
    _session["update"] = update_goldens(config)


def update_goldens(config: pytest.Config) -> bool:
    """Whether this session rewrites golden files."""
    return bool(config.getoption(UPDATE_OPTION, default=False))


def check_golden(path: str | Path, actual: str, *, update: bool | None = None) -> None:
    """Compare `actual` with the golden file `path`, or write it when updating (`update`: None
    means the running session's `--update-goldens`). A difference fails with a diff."""
    __tracebackhide__ = True
    path = Path(path)
    if update is None:
        update = _session["update"]
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; run pytest {UPDATE_OPTION} to "
                             "write it, and review it")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                         f"{path} (golden)", "actual", lineterm=""))
        shown = diff[:DIFF_LINES] + ([f"... {len(diff) - DIFF_LINES} more lines"]
                                     if len(diff) > DIFF_LINES else [])
        raise AssertionError(f"output differs from {path}; if the change is intended, run "
                             f"pytest {UPDATE_OPTION} and review the diff\n" + "\n".join(shown))


def allocation_golden_text(graph: Graph | str | Path, *,
                           rules: RuleSet | str | Path | None = None, mode: str = "ge",
                           options: Mapping[str, str] | None = None) -> str:
    """The canonical allocation text of `graph` (a Graph or a graph file) under `options`,
    allocated in `mode` with `rules` (a RuleSet, a rule file, a shipped rule set name, or None
    for GE's rules)."""
    from streamalloc import api
    from streamalloc.allocation import allocation_text
    from streamalloc.ir.graph import Graph
    from streamalloc.rules import RuleSet

    loaded = graph if isinstance(graph, Graph) else api.load_graph(graph)
    loaded = api.with_options(loaded, dict(options or {}))
    rule_set = rules if rules is None or isinstance(rules, RuleSet) else api.load_rule_set(rules)
    return allocation_text(api.allocate(loaded, rule_set, mode))


def assert_allocation_matches(graph: Graph | str | Path, golden: str | Path, *,
                              rules: RuleSet | str | Path | None = None, mode: str = "ge",
                              options: Mapping[str, str] | None = None,
                              update: bool | None = None) -> None:
    """Allocate `graph` and compare its canonical allocation text with the file `golden` (or
    rewrite it under `--update-goldens`; `update` overrides the session's option)."""
    __tracebackhide__ = True
    text = allocation_golden_text(graph, rules=rules, mode=mode, options=options)
    check_golden(golden, text, update=update)


@pytest.fixture(name="assert_allocation_matches")
def _assert_allocation_matches_fixture(request: pytest.FixtureRequest) -> AllocationMatcher:
    """`assert_allocation_matches(graph, golden, rules=..., mode=..., options=...)`."""
    update = update_goldens(request.config)

    base = request.path.parent

    def check(graph: Graph | str | Path, golden: str | Path, *,
              rules: RuleSet | str | Path | None = None, mode: str = "ge",
              options: Mapping[str, str] | None = None) -> None:
        __tracebackhide__ = True
        assert_allocation_matches(_beside(base, graph), base / golden,
                                  rules=_beside(base, rules), mode=mode, options=options,
                                  update=update)

    return check


@pytest.fixture(name="golden_text")
def _golden_text_fixture(request: pytest.FixtureRequest) -> Callable[[str | Path, str], None]:
    """`golden_text(path, actual)`: compare text with a golden file, or rewrite it."""
    update = update_goldens(request.config)
    base = request.path.parent

    def check(path: str | Path, actual: str) -> None:
        __tracebackhide__ = True
        check_golden(base / path, actual, update=update)

    return check


def _beside(base: Path, given: _Given) -> _Given | Path:
    """A graph or rule file named relative to the test file's directory, if it is there; a
    shipped rule set's name, a Graph or RuleSet, or a file elsewhere is kept as given."""
    if isinstance(given, str | Path) and (base / given).is_file():
        return base / given
    return given


__all__ = ["UPDATE_OPTION", "AllocationMatcher", "allocation_golden_text",
           "assert_allocation_matches", "check_golden", "update_goldens"]
