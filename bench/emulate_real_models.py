"""The emulated makespan of the 17 real models under their ge-mode plans, with parallel options.

Run `python bench/emulate_real_models.py [--markdown]`. Not a test: the table is the baseline
quoted in the README's "Emulated device" section; rerun it when the cost model changes.

Each model is loaded, given the parallel options below (several AI Core and AI CPU streams,
parallel collectives), planned in ge mode (`streamalloc.api.plan`) and run on the emulated
device with the shipped cost table. Columns: streams and tasks of the plan, the emulated
makespan, both lower bounds (critical path; work over units) in microseconds, and the status.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the list of the 17 real models

from real_models import real_models  # noqa: E402

from streamalloc.api import plan, with_options  # noqa: E402
from streamalloc.ir.loaders import load_graph  # noqa: E402
from streamalloc.report.table import format_table  # noqa: E402
from streamalloc.runtime_emu import emulate  # noqa: E402

# The options of the emulator's real-model tests (tests/emu/conftest.py): without them most
# models get one AI Core stream and there is nothing to overlap.
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
HEADERS = ["model", "streams", "tasks", "makespan_us", "critical_path_us", "work_over_units_us",
           "status"]


def model_row(path: Path) -> list[object]:
    """One model's row: its plan's size, the emulated makespan, the bounds and the status."""
    graph = with_options(load_graph(path), PARALLEL)
    document = plan(graph).to_json()
    result = emulate(graph, document)
    bounds = result.bounds
    return [path.name[:44], len(result.program.stream_ids), result.program.task_count(),
            f"{result.makespan_us:.1f}", f"{bounds.critical_path_us:.1f}",
            f"{bounds.work_over_units_us:.1f}", result.status]


def markdown(headers: list[str], rows: list[list[object]]) -> str:
    """A GitHub table (for the README)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    """Print the table (plain text, or Markdown with --markdown)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = [model_row(path) for path in real_models()]
    print(markdown(HEADERS, rows) if args.markdown else format_table(HEADERS, rows))


if __name__ == "__main__":
    main()
