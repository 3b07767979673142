"""The schemas of the variable plan (`streamalloc.vars/v1`), of the emulation report
(`streamalloc.emulation/v1`) and of the graph summary (`streamalloc.show/v1`)."""

from __future__ import annotations

from typing import Any

from streamalloc.schemas.parts import (
    BYTES_MAX,
    COUNT,
    DRAFT,
    EMULATION_FORMAT,
    SHOW_FORMAT,
    US,
    VARS_FORMAT,
    closed,
    keyed,
    text,
)

_VARIABLE = closed({
    "key": text("GE's variable key: name + format + '_' + dtype"),
    "kind": {"enum": ["Variable", "VariableV2", "Constant", "Const", "FileConstant",
                      "ConstPlaceHolder"]},
    "mem_type": text("HBM, RDMA_HBM, HOST, P2P_DDR, or the memory type code in hex"),
    "offset": {"type": "integer", "minimum": 0, "maximum": BYTES_MAX},
    "size": {"type": "integer", "minimum": 0, "maximum": BYTES_MAX},
    "logical_address": {"type": "integer", "minimum": 0, "maximum": BYTES_MAX},
    "reused_from": {"type": ["string", "null"], "minLength": 1},
}, required=("key", "kind", "mem_type", "offset", "size", "logical_address", "reused_from"))

VARS_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/vars-v1.json",
    "title": "streamalloc variable plan",
    "description": f"format {VARS_FORMAT}: where every variable and constant lives "
                   "(docs/vars-format.md)",
    **closed({
        "format": {"const": VARS_FORMAT},
        "graph": text("the graph's name"),
        "session": {"type": "integer", "minimum": 0},
        "variables": {"type": "object", "additionalProperties": _VARIABLE},
        "total_size": closed({t: {"type": "integer", "minimum": 0, "maximum": BYTES_MAX}
                               for t in ("HBM", "RDMA_HBM", "HOST")},
                              required=("HBM", "RDMA_HBM", "HOST")),
    }, required=("format", "graph", "session", "variables", "total_size")),
}

_STREAM_POOL = {
    "type": "object", "required": ["runtime", "requested", "created", "reused"],
    "properties": {"runtime": {"enum": ["v1", "v2"]}, "capacity": COUNT, "requested": COUNT,
                   "created": COUNT, "reused": COUNT, "pool_size": COUNT},
    "additionalProperties": False,
}
_DEADLOCK = closed({
    "stream": COUNT, "task": text("the task the stream waits at"),
    "waits_for": {"enum": ["event", "notify", "activation"]},
    "id": {"type": ["integer", "null"], "minimum": 0},
    "by": {"type": "array", "items": closed(
        {"task": text("a task that could give it"),
         "stream": {"type": ["integer", "null"], "minimum": 0}}, required=("task", "stream"))},
}, required=("stream", "task", "waits_for", "id", "by"))
_VIOLATION = closed({
    "kind": {"enum": ["early_start", "unsynchronized", "unordered_reuse"]},
    "producer": text("the earlier task"), "consumer": text("the later task"),
    "producer_stream": COUNT, "consumer_stream": COUNT,
    "producer_end_us": {"type": ["number", "null"], "minimum": 0},
    "consumer_start_us": US,
    "event": {"type": "string", "pattern": "^(event|notify) [0-9]+$"},
}, required=("kind", "producer", "consumer", "producer_stream", "consumer_stream",
             "producer_end_us", "consumer_start_us"))

EMULATION_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/emulation-v1.json",
    "title": "streamalloc emulation report",
    "description": f"format {EMULATION_FORMAT}: one run of a plan on the emulated device "
                   "(docs/emulation-report.md)",
    **closed({
        "format": {"const": EMULATION_FORMAT},
        "graph": text("the graph's name"),
        "makespan_us": US,
        "status": {"enum": ["ok", "deadlock", "violation"]},
        "streams": keyed(closed({"busy_us": US, "idle_us": US, "tasks": COUNT},
                                  required=("busy_us", "idle_us", "tasks")),
                          "per stream: busy and idle time, tasks"),
        "event_records": COUNT, "event_waits": COUNT,
        "lower_bounds": closed({"critical_path_us": US, "work_over_units_us": US},
                                required=("critical_path_us", "work_over_units_us")),
        "tasks": COUNT, "notify_records": COUNT, "notify_waits": COUNT,
        "engines": {"type": "object", "additionalProperties": closed(
            {"units": {"type": "integer", "minimum": 1}, "tasks": COUNT, "busy_us": US,
             "utilization": {"type": "number", "minimum": 0, "maximum": 1}},
            required=("units", "tasks", "busy_us", "utilization"))},
        "stream_pool": _STREAM_POOL,
        "device": closed({"name": {"type": "string"}, "cost_table": {"type": "string"}},
                          required=("name", "cost_table")),
        "critical_chain": closed({
            "tasks": COUNT, "graph_task_us": US,
            "engines": {"type": "object", "additionalProperties": US},
            "send_us": US, "recv_us": US, "gap_us": US, "event_hops": COUNT,
            "unit_waits": COUNT,
        }, required=("tasks", "graph_task_us", "engines", "send_us", "recv_us", "gap_us",
                     "event_hops", "unit_waits")),
        "variables": {"type": "object", "required": ["count", "bytes", "extent"],
                      "properties": {"count": COUNT,
                                     "bytes": {"type": "object", "additionalProperties": COUNT},
                                     "extent": {"type": "object",
                                                "additionalProperties": COUNT},
                                     "loader": {"type": "object"}}},
        "deadlock": {"type": "array", "minItems": 1, "items": _DEADLOCK},
        "violations": {"type": "array", "items": _VIOLATION},
        "violation_count": {"type": "integer", "minimum": 1},
        "sync_warnings": closed({
            "lost_records": COUNT,
            "unconsumed": {"type": "array", "items": closed(
                {"kind": {"enum": ["event", "notify"]}, "id": COUNT}, required=("kind", "id"))},
        }, required=("lost_records", "unconsumed")),
    }, required=("format", "graph", "makespan_us", "status", "streams", "event_records",
                 "event_waits", "lower_bounds", "tasks", "notify_records", "notify_waits",
                 "engines", "stream_pool", "device")),
    "allOf": [
        {"if": {"properties": {"status": {"const": "deadlock"}}},
         "then": {"required": ["deadlock"]}},
        {"if": {"properties": {"status": {"const": "ok"}}},
         "then": {"required": ["critical_chain"]}},
        {"if": {"properties": {"status": {"const": "violation"}}},
         "then": {"required": ["violations", "violation_count"]}},
    ],
}

_NAMES = {"type": "array", "items": text("a node name")}
_SUBGRAPH = closed({
    "id": text("<graph>/sg<L-order position>, or the id the graph file's partition gives"),
    "engine": text("the cluster engine: the engine table row the subgraph runs on"),
    "scheduler_id": {"type": "string", "description": "the engine row's scheduler id"},
    "stream_label": {"type": "string", "description": "the stream label after GE's label "
                                                      "pre-processing; empty: none"},
    "user_stream_label": {"type": "string", "description": "the user stream label; empty: none"},
    "independent": {"type": "boolean"}, "attach": {"type": "boolean"},
    "skip_assign_stream": {"type": "boolean"},
    "force_attach": {"type": "boolean",
                     "description": "a member carries _force_attach_stream"},
    "max_parallel_num": {"type": "integer", "minimum": 1,
                         "description": "the engine's ge.streamMaxParallelNum, 1 if unlisted"},
    "nodes": {**_NAMES, "minItems": 1, "description": "the members, in G-order"},
    "preds": {"type": "array", "items": text("a subgraph id"),
              "description": "the subgraphs of the same graph feeding a member, in L-order"},
    "succs": {"type": "array", "items": text("a subgraph id"),
              "description": "the subgraphs of the same graph a member feeds, in L-order"},
}, required=("id", "engine", "scheduler_id", "stream_label", "user_stream_label",
             "independent", "attach", "skip_assign_stream", "force_attach", "max_parallel_num",
             "nodes", "preds", "succs"))

SHOW_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/show-v1.json",
    "title": "streamalloc graph summary",
    "description": f"format {SHOW_FORMAT}: a graph's nodes and GE's engine subgraphs "
                   "(docs/show-format.md)",
    **closed({
        "format": {"const": SHOW_FORMAT},
        "graph": text("the graph's name"),
        "nodes": {"type": "object", "description": "per node name, every graph's nodes in "
                                                   "T-order",
                  "additionalProperties": closed({
                      "type": text("the op type"),
                      "engine": text("the node's engine"),
                      "graph": text("the graph the node belongs to"),
                  }, required=("type", "engine", "graph"))},
        "partitions": {"type": "object", "description": "per graph name, root first, then the "
                                                        "subgraphs in R-order",
                       "additionalProperties": closed({
                           "outside": {**_NAMES, "description": "the graph's nodes in no "
                                                                "subgraph, in G-order"},
                           "subgraphs": {"type": "array", "items": _SUBGRAPH,
                                         "description": "the engine subgraphs, in L-order"},
                       }, required=("outside", "subgraphs"))},
    }, required=("format", "graph", "nodes", "partitions")),
}
