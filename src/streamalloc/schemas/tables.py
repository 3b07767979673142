"""The schemas of the comparison (`streamalloc.compare/v1`) and of the sweep results
(`streamalloc.sweep/v1`): one row per graph and mode, the same figures in both."""

from __future__ import annotations

from typing import Any

from streamalloc.schemas.parts import (
    COMPARE_FORMAT,
    COUNT,
    DRAFT,
    NULLABLE_NUMBER,
    SOLVER_STATUSES,
    SWEEP_FORMAT,
    closed,
    text,
)

_NO_PLAN_COUNT = {"type": ["integer", "null"], "minimum": 0}  # null: status NO_PLAN
_NO_PLAN_US = {"type": ["number", "null"], "minimum": 0}
_RESULT = {
    "logical_streams": _NO_PLAN_COUNT, "physical_streams": _NO_PLAN_COUNT,
    "events": {**_NO_PLAN_COUNT, "description": "events + notifies"},
    "notifies": _NO_PLAN_COUNT, "makespan_us": _NO_PLAN_US,
    "chain_sync_us": {**_NO_PLAN_US, "description": "Send and Recv time on the run's critical "
                                                    "chain"},
    "critical_path_us": _NO_PLAN_US,
    "work_over_units_us": _NO_PLAN_US,
    "status": {"enum": ["-", "OVER_LIMIT", "NO_PLAN", *SOLVER_STATUSES],
               "description": "the solver's status (optimal mode), else '-'; OVER_LIMIT for a "
                              "ge-mode plan over a device limit, NO_PLAN when the optimal mode "
                              "finds none within them, or when GE fails on the graph (every "
                              "mode; the plan figures null)"},
    "gap": {**NULLABLE_NUMBER, "minimum": 0},
    "events_bound": {"type": ["integer", "null"], "minimum": 0,
                     "description": "the optimal mode's lower bound of the events of every plan "
                                    "within its limits, else null"},
    "reason": {"type": "string"},
    "wall_s": {"type": "number", "minimum": 0, "description": "wall time (not reproducible)"},
}
_RESULT_KEYS = tuple(_RESULT)
_NIMBLE = {**_NO_PLAN_COUNT, "description": "Nimble's minimum, a reference; null where GE's "
                                            "allocation fails on the graph"}
_MAKESPAN_BOUND = {**_NO_PLAN_US, "description": "a lower bound of every plan's makespan, a "
                                                 "reference; null where no mode has a plan"}

COMPARE_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/compare-v1.json",
    "title": "streamalloc comparison",
    "description": f"format {COMPARE_FORMAT}: modes side by side per graph "
                   "(docs/compare-format.md)",
    **closed({
        "format": {"const": COMPARE_FORMAT},
        "rows": {"type": "array", "items": closed({
            "input": text("the graph file's name without its suffix"),
            "graph": text("the graph's name"), "file": text("the graph file"),
            "mode": {"enum": ["ge", "ge-minimal", "optimal"]},
            "nimble_min_events": _NIMBLE,
            "makespan_bound_us": _MAKESPAN_BOUND,
            **_RESULT,
        }, required=("input", "graph", "file", "mode", "nimble_min_events",
                     "makespan_bound_us", *_RESULT_KEYS))},
        "frontier": {"type": "array", "items": closed({
            "input": text("the graph file's name without its suffix"),
            "graph": text("the graph's name"),
            "objective": {"enum": ["events", "makespan"],
                          "description": "the optimal mode's --objective for this point"},
            "slack": {"type": ["number", "null"], "minimum": 0,
                      "description": "--makespan-slack P; null for the makespan objective"},
            "event_budget": {"type": ["integer", "null"], "minimum": 0,
                             "description": "the makespan objective's --event-budget N; null "
                                            "without one"},
            **_RESULT,
            "pareto": {"type": "boolean",
                       "description": "no other point of the graph needs no more events and "
                                      "runs no slower, one strictly"},
            "carried_from": {"type": ["integer", "null"], "minimum": 0,
                             "description": "the position among the graph's frontier points "
                                            "of the point whose run found the plan shown "
                                            "(within this point's limits); null: its own run"},
        }, required=("input", "graph", "objective", "slack", "event_budget", *_RESULT_KEYS,
                     "pareto"))},
    }, required=("format", "rows", "frontier")),
}

_SCALAR = {"type": ["string", "number", "boolean", "null"]}
SWEEP_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/sweep-v1.json",
    "title": "streamalloc sweep",
    "description": f"format {SWEEP_FORMAT}: one row per point of a sweep spec, compare's row "
                   "plus the point's parameters (docs/sweep-format.md)",
    **closed({
        "format": {"const": SWEEP_FORMAT},
        "spec": text("the sweep spec file"),
        "rows": {"type": "array", "items": closed({
            "point": {**COUNT, "description": "the point's place in the sweep's order"},
            "input": text("the graph file's name without its suffix"),
            "graph": text("the graph's name"),
            "file": text("the graph file as the spec names it"),
            "rules": text("a shipped rule set, a rule file, or default"),
            "options": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "the graph options the spec sets at this point"},
            "mode": {"enum": ["ge", "ge-minimal", "optimal"]},
            "solver": {"type": "object", "additionalProperties": _SCALAR,
                       "description": "the solver settings the spec sets (optimal mode)"},
            "nimble_min_events": _NIMBLE,
            "makespan_bound_us": _MAKESPAN_BOUND,
            **_RESULT,
            "max_rss_mb": {**NULLABLE_NUMBER, "minimum": 0,
                           "description": "peak memory of the process that ran the point "
                                          "(not reproducible)"},
        }, required=("point", "input", "graph", "file", "rules", "options", "mode", "solver",
                     "nimble_min_events", "makespan_bound_us", *_RESULT_KEYS, "max_rss_mb"))},
    }, required=("format", "spec", "rows")),
}
