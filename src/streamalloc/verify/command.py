"""`streamalloc verify GRAPH PLAN`: load both files, verify, return (text, exit code).

Exit codes (formats.md section 5): 0 valid, 5 the plan is wrong, 4 only device limits are
exceeded, 3 a graph or plan file that cannot be read or has the wrong shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from streamalloc.errors import InputError
from streamalloc.ir.loaders import load_graph
from streamalloc.verify.plan_input import read_plan
from streamalloc.verify.report import DEFAULT_CAP
from streamalloc.verify.rules import plan_rule_set
from streamalloc.verify.verifier import verify_plan


def verify_command(graph_path: str | Path, plan_path: str | Path, *, rules: str | None = None,
                   settings: Mapping[str, str] | None = None,
                   cap: int = DEFAULT_CAP) -> tuple[str, int]:
    """Verify the plan file against the graph file, under the options the plan records (then
    `settings`) and its rule set (or `rules`, a file or shipped name); the text is the report
    or the error."""
    try:
        plan = read_plan(plan_path)
        graph = load_graph(graph_path).with_options({**(plan.options or {}),
                                                     **(settings or {})})
        report = verify_plan(graph, plan, rules=plan_rule_set(plan, rules), cap=cap)
    except InputError as exc:
        return f"error: {exc}\n", exc.exit_code
    return report.text(), report.exit_code
