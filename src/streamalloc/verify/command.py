"""`streamalloc verify GRAPH PLAN`: load both files, verify, return (report text, exit code).

Exit codes (README, "Exit codes"): 0 valid, 5 the plan is wrong, 4 only device limits are
exceeded; the report is the command's output. A graph or plan file that cannot be read or does
not follow its schema raises `InputError` (exit 3), which the command line prints on stderr like
every other error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.options import check_options
from streamalloc.verify.plan_input import read_plan
from streamalloc.verify.report import DEFAULT_CAP
from streamalloc.verify.shared_start import race_cause
from streamalloc.verify.verifier import verify_plan


def verify_command(graph_path: str | Path | Graph, plan_path: str | Path, *,
                   rules: str | None = None, settings: Mapping[str, str] | None = None,
                   cap: int = DEFAULT_CAP, json_out: bool = False) -> tuple[str, int]:
    """Verify the plan file against the graph file, under the options the plan records (then
    `settings`) and its rule set (or `rules`, a file or shipped name): (report text, exit code).
    `graph_path` may be a graph already loaded. Unreadable or malformed input raises
    InputError; so do bad options (`ir.options.check_options`, run on the merged options)."""
    from streamalloc.verify.rules import plan_rule_set  # not loaded by `emulate`'s check
    plan = read_plan(plan_path)
    loaded = graph_path if isinstance(graph_path, Graph) else load_graph(graph_path)
    graph = loaded.with_options({**(plan.options or {}), **(settings or {})})
    rule_set = plan_rule_set(plan, rules, graph)
    check_options(graph, rule_set.gate_options() if rule_set is not None else (), settings)
    report = verify_plan(graph, plan, rules=rule_set, cap=cap)
    if json_out:
        return json.dumps(report.to_json(), indent=1) + "\n", report.exit_code
    cause = race_cause(report, plan.activations, plan.sync)
    return report.text() + (f"cause: {cause}\n" if cause else ""), report.exit_code
