"""`streamalloc verify GRAPH PLAN`: load both files, verify, return (report text, exit code).

Exit codes (README, "Exit codes"): 0 valid, 5 the plan is wrong, 4 only device limits are
exceeded; the report is the command's output. A graph or plan file that cannot be read or does
not follow its schema raises `InputError` (exit 3), which the command line prints on stderr like
every other error.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from streamalloc.ir.loaders import load_graph
from streamalloc.verify.plan_input import read_plan
from streamalloc.verify.report import DEFAULT_CAP
from streamalloc.verify.rules import plan_rule_set
from streamalloc.verify.verifier import verify_plan


def verify_command(graph_path: str | Path, plan_path: str | Path, *, rules: str | None = None,
                   settings: Mapping[str, str] | None = None,
                   cap: int = DEFAULT_CAP) -> tuple[str, int]:
    """Verify the plan file against the graph file, under the options the plan records (then
    `settings`) and its rule set (or `rules`, a file or shipped name): (report text, exit code).
    Unreadable or malformed input raises InputError."""
    plan = read_plan(plan_path)
    graph = load_graph(graph_path).with_options({**(plan.options or {}), **(settings or {})})
    report = verify_plan(graph, plan, rules=plan_rule_set(plan, rules), cap=cap)
    return report.text(), report.exit_code
