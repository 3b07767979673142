"""Random models x random user rule files, at benchmark scale (the suite runs 250 cases).

Every ge-mode allocation must satisfy the constraint form of every enabled rule, or the run
must refuse it (a rule undone by a later pass: exit 3; a pin beyond the stream count: exit 4).
Prints the outcome counts. Usage: `python bench/bench_rule_properties.py [CASES]` from a
checkout (it imports the test suite's strategies).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_heuristic_properties import build, models  # noqa: E402
from test_rule_constraints import allocate_or_conflict, rules_file, user_rules  # noqa: E402


def run(cases: int) -> Counter[str]:
    """Outcome counts over `cases` derandomized examples."""
    outcomes: Counter[str] = Counter()
    folder = Path(tempfile.mkdtemp())

    @settings(max_examples=cases, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(spec=models("multi"), rules=user_rules())
    def case(spec: object, rules: list[dict[str, object]]) -> None:
        outcomes[allocate_or_conflict(build(spec), rules_file(folder, rules))] += 1  # type: ignore[arg-type]

    case()
    return outcomes


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    start = time.perf_counter()
    result = run(count)
    print(f"{sum(result.values())} cases in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(result.items())))
