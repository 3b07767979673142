"""The optimal mode on random cases: graphs of every flow, settings, device limits and rule
sets (`optimal_cases`): every plan verifies against the rule set it records, emulates, is
never worse than its baseline and keeps its event budget, or the run is refused as it should
be. `bench/bench_optimal_properties.py` runs thousands of these cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from optimal_cases import OptimalCase, check_optimal_case, optimal_cases


@pytest.mark.filterwarnings("ignore::streamalloc.errors.InputWarning")  # random rules often idle
@settings(max_examples=40, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=optimal_cases())
def test_random_cases_keep_the_optimal_modes_promises(tmp_path: Path, case: OptimalCase) -> None:
    event(check_optimal_case(case, tmp_path))
