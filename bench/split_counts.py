"""Physical streams and events per real model, under two settings that exercise the split.

Run `python bench/split_counts.py [--markdown]`. Not a test: a table to compare before and
after a change to the sync layer or the split (run it on both trees and diff the output).

Settings: `parallel` (`ge.streamMaxParallelNum=AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2`,
`ge.hcomParallel=1`: several AI Core and AI CPU streams), `cap64`
(`streamalloc.max_task_per_stream=64`: a stream depth small enough that most streams split)
and `both` (the two together: splits of several streams with events between them).
Each model is planned in ge mode (`streamalloc.api.plan`) and verified; per setting the columns
are the logical streams, the physical streams, the events, and the status: `ok`, `exit N`
(the error the plan was refused with) or `verify N` (the exit code of a plan the verifier
rejects).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the list of the 17 real models

from real_models import real_models  # noqa: E402

from streamalloc.api import plan, with_options  # noqa: E402
from streamalloc.errors import StreamallocError  # noqa: E402
from streamalloc.ir.loaders import load_graph  # noqa: E402
from streamalloc.verify import verify_plan  # noqa: E402

SETTINGS: dict[str, Mapping[str, str]] = {
    "parallel": {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
                 "ge.hcomParallel": "1"},
    "cap64": {"streamalloc.max_task_per_stream": "64"},
    "both": {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
             "ge.hcomParallel": "1", "streamalloc.max_task_per_stream": "64"},
}


def counts(path: Path, options: Mapping[str, str]) -> list[object]:
    """Logical streams, physical streams, events and the status of one model and setting."""
    graph = with_options(load_graph(path), options)
    try:
        document = plan(graph).to_json()
    except StreamallocError as error:
        return ["-", "-", "-", f"exit {error.exit_code}"]
    report = verify_plan(graph, document)
    status = "ok" if report.ok else f"verify {report.exit_code}"
    return [document["logical_stream_count"], document["physical_stream_count"],
            document["event_count"], status]


def main() -> None:
    """Print the table (aligned text, or markdown with --markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a GitHub table")
    args = parser.parse_args()
    headers = ["model"] + [f"{name} {col}" for name in SETTINGS
                           for col in ("log", "phys", "events", "status")]
    rows = [[path.name[:44]] + [cell for options in SETTINGS.values()
                                for cell in counts(path, options)]
            for path in real_models()]
    if args.markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for row in rows:
            print("| " + " | ".join(map(str, row)) + " |")
        return
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("  ".join(str(cell).rjust(w) if i else str(cell).ljust(w)
                        for i, (cell, w) in enumerate(zip(row, widths, strict=True))))


if __name__ == "__main__":
    main()
