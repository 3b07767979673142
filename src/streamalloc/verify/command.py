"""`streamalloc verify GRAPH PLAN`: load both files, verify, return (text, exit code).

Exit codes (formats.md section 5): 0 valid, 5 the plan is wrong, 4 only device limits are
exceeded, 3 a graph or plan file that cannot be read or has the wrong shape.
"""

from __future__ import annotations

from pathlib import Path

from streamalloc.errors import InputError
from streamalloc.ir.loaders import load_graph
from streamalloc.verify.plan_input import read_plan
from streamalloc.verify.report import DEFAULT_CAP
from streamalloc.verify.verifier import verify_plan


def verify_command(graph_path: str | Path, plan_path: str | Path, *,
                   cap: int = DEFAULT_CAP) -> tuple[str, int]:
    """Verify the plan file against the graph file; the text is the report or the error."""
    try:
        graph = load_graph(graph_path)
        plan = read_plan(plan_path)
        report = verify_plan(graph, plan, cap=cap)
    except InputError as exc:
        return f"error: {exc}\n", exc.exit_code
    return report.text(), report.exit_code
