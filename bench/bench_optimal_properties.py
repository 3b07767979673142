"""The optimal mode's promises over many random cases: graphs of every flow, settings, device
limits and rule sets (`tests/optimal_cases.py`).

Every plan must verify against the rule set it records, emulate without deadlock, never be
worse than its baseline (under `--concurrency ge`, the baseline within the limits) and keep its
event budget; a run may only be refused as no plan fitting the limits (or ge mode failing,
exit 4) or as ge mode refuses the same rules (exit 3). Prints the outcome counts and every
failure. Usage: `python bench/bench_optimal_properties.py [CASES]` from a checkout (it imports
the test suite's strategies); the suite runs 40 cases.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from optimal_cases import OptimalCase, check_optimal_case, optimal_cases  # noqa: E402

from streamalloc.errors import InputWarning  # noqa: E402


def run(cases: int) -> tuple[Counter[str], list[str]]:
    """Outcome counts over `cases` derandomized cases, and the failures."""
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    folder = Path(tempfile.mkdtemp())

    @settings(max_examples=cases, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=optimal_cases())
    def case(case: OptimalCase) -> None:
        try:
            outcomes[check_optimal_case(case, folder)] += 1
        except Exception as error:  # a failure of the property, whatever its kind
            outcomes["failed"] += 1
            failures.append(f"{case!r}: {type(error).__name__}: {str(error)[:300]}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)  # random rules often decide nothing
        case()
    return outcomes, failures


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    start = time.perf_counter()
    result, failed = run(count)
    print(f"{sum(result.values())} cases in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(result.items())))
    for line in failed:
        print("FAILED", line)
    sys.exit(1 if failed else 0)
