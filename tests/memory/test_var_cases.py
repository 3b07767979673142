"""The 43 acceptance cases from GE's own unit tests, run through the Python API.

Each case file (a verbatim copy of shared/acceptance/var_cases) is executed step by step; every
`expect` entry is asserted, and so is every structured `derived` entry (values the specification
implies but GE's test did not assert). Free-text `derived` notes are explanations, not checks.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from memory.varcase_exec import CaseRun
from memory.varcase_expect import ENTRY, check_step, check_value, when

CASES_DIR = Path(__file__).parent / "var_cases"
CASES = sorted(CASES_DIR.glob("*.yaml"))


def test_all_43_cases_are_present() -> None:
    cases = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in CASES]
    # 43 distinct GE tests: 38 of graph_var_manager_unittest.cc (the 39th, at line 941, is
    # skipped and says why in SKIPPED.md) and the 5 of model_rt_var_manager_unittest.cc.
    sources = [case["source"].split()[0] for case in cases]
    assert len(set(sources)) == len(CASES) == 43
    assert Counter(s.split(":")[0].rsplit("/", 1)[1] for s in sources) == {
        "graph_var_manager_unittest.cc": 38, "model_rt_var_manager_unittest.cc": 5}
    skipped = (CASES_DIR / "SKIPPED.md").read_text(encoding="utf-8")
    assert "`graph_var_manager_unittest.cc:941`" in skipped
    assert not any(s.endswith("graph_var_manager_unittest.cc:941") for s in sources)
    # Every case runs steps and checks something.
    assert all(case["setup"]["steps"] and _entries(case) for case in cases)


def _entries(case: dict[str, Any]) -> list[dict[str, Any]]:
    items = list(case.get("expect") or []) + list(case.get("derived") or [])
    return [item for item in items if isinstance(item, dict)]


Moment = tuple[str | None, str | None]


def _moment(case: dict[str, Any], items: list[Any], index: int) -> Moment:
    """When to evaluate the value entry `items[index]`.

    An explicit "before / after / at sN" wins. "NAME: key / offset / logical" describes where a
    variable went: right after the last step that names it. An entry listed between two step
    entries (`{at: a}` ... `{at: b}`) mirrors an assertion GE makes between those two steps: it
    is evaluated before step b. Anything else is evaluated after the last step.
    """
    text = items[index]["value"]
    _, moment, step = when(text)
    if moment is not None:
        return moment, step
    entry = ENTRY.match(text)
    if entry:
        named = [s["id"] for s in case["setup"]["steps"] if s.get("name") == entry[1]]
        return ("after", named[-1]) if named else (None, None)
    before = [i["at"] for i in items[:index] if isinstance(i, dict) and "at" in i]
    after = [i["at"] for i in items[index + 1:] if isinstance(i, dict) and "at" in i]
    return ("before", after[0]) if before and after else (None, None)


def run_case(case: dict[str, Any]) -> CaseRun:
    """Execute the steps, checking each value entry at its moment (see `_moment`)."""
    run = CaseRun(case)
    timed: dict[Moment, list[dict[str, Any]]] = defaultdict(list)
    for section in ("expect", "derived"):
        items = list(case.get(section) or [])
        for index, item in enumerate(items):
            if isinstance(item, dict) and "value" in item:
                timed[_moment(case, items, index)].append(item)
    for step in case["setup"]["steps"]:
        for item in timed.pop(("before", step["id"]), []):
            check_value(run, item)
        run.run(step)
        for item in timed.pop(("after", step["id"]), []):
            check_value(run, item)
    assert set(timed) <= {(None, None)}, f"checks for unknown steps: {sorted(timed)}"
    for item in timed.get((None, None), []):
        check_value(run, item)
    for item in _entries(case):
        if "at" in item:
            check_step(run, item)
    return run


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_acceptance_case(path: Path) -> None:
    run_case(yaml.safe_load(path.read_text(encoding="utf-8")))
