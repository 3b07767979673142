"""GE-compatible allocation golden cases: every graph under goldens/cases/ allocated in ge mode.

`<case>.ge.expected` holds the canonical allocation text (per node: stream and deciding rule),
compared through the pytest plugin's `assert_allocation_matches` (`pytest --update-goldens`
rewrites it).
Cases whose allocation is an error have `<case>.ge.error` with the expected message instead.
The spec's worked examples are additionally asserted value by value in test_ge_examples.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streamalloc.allocation import allocation_text
from streamalloc.errors import StreamallocError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.loaders import load_graph
from streamalloc.pytest_plugin import AllocationMatcher

CASES = sorted((Path(__file__).parent / "goldens" / "cases").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_ge_golden(case: Path, golden: Callable[[Path, str], None],
                   assert_allocation_matches: AllocationMatcher) -> None:
    graph = load_graph(case)
    error_file = case.with_suffix(".ge.error")
    if error_file.exists():
        with pytest.raises(StreamallocError) as raised:
            allocate_ge(graph)
        message = str(raised.value).replace(str(case), "<case>")
        golden(error_file, f"exit {raised.value.exit_code}: {message}\n")
        return
    text = allocation_text(allocate_ge(graph))
    assert allocation_text(allocate_ge(load_graph(case))) == text  # deterministic
    # the pytest plugin's fixture, as a user's test would pin an allocation
    assert_allocation_matches(graph, case.with_suffix(".ge.expected"))
