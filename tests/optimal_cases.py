"""Random cases of the optimal mode and the property every one must keep.

A case is a graph (a small model of any flow, a layered graph, or one with While and If
subgraphs), the optimal mode's settings (objective, concurrency, slack, event budget,
workers), device limits (task depth, streams, events, notifies, notify mode) and a rule set
(GE's, `free`, or random user rules built on `free`, disabling some of GE's for the baseline, or
on GE's). `check_optimal_case` runs it:
the plan verifies against the rule set it records and emulates without deadlock; under
`--concurrency ge` with a baseline within the limits it is never worse than the baseline; an
event budget holds; a refusal is what ge mode says of the same rules, or an error that no plan
fits (or that ge mode fails). `tests/test_optimal_properties.py` runs a few dozen cases,
`bench/bench_optimal_properties.py` thousands.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from hypothesis import strategies as st
from test_heuristic_properties import ModelSpec, build, models
from test_optimal import control_flow_graph
from test_rule_constraints import user_rules

from streamalloc import api
from streamalloc.errors import AllocationInfeasible, InputError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.optimal import OptimalOptions
from streamalloc.rules import RuleSet, builtin_rules, ge_rules_for, load_rules
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

REFUSED = ("no plan within the device limits", "optimal mode starts from the ge-mode plan")
_FILES = itertools.count()


@dataclass(frozen=True)
class OptimalCase:
    """One run of the optimal mode: what it runs on and with."""

    graph: ModelSpec | tuple[str, int, int]  # a model, or ("layered", nodes, seed) or
    # ("control-flow", 0, seed)
    settings: dict[str, Any]
    limits: dict[str, str]
    rules: str | tuple[str, list[dict[str, object]]] | None  # "free", (base, user rules)


@st.composite
def optimal_cases(draw: st.DrawFn) -> OptimalCase:
    """A random case (see the module docstring)."""
    kind = draw(st.sampled_from(["model", "model", "layered", "control-flow"]))
    graph: ModelSpec | tuple[str, int, int]
    if kind == "model":
        graph = draw(st.sampled_from(["single", "dynamic", "multi"]).flatmap(models))
    else:
        graph = (kind, draw(st.integers(20, 120)), draw(st.integers(0, 10_000)))
    objective = draw(st.sampled_from(["events", "makespan"]))
    settings: dict[str, Any] = {
        "objective": objective, "concurrency": draw(st.sampled_from(["ge", "ge", "full"])),
        "makespan_slack": draw(st.sampled_from([0.0, 0.0, 5.0, 25.0])),
        "workers": draw(st.sampled_from([1, 1, 2])), "time_limit": 0.3}
    if objective == "makespan" and draw(st.booleans()):
        settings["event_budget"] = draw(st.integers(0, 6))
    limits = _limits(draw)
    rules = draw(st.sampled_from([None, "free", "user"]))
    if rules == "user":
        base = draw(st.sampled_from(["free", "ge-static-multi-stream"]))
        own = draw(user_rules())
        if base == "free" and draw(st.booleans()):  # GE's rules its baseline runs without
            own = [*own, {"name": draw(st.sampled_from(["parallel-group", "mini-dag",
                                                        "optimize-ineffective"])),
                          "disable": True}]
        rules = (base, own)
    return OptimalCase(graph, settings, limits, rules)


def _limits(draw: st.DrawFn) -> dict[str, str]:
    """Device limits, each in a third of the cases (most cases fit it)."""
    limits: dict[str, str] = {}
    sometimes = st.sampled_from([True, False, False])  # (each limit: most cases fit it)
    if draw(sometimes):
        # (27: GE reserves 27 units, so at 27 or less it splits before every task after a
        # stream's first; below about 10 a stream cannot hold its profiling units: refused)
        limits["streamalloc.max_task_per_stream"] = str(draw(st.sampled_from(
            [8, 20, 27, 28, 32, 64, 300])))
    elif draw(st.sampled_from([True, False, False, False])):
        limits["streamalloc.unlimited_stream_depth"] = "true"
    if draw(sometimes):
        limits["streamalloc.max_streams"] = str(draw(st.integers(1, 8)))
    if draw(sometimes):
        limits["streamalloc.max_events"] = str(draw(st.integers(1, 30)))
    if draw(sometimes):
        limits["ge.event"] = "notify"
        if draw(st.booleans()):
            limits["streamalloc.max_notifies"] = str(draw(st.integers(1, 30)))
    return limits


def case_graph(case: OptimalCase, folder: Path) -> Graph:
    """The case's graph under its device limits."""
    spec = case.graph
    if isinstance(spec, ModelSpec):
        graph = build(spec)
    elif spec[0] == "layered":
        graph = layered_graph(spec[1], seed=spec[2], label_every=7)
    else:
        path = folder / f"cf{next(_FILES)}.yaml"
        path.write_text(yaml.safe_dump(control_flow_graph(spec[2]), sort_keys=False),
                        encoding="utf-8")
        graph = load_graph(path)
    return replace(graph, options=MappingProxyType({**graph.options, **case.limits}))


def case_rules(case: OptimalCase, folder: Path) -> RuleSet | None:
    """The case's rule set (user rules are written to a file in `folder`)."""
    if case.rules is None or case.rules == "free":
        return None if case.rules is None else builtin_rules("free")
    base, rules = case.rules
    path = folder / f"user{next(_FILES)}.yaml"
    path.write_text(yaml.safe_dump({"format": "streamalloc.rules/v1", "name": "user",
                                    "extends": base, "rules": rules}), encoding="utf-8")
    return load_rules(path)


def check_optimal_case(case: OptimalCase, folder: Path) -> str:
    """Run the case and assert the property; the outcome: the solver's status, `refused`
    (no plan fits, or ge mode fails) or `rules refused` (as ge mode refuses them)."""
    graph, rules = case_graph(case, folder), case_rules(case, folder)
    options = OptimalOptions(**case.settings)
    try:
        plan, report = api.optimal_plan(graph, rules, options)
    except InputError:  # the rules: a later GE pass undoes one, or two cannot both hold
        try:
            allocate_ge(graph, ge_rules_for(rules, graph))
        except InputError:
            return "rules refused"
        raise
    except AllocationInfeasible as exc:  # no plan fits the limits, or ge mode fails
        assert str(exc).startswith(REFUSED), exc
        return "refused"
    document = plan.to_json()
    solver = report.to_json()
    checked = verify_plan(graph, document, rules=api.recorded_rules(graph, rules, report))
    assert checked.exit_code == 0, checked.text()
    assert emulate(graph, document).status == "ok"
    events = plan.event_count + plan.notify_count
    if case.settings["concurrency"] == "ge" and report.status != "FALLBACK" \
            and not solver.get("baseline_over_limit"):
        if case.settings["objective"] == "events":
            assert events <= report.baseline_events, solver
        limit = report.baseline_makespan_us * (1 + case.settings["makespan_slack"] / 100)
        assert report.makespan_us <= limit + 1e-6, solver
    budget = options.budget
    assert budget is None or events <= budget or report.status == "FALLBACK", solver
    return report.status
