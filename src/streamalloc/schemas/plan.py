"""The plan file's schema (`streamalloc.plan/v1`, docs/plan-format.md), the optimal mode's
`solver` block included."""

from __future__ import annotations

from typing import Any

from streamalloc.schemas.parts import (
    DRAFT,
    NULLABLE_NUMBER,
    PLAN_FORMAT,
    SOLVER_PHASE,
    SOLVER_STATUSES,
    STREAM,
    STREAM_OR_NONE,
    SYNC_TYPES,
    closed,
    ident,
    keyed,
    text,
)

_SOLVER = {
    **closed({
        "status": {"enum": list(SOLVER_STATUSES),
                   "description": "OPTIMAL or FEASIBLE for CP-SAT's model (makespan "
                                  "objective: the emulated makespan reaches the bound or "
                                  "not); INFEASIBLE, MODEL_INVALID or UNKNOWN when CP-SAT "
                                  "found nothing and the "
                                  "baseline's streams were polished; FALLBACK: the baseline plan"},
        "objective": {**NULLABLE_NUMBER,
                      "description": "the model's objective; makespan objective: the "
                                     "emulated makespan in us (null: none)"},
        "bound": {**NULLABLE_NUMBER,
                  "description": "the model's best bound; makespan objective: a lower bound "
                                 "of every plan's makespan in us (null: none)"},
        "gap": {**NULLABLE_NUMBER, "minimum": 0,
                "description": "|objective - bound| / max(1, |objective|)"},
        "events_final": ident("events + notifies of the written plan"),
        "events_bound": {"type": ["integer", "null"], "minimum": 0,
                         "description": "fewer events + notifies than this no plan within the "
                                        "limits has (null: streams ordered otherwise too)"},
        "deterministic_time": {"type": "number", "minimum": 0,
                               "description": "CP-SAT's deterministic time"},
        "nimble_min_events": {"type": ["integer", "null"], "minimum": 0,
                              "description": "Nimble's minimum (under --concurrency full)"},
        "baseline_events": ident("events + notifies of the ge-mode baseline"),
        "baseline_makespan_us": {"type": "number", "minimum": 0},
        "makespan_us": {"type": "number", "minimum": 0},
        "phase": {"type": "string", "pattern": SOLVER_PHASE,
                  "description": "matching, one-stream, cp-sat, windows or hint followed "
                                 "by the later steps (+fastest, +polish); empty for "
                                 "FALLBACK"},
        "reason": text("why the baseline was kept (FALLBACK only)"),
        "baseline_over_limit": text("why the ge-mode plan does not fit the device (a stream, "
                                     "event or notify limit): the solver's reference only"),
    }, required=("status", "objective", "bound", "gap", "events_final", "events_bound",
                 "deterministic_time",
                 "nimble_min_events", "baseline_events", "baseline_makespan_us", "makespan_us",
                 "phase"), description="the optimal mode's report"),
    "if": {"properties": {"status": {"const": "FALLBACK"}}},
    "then": {"required": ["reason"]},
}

_SYNC_NODE = {
    **closed({
        "name": text("the generated task's name"),
        "type": {"enum": list(SYNC_TYPES)},
        "stream": STREAM,
        "event": {"type": "integer",
                  "description": "its event id (Send, Recv) or notify id (SendNotify, "
                                 "RecvNotify); -1 or absent for a StreamActive"},
        "peer": text("the node it follows (Send), precedes (Recv) or was made for "
                      "(StreamActive: its StreamSwitch)"),
    }, required=("name", "type", "stream")),
    "if": {"properties": {"type": {"const": "StreamActive"}}},
    "then": {"properties": {"event": {"const": -1}}},
    "else": {"required": ["event"], "properties": {"event": ident(
        "the event id (Send, Recv) or notify id (SendNotify, RecvNotify)")}},
}

PLAN_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/plan-v1.json",
    "title": "streamalloc plan file",
    "description": f"format {PLAN_FORMAT}: streams, events and activation of one graph "
                   "(docs/plan-format.md). Other tools may add top-level keys.",
    "type": "object",
    "required": ["format", "graph", "nodes", "streams", "physical_stream_count", "event_count",
                 "notify_count"],
    "properties": {
        "format": {"const": PLAN_FORMAT},
        "graph": text("the name of the graph the plan is for"),
        "mode": text("the allocation mode: ge, preset or optimal (other tools may write "
                      "their own name)"),
        "sync": {"enum": ["ge", "minimal"]},
        "nodes": {"type": "object", "description": "every node of the graph and its subgraphs",
                  "additionalProperties": closed({
                      "stream": STREAM_OR_NONE,
                      "physical_stream": STREAM_OR_NONE,
                      "attached_streams": {"type": "array", "items": STREAM},
                      "rule": {"type": "string", "description": "the rule that placed it"},
                  }, required=("stream", "physical_stream"))},
        "streams": keyed({"type": "array", "items": text("a task: graph node or sync node")},
                          "per physical stream, its tasks in execution order"),
        "logical_stream_count": ident("logical (main) streams"),
        "physical_stream_count": ident("physical streams: ids 0..count-1"),
        "attached_stream_count": ident("attached streams, numbered after the physical ones"),
        "events": {"type": "array", "items": closed({
            "id": ident("the event or notify id"),
            "kind": {"enum": ["event", "notify"]},
            "send": text("the node the Send follows"),
            "recv": text("the node the Recv precedes"),
            "send_stream": STREAM,
            "recv_stream": STREAM,
        }, required=("id", "send", "recv", "send_stream", "recv_stream"))},
        "event_count": ident("event ids 0..count-1"),
        "notify_count": ident("notify ids 0..count-1"),
        "stream_activations": {"type": "object", "description": "activator -> streams it starts",
                               "additionalProperties": {"type": "array", "items": STREAM}},
        "split_to_logic": keyed(STREAM, "physical stream -> the logical stream it comes from"),
        "huge_streams": {"type": "array", "items": STREAM},
        "tasks": keyed(ident("task units"), "per physical stream, its task units"),
        "sync_nodes": {"type": "array", "items": _SYNC_NODE},
        "summary": {"type": "object", "properties": {
            "user_stream_labels": {"type": "array", "items": {"type": "string"}},
            "hccl_followed_stream_count": ident("HCCL-followed streams"),
            "logical_stream_count": ident("logical streams"),
            "attached_stream_ids": {"type": "array", "items": STREAM},
            "assigned_by_stream_pass": {"type": "boolean"},
        }},
        "options": {"type": "object", "additionalProperties": {"type": "string"},
                    "description": "the graph options in force"},
        "rules": {"type": ["object", "null"], "additionalProperties": False,
                  "required": ["name", "digest"],
                  "properties": {"name": text("the rule set's name"),
                                 "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$",
                                            "description": "sha256:<64 hex digits>"}}},
        "solver": _SOLVER,
    },
}
