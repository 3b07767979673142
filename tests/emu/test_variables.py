"""The variables hook: a loader places the variable memory plan before the first task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from emu.conftest import EXAMPLES

from streamalloc.errors import InputError, LimitExceeded
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import DeviceMemory, VariableLoader, emulate, load_plan, report_text


class StubVariables:
    """What `streamalloc.memory` will provide: places variables, says what it did."""

    def __init__(self, variables: list[tuple[str, str, int, int]]) -> None:
        self.variables = variables
        self.calls = 0

    def load_into(self, memory: DeviceMemory) -> Mapping[str, Any]:
        self.calls += 1
        for name, mem_type, offset, size in self.variables:
            memory.place(name, mem_type, offset, size)
        return {"session": 0, "source": "stub"}


def _run(loader: VariableLoader) -> Any:
    return emulate(load_graph(EXAMPLES / "fork_join.yaml"),
                   load_plan(EXAMPLES / "fork_join.plan.json"), variables=loader)


def test_the_loader_runs_once_and_the_report_says_what_it_loaded() -> None:
    stub = StubVariables([("w1", "HBM", 0, 1536), ("w2", "HBM", 1536, 512),
                          ("w3", "HBM", 0, 1536), ("h", "HOST", 0, 64)])
    assert isinstance(stub, VariableLoader)
    result = _run(stub)
    assert stub.calls == 1 and result.status == "ok"
    # w1 and w3 share one block: counted once, as `vars` counts it
    assert result.variables == {"count": 4, "bytes": {"HBM": 2048, "HOST": 64},
                                "extent": {"HBM": 2048, "HOST": 64},
                                "loader": {"session": 0, "source": "stub"}}
    assert "variables loaded: 4, bytes HBM 2048, HOST 64" in report_text(result)


def test_a_loader_that_places_nothing_reports_no_empty_bytes() -> None:
    result = _run(StubVariables([]))
    assert result.variables is not None and result.variables["count"] == 0
    lines = report_text(result).splitlines()
    assert "variables loaded: 0" in lines  # not "..., bytes " with nothing after it


def test_without_a_loader_the_report_has_no_variables() -> None:
    result = _run(None)  # type: ignore[arg-type]
    assert result.status == "ok" and result.variables is None
    assert "variables" not in report_text(result)


def test_variables_past_device_memory_are_limit_exceeded_before_any_task() -> None:
    with pytest.raises(LimitExceeded, match="ends at byte 34359738369 of HBM, past the device"):
        _run(StubVariables([("huge", "HBM", 1, 32 * 2**30)]))


def test_placing_a_variable_twice_is_an_input_error() -> None:
    memory = DeviceMemory()
    memory.place("w", "HBM", 0, 8)
    with pytest.raises(InputError, match="placed twice"):
        memory.place("w", "HBM", 8, 8)
    with pytest.raises(InputError, match="must be >= 0"):
        memory.place("v", "HBM", -1, 8)
