"""Benchmark: simulated tasks per second of the emulated device, and every real model's run.

Run `python bench/bench_emulator.py [--size 100000] [--streams 1,2,4,8] [--repeat 3]`.
Not a test: numbers go into issue notes and catch regressions by eye.

Table 1, a synthetic network (`layered_graph(size)`) on k streams: tasks (graph tasks plus the
Send/Recv tasks of the plan), kernel steps, the run alone ("run", best of --repeat) and the whole
`emulate` call including checking and compiling the plan ("end to end"), as tasks per second.
Table 2, the real models: makespan, both lower bounds and tasks per second of each.

Plans come from `make_plan`: the round-robin plan builder of the tests (tests/emu) until the
ge-mode allocator lands; then swap its body for the allocator call.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test-only plan builder and the real-model list

from emu.plan_builder import round_robin_plan  # noqa: E402
from real_models import real_models  # noqa: E402

from streamalloc.ir.graph import Graph  # noqa: E402
from streamalloc.ir.loaders import load_graph  # noqa: E402
from streamalloc.ir.synthetic import layered_graph  # noqa: E402
from streamalloc.report.table import format_table  # noqa: E402
from streamalloc.runtime_emu import emulate, plan_from_dict  # noqa: E402
from streamalloc.runtime_emu.results import EmulationResult  # noqa: E402


def make_plan(graph: Graph, streams: int = 3) -> dict[str, Any]:
    """The plan to emulate (swap for the ge-mode allocator when it exists)."""
    return round_robin_plan(graph, streams)


def best_run(graph: Graph, plan: dict[str, Any], repeat: int) -> tuple[EmulationResult, float]:
    """The fastest of `repeat` emulations (the result, and its end-to-end seconds)."""
    best: tuple[EmulationResult, float] | None = None
    checked = plan_from_dict(plan)
    for _ in range(repeat):
        start = time.perf_counter()
        result = emulate(graph, checked)
        seconds = time.perf_counter() - start
        if best is None or result.wall_s < best[0].wall_s:
            best = (result, seconds)
    assert best is not None
    return best


def synthetic_rows(size: int, streams: list[int], repeat: int) -> list[list[object]]:
    """One row per stream count on the synthetic network."""
    graph = layered_graph(size)
    rows: list[list[object]] = []
    for k in streams:
        result, seconds = best_run(graph, make_plan(graph, k), repeat)
        tasks = result.program.task_count()
        rows.append([k, tasks, result.steps, result.status, f"{result.wall_s:.3f}",
                     f"{tasks / result.wall_s:,.0f}", f"{seconds:.2f}",
                     f"{tasks / seconds:,.0f}"])
    return rows


def real_rows(repeat: int) -> list[list[object]]:
    """One row per real model: makespan, lower bounds, speed."""
    rows: list[list[object]] = []
    for path in real_models():
        graph = load_graph(path)
        result, _ = best_run(graph, make_plan(graph), repeat)
        tasks = result.program.task_count()
        rows.append([path.name[:44], tasks, result.status, f"{result.makespan_us:.1f}",
                     f"{result.bounds.critical_path_us:.1f}",
                     f"{result.bounds.work_over_units_us:.1f}",
                     f"{tasks / max(result.wall_s, 1e-9):,.0f}"])
    return rows


def main() -> None:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="synthetic graph nodes")
    parser.add_argument("--streams", default="1,2,4,8", help="stream counts to try")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-real", action="store_true", help="skip the real models")
    args = parser.parse_args()
    streams = [int(s) for s in args.streams.split(",") if s]
    print(f"layered_graph({args.size}), round-robin plans")
    print(format_table(["streams", "tasks", "steps", "status", "run_s", "run_tasks/s",
                        "end_to_end_s", "end_to_end_tasks/s"],
                       synthetic_rows(args.size, streams, args.repeat)))
    if not args.no_real:
        print("\nreal models, 3-stream round-robin plans")
        print(format_table(["model", "tasks", "status", "makespan_us", "critical_path_us",
                            "work_over_units_us", "run_tasks/s"], real_rows(args.repeat)))


if __name__ == "__main__":
    main()
