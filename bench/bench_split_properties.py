"""The split property over many random graphs: every preset plan verifies and emulates.

Run `python bench/bench_split_properties.py [--graphs 10000] [--seed 0]`. Not a test: the test
suite runs the same property (`tests/test_split_properties.py`) on a few hundred graphs; this
runs it on 10k seeded graphs (`split_graphs.split_graph(random.Random(seed))`) and prints the
counts: plans that verified and emulated, plans refused as over a device limit (exit 4),
failures (any other error, a violation or a failed emulation: there must be none), how many
plans split a stream, and per feature how many graphs exercised it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the generator and the property live with the tests

from split_graphs import check_split_plan, features, split_graph  # noqa: E402

from streamalloc.api import plan  # noqa: E402


def one(seed: int, counts: Counter[str], failures: list[str]) -> None:
    """Check one seeded graph and count what it showed."""
    graph = split_graph(random.Random(seed))
    counts.update(f"feature {f}" for f in features(graph))
    try:
        outcome = check_split_plan(graph)
    except Exception as error:  # a failure of the property, whatever its kind
        counts["failed"] += 1
        failures.append(f"seed {seed}: {type(error).__name__}: {str(error)[:300]}")
        return
    counts[outcome] += 1
    if outcome == "ok":
        result = plan(graph, mode="preset")
        if result.physical_stream_count > result.allocation.total_stream_num:
            counts["split"] += 1


def main() -> int:
    """Run the property over the seeds and print the counts; exit 1 if any graph failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    failures: list[str] = []
    began = time.perf_counter()
    for seed in range(args.seed, args.seed + args.graphs):
        one(seed, counts, failures)
    elapsed = time.perf_counter() - began
    print(f"graphs {args.graphs} (seeds {args.seed}..{args.seed + args.graphs - 1}), "
          f"{elapsed:.1f} s")
    for key in ("ok", "split", "limit", "failed"):
        print(f"  {key:<24} {counts[key]}")
    for key in sorted(k for k in counts if k.startswith("feature ")):
        print(f"  {key:<24} {counts[key]}")
    for line in failures[:20]:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
