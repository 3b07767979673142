"""JSON Schemas of the files streamalloc writes: plan, variable plan, emulation report, comparison.

`streamalloc schema plan|vars|emulation|compare` prints them (`graph` and `rules`, the files
users write, live beside their loaders); `SWEEP_SCHEMA` (`schema sweep`) describes the results
of `streamalloc sweep`, which no command reads back. `check_document(kind, document, source)`
validates a document against one of them and raises an `InputError` (exit 3) whose message
names the file, the field and what was expected:

    plan.json: field events[0].id: expected an integer >= 0 (up to 2147483647), found 1e+30
    (docs/plan-format.md)

Validation runs a compiled `jsonschema_rs` validator first (a 100k-node plan validates in
milliseconds); only a document that fails is validated again with `jsonschema`, for the
most relevant error and its place. The format strings are constants here, at the bottom of the
layering; the modules that write the files (sync, memory, runtime_emu, report) keep their own
constant, and a test checks that the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from streamalloc.errors import InputError
from streamalloc.validation import SchemaCheck

if TYPE_CHECKING:
    import jsonschema

PLAN_FORMAT = "streamalloc.plan/v1"
VARS_FORMAT = "streamalloc.vars/v1"
EMULATION_FORMAT = "streamalloc.emulation/v1"
COMPARE_FORMAT = "streamalloc.compare/v1"
SWEEP_FORMAT = "streamalloc.sweep/v1"

# Ids and counts are 32-bit on the device (stream, event and notify ids, task units); a plan with
# a larger number is malformed, whatever the device limits in the graph options say.
ID_MAX = 2**31 - 1
# Byte sizes, offsets and addresses of the variable plan are 64-bit.
BYTES_MAX = 2**64 - 1
STREAM_KEY = r"^(0|[1-9][0-9]*)$"
SYNC_TYPES = ("Send", "Recv", "SendNotify", "RecvNotify", "StreamActive")
SOLVER_STATUSES = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "MODEL_INVALID", "UNKNOWN", "FALLBACK")
SOLVER_PHASE = r"^(matching|(one-stream|cp-sat|windows|hint)(\+[a-z-]+)*)?$"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _id(description: str, minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": ID_MAX, "description": description}


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": description}


def _keyed(values: Mapping[str, Any], description: str) -> dict[str, Any]:
    """An object keyed by stream ids ("0", "1", ...)."""
    return {"type": "object", "description": description,
            "propertyNames": {"pattern": STREAM_KEY,
                              "description": 'a stream id key such as "0"'},
            "additionalProperties": values}


def _closed(properties: Mapping[str, Any], required: Sequence[str] = (),
            description: str = "") -> dict[str, Any]:
    """An object with exactly these keys (unknown keys are errors)."""
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False,
                              "required": list(required), "properties": dict(properties)}
    if description:
        schema["description"] = description
    return schema


_STREAM = _id("a physical stream id")
_STREAM_OR_NONE = _id("a stream id, -1 for a node without a stream", minimum=-1)
_NULLABLE_NUMBER = {"type": ["number", "null"]}

_SOLVER = {
    **_closed({
        "status": {"enum": list(SOLVER_STATUSES),
                   "description": "OPTIMAL or FEASIBLE for CP-SAT's model (makespan "
                                  "objective: the emulated makespan reaches the bound or "
                                  "not); INFEASIBLE, MODEL_INVALID or UNKNOWN when CP-SAT "
                                  "found nothing and the "
                                  "baseline's streams were polished; FALLBACK: the baseline plan"},
        "objective": {**_NULLABLE_NUMBER,
                      "description": "the model's objective; makespan objective: the "
                                     "emulated makespan in us (null: none)"},
        "bound": {**_NULLABLE_NUMBER,
                  "description": "the model's best bound; makespan objective: a lower bound "
                                 "of every plan's makespan in us (null: none)"},
        "gap": {**_NULLABLE_NUMBER, "minimum": 0,
                "description": "|objective - bound| / max(1, |objective|)"},
        "events_final": _id("events + notifies of the written plan"),
        "events_bound": {"type": ["integer", "null"], "minimum": 0,
                         "description": "fewer events + notifies than this no plan within the "
                                        "limits has (null: streams ordered otherwise too)"},
        "deterministic_time": {"type": "number", "minimum": 0,
                               "description": "CP-SAT's deterministic time"},
        "nimble_min_events": {"type": ["integer", "null"], "minimum": 0,
                              "description": "Nimble's minimum (under --concurrency full)"},
        "baseline_events": _id("events + notifies of the ge-mode baseline"),
        "baseline_makespan_us": {"type": "number", "minimum": 0},
        "makespan_us": {"type": "number", "minimum": 0},
        "phase": {"type": "string", "pattern": SOLVER_PHASE,
                  "description": "matching, one-stream, or cp-sat, windows or hint followed "
                                 "by the later steps (+fastest, +polish); empty for "
                                 "FALLBACK"},
        "reason": _text("why the baseline was kept (FALLBACK only)"),
        "baseline_over_limit": _text("why the ge-mode plan does not fit the device (a stream, "
                                     "event or notify limit): the solver's reference only"),
    }, required=("status", "objective", "bound", "gap", "events_final", "events_bound",
                 "deterministic_time",
                 "nimble_min_events", "baseline_events", "baseline_makespan_us", "makespan_us",
                 "phase"), description="the optimal mode's report"),
    "if": {"properties": {"status": {"const": "FALLBACK"}}},
    "then": {"required": ["reason"]},
}

_SYNC_NODE = {
    **_closed({
        "name": _text("the generated task's name"),
        "type": {"enum": list(SYNC_TYPES)},
        "stream": _STREAM,
        "event": {"type": "integer",
                  "description": "its event id (Send, Recv) or notify id (SendNotify, "
                                 "RecvNotify); -1 or absent for a StreamActive"},
        "peer": _text("the node it follows (Send), precedes (Recv) or was made for "
                      "(StreamActive: its StreamSwitch)"),
    }, required=("name", "type", "stream")),
    "if": {"properties": {"type": {"const": "StreamActive"}}},
    "then": {"properties": {"event": {"const": -1}}},
    "else": {"required": ["event"], "properties": {"event": _id(
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
        "graph": _text("the name of the graph the plan is for"),
        "mode": _text("the allocation mode: ge, preset or optimal (other tools may write "
                      "their own name)"),
        "sync": {"enum": ["ge", "minimal"]},
        "nodes": {"type": "object", "description": "every node of the graph and its subgraphs",
                  "additionalProperties": _closed({
                      "stream": _STREAM_OR_NONE,
                      "physical_stream": _STREAM_OR_NONE,
                      "attached_streams": {"type": "array", "items": _STREAM},
                      "rule": {"type": "string", "description": "the rule that placed it"},
                  }, required=("stream", "physical_stream"))},
        "streams": _keyed({"type": "array", "items": _text("a task: graph node or sync node")},
                          "per physical stream, its tasks in execution order"),
        "logical_stream_count": _id("logical (main) streams"),
        "physical_stream_count": _id("physical streams: ids 0..count-1"),
        "attached_stream_count": _id("attached streams, numbered after the physical ones"),
        "events": {"type": "array", "items": _closed({
            "id": _id("the event or notify id"),
            "kind": {"enum": ["event", "notify"]},
            "send": _text("the node the Send follows"),
            "recv": _text("the node the Recv precedes"),
            "send_stream": _STREAM,
            "recv_stream": _STREAM,
        }, required=("id", "send", "recv", "send_stream", "recv_stream"))},
        "event_count": _id("event ids 0..count-1"),
        "notify_count": _id("notify ids 0..count-1"),
        "stream_activations": {"type": "object", "description": "activator -> streams it starts",
                               "additionalProperties": {"type": "array", "items": _STREAM}},
        "split_to_logic": _keyed(_STREAM, "physical stream -> the logical stream it comes from"),
        "huge_streams": {"type": "array", "items": _STREAM},
        "tasks": _keyed(_id("task units"), "per physical stream, its task units"),
        "sync_nodes": {"type": "array", "items": _SYNC_NODE},
        "summary": {"type": "object", "properties": {
            "user_stream_labels": {"type": "array", "items": {"type": "string"}},
            "hccl_followed_stream_count": _id("HCCL-followed streams"),
            "logical_stream_count": _id("logical streams"),
            "attached_stream_ids": {"type": "array", "items": _STREAM},
            "assigned_by_stream_pass": {"type": "boolean"},
        }},
        "options": {"type": "object", "additionalProperties": {"type": "string"},
                    "description": "the graph options in force"},
        "rules": {"type": ["object", "null"], "additionalProperties": False,
                  "required": ["name", "digest"],
                  "properties": {"name": _text("the rule set's name"),
                                 "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$",
                                            "description": "sha256:<64 hex digits>"}}},
        "solver": _SOLVER,
    },
}

_VARIABLE = _closed({
    "key": _text("GE's variable key: name + format + '_' + dtype"),
    "kind": {"enum": ["Variable", "VariableV2", "Constant", "Const", "FileConstant",
                      "ConstPlaceHolder"]},
    "mem_type": _text("HBM, RDMA_HBM, HOST, P2P_DDR, or the memory type code in hex"),
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
    **_closed({
        "format": {"const": VARS_FORMAT},
        "graph": _text("the graph's name"),
        "session": {"type": "integer", "minimum": 0},
        "variables": {"type": "object", "additionalProperties": _VARIABLE},
        "total_size": _closed({t: {"type": "integer", "minimum": 0, "maximum": BYTES_MAX}
                               for t in ("HBM", "RDMA_HBM", "HOST")},
                              required=("HBM", "RDMA_HBM", "HOST")),
    }, required=("format", "graph", "session", "variables", "total_size")),
}

_US = {"type": "number", "minimum": 0}
_COUNT = {"type": "integer", "minimum": 0}
_STREAM_POOL = {
    "type": "object", "required": ["runtime", "requested", "created", "reused"],
    "properties": {"runtime": {"enum": ["v1", "v2"]}, "capacity": _COUNT, "requested": _COUNT,
                   "created": _COUNT, "reused": _COUNT, "pool_size": _COUNT},
    "additionalProperties": False,
}
_DEADLOCK = _closed({
    "stream": _COUNT, "task": _text("the task the stream waits at"),
    "waits_for": {"enum": ["event", "notify", "activation"]},
    "id": {"type": ["integer", "null"], "minimum": 0},
    "by": {"type": "array", "items": _closed(
        {"task": _text("a task that could give it"),
         "stream": {"type": ["integer", "null"], "minimum": 0}}, required=("task", "stream"))},
}, required=("stream", "task", "waits_for", "id", "by"))
_VIOLATION = _closed({
    "kind": {"enum": ["early_start", "unsynchronized", "unordered_reuse"]},
    "producer": _text("the earlier task"), "consumer": _text("the later task"),
    "producer_stream": _COUNT, "consumer_stream": _COUNT,
    "producer_end_us": {"type": ["number", "null"], "minimum": 0},
    "consumer_start_us": _US,
    "event": {"type": "string", "pattern": "^(event|notify) [0-9]+$"},
}, required=("kind", "producer", "consumer", "producer_stream", "consumer_stream",
             "producer_end_us", "consumer_start_us"))

EMULATION_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/emulation-v1.json",
    "title": "streamalloc emulation report",
    "description": f"format {EMULATION_FORMAT}: one run of a plan on the emulated device "
                   "(docs/emulation-report.md)",
    **_closed({
        "format": {"const": EMULATION_FORMAT},
        "graph": _text("the graph's name"),
        "makespan_us": _US,
        "status": {"enum": ["ok", "deadlock", "violation"]},
        "streams": _keyed(_closed({"busy_us": _US, "idle_us": _US, "tasks": _COUNT},
                                  required=("busy_us", "idle_us", "tasks")),
                          "per stream: busy and idle time, tasks"),
        "event_records": _COUNT, "event_waits": _COUNT,
        "lower_bounds": _closed({"critical_path_us": _US, "work_over_units_us": _US},
                                required=("critical_path_us", "work_over_units_us")),
        "tasks": _COUNT, "notify_records": _COUNT, "notify_waits": _COUNT,
        "engines": {"type": "object", "additionalProperties": _closed(
            {"units": {"type": "integer", "minimum": 1}, "tasks": _COUNT, "busy_us": _US,
             "utilization": {"type": "number", "minimum": 0, "maximum": 1}},
            required=("units", "tasks", "busy_us", "utilization"))},
        "stream_pool": _STREAM_POOL,
        "device": _closed({"name": {"type": "string"}, "cost_table": {"type": "string"}},
                          required=("name", "cost_table")),
        "variables": {"type": "object", "required": ["count", "bytes", "extent"],
                      "properties": {"count": _COUNT,
                                     "bytes": {"type": "object", "additionalProperties": _COUNT},
                                     "extent": {"type": "object",
                                                "additionalProperties": _COUNT},
                                     "loader": {"type": "object"}}},
        "deadlock": {"type": "array", "minItems": 1, "items": _DEADLOCK},
        "violations": {"type": "array", "items": _VIOLATION},
        "violation_count": {"type": "integer", "minimum": 1},
        "sync_warnings": _closed({
            "lost_records": _COUNT,
            "unconsumed": {"type": "array", "items": _closed(
                {"kind": {"enum": ["event", "notify"]}, "id": _COUNT}, required=("kind", "id"))},
        }, required=("lost_records", "unconsumed")),
    }, required=("format", "graph", "makespan_us", "status", "streams", "event_records",
                 "event_waits", "lower_bounds", "tasks", "notify_records", "notify_waits",
                 "engines", "stream_pool", "device")),
    "allOf": [
        {"if": {"properties": {"status": {"const": "deadlock"}}},
         "then": {"required": ["deadlock"]}},
        {"if": {"properties": {"status": {"const": "violation"}}},
         "then": {"required": ["violations", "violation_count"]}},
    ],
}

_NO_PLAN_COUNT = {"type": ["integer", "null"], "minimum": 0}  # null: status NO_PLAN
_NO_PLAN_US = {"type": ["number", "null"], "minimum": 0}
_RESULT = {
    "logical_streams": _NO_PLAN_COUNT, "physical_streams": _NO_PLAN_COUNT,
    "events": {**_NO_PLAN_COUNT, "description": "events + notifies"},
    "notifies": _NO_PLAN_COUNT, "makespan_us": _NO_PLAN_US, "critical_path_us": _NO_PLAN_US,
    "work_over_units_us": _NO_PLAN_US,
    "status": {"enum": ["-", "OVER_LIMIT", "NO_PLAN", *SOLVER_STATUSES],
               "description": "the solver's status (optimal mode), else '-'; OVER_LIMIT for a "
                              "ge-mode plan over a device limit, NO_PLAN when the optimal mode "
                              "finds none within them (its plan figures null)"},
    "gap": {**_NULLABLE_NUMBER, "minimum": 0},
    "events_bound": {"type": ["integer", "null"], "minimum": 0,
                     "description": "the optimal mode's lower bound of the events of every plan "
                                    "within its limits, else null"},
    "reason": {"type": "string"},
    "wall_s": {"type": "number", "minimum": 0, "description": "wall time (not reproducible)"},
}
_RESULT_KEYS = tuple(_RESULT)

COMPARE_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT,
    "$id": "https://streamalloc.dev/schema/compare-v1.json",
    "title": "streamalloc comparison",
    "description": f"format {COMPARE_FORMAT}: modes side by side per graph "
                   "(docs/compare-format.md)",
    **_closed({
        "format": {"const": COMPARE_FORMAT},
        "rows": {"type": "array", "items": _closed({
            "input": _text("the graph file's name without its suffix"),
            "graph": _text("the graph's name"), "file": _text("the graph file"),
            "mode": {"enum": ["ge", "ge-minimal", "optimal"]},
            "nimble_min_events": {**_COUNT, "description": "Nimble's minimum, a reference"},
            "makespan_bound_us": {**_US, "description": "a lower bound of every plan's "
                                                        "makespan, a reference"},
            **_RESULT,
        }, required=("input", "graph", "file", "mode", "nimble_min_events",
                     "makespan_bound_us", *_RESULT_KEYS))},
        "frontier": {"type": "array", "items": _closed({
            "input": _text("the graph file's name without its suffix"),
            "graph": _text("the graph's name"),
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
    **_closed({
        "format": {"const": SWEEP_FORMAT},
        "spec": _text("the sweep spec file"),
        "rows": {"type": "array", "items": _closed({
            "point": {**_COUNT, "description": "the point's place in the sweep's order"},
            "input": _text("the graph file's name without its suffix"),
            "graph": _text("the graph's name"),
            "file": _text("the graph file as the spec names it"),
            "rules": _text("a shipped rule set, a rule file, or default"),
            "options": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "the graph options the spec sets at this point"},
            "mode": {"enum": ["ge", "ge-minimal", "optimal"]},
            "solver": {"type": "object", "additionalProperties": _SCALAR,
                       "description": "the solver settings the spec sets (optimal mode)"},
            "nimble_min_events": {**_COUNT, "description": "Nimble's minimum, a reference"},
            "makespan_bound_us": {**_US, "description": "a lower bound of every plan's "
                                                        "makespan, a reference"},
            **_RESULT,
            "max_rss_mb": {**_NULLABLE_NUMBER, "minimum": 0,
                           "description": "peak memory of the process that ran the point "
                                          "(not reproducible)"},
        }, required=("point", "input", "graph", "file", "rules", "options", "mode", "solver",
                     "nimble_min_events", "makespan_bound_us", *_RESULT_KEYS, "max_rss_mb"))},
    }, required=("format", "spec", "rows")),
}

SCHEMAS: Mapping[str, dict[str, Any]] = {
    "plan": PLAN_SCHEMA, "vars": VARS_SCHEMA, "emulation": EMULATION_SCHEMA,
    "compare": COMPARE_SCHEMA, "sweep": SWEEP_SCHEMA,
}
# What each kind of document is called in messages, and the document that describes it.
_NOUNS = {"plan": ("the plan", "docs/plan-format.md"),
          "vars": ("the variable plan", "docs/vars-format.md"),
          "emulation": ("the report", "docs/emulation-report.md"),
          "compare": ("the comparison", "docs/compare-format.md"),
          "sweep": ("the sweep results", "docs/sweep-format.md")}


@cache
def schema_check(kind: str) -> SchemaCheck:
    """The checks of one kind's schema (`plan`, `vars`, `emulation`, `compare`, `sweep`)."""
    return SchemaCheck(SCHEMAS[kind])


def check_document(kind: str, document: Any, source: str) -> None:
    """Raise InputError (exit 3) naming `source`, the field and the expected value when
    `document` does not follow the schema of `kind`."""
    check = schema_check(kind)
    if check.is_valid(document):
        return
    error = check.first_error(document)
    noun, doc = _NOUNS[kind]
    if error is None:  # the two validators disagree: report what the fast one saw
        raise InputError(f"{source}: {check.fast_message(document)} ({doc})")
    raise InputError(f"{source}: {describe(error, noun, SCHEMAS[kind])} ({doc})")


def describe(error: jsonschema.ValidationError, noun: str = "the document",
             root: Mapping[str, Any] | None = None) -> str:
    """`field F: expected X, found Y` for one schema error; `root` is the whole schema (for
    the expected value of a missing key)."""
    where = field_name(error)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    instance: Any = error.instance
    if error.validator == "required":
        missing = next(k for k in schema.get("required", ()) if k not in instance)
        wanted = _property_schema(error, missing, root or {})
        return (f"field {_join(where, missing)}: expected {expected(wanted)}, found nothing "
                f"(missing key {missing!r})")
    if error.validator == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(instance) - set(known))
        return (f"field {where or noun}: unknown key {', '.join(map(repr, extra))}; valid keys: "
                f"{', '.join(known)}")
    if "propertyNames" in error.schema_path:
        return f"field {where or noun} key {error.instance!r}: expected {expected(schema)}"
    return f"field {where or noun}: expected {expected(schema)}, found {_shown(error.instance)}"


def expected(schema: Mapping[str, Any]) -> str:
    """What a schema asks for, in words: `an integer >= 0`, `a non-empty string`, ..."""
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        values = schema["enum"]
        if len(values) == 2:
            return f"{values[0]!r} or {values[1]!r}"
        return "one of " + ", ".join(map(str, values))
    if "pattern" in schema:
        return str(schema.get("description") or f"a string matching {schema['pattern']}")
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = [_type_word(kind, schema) for kind in kinds]
    return " or ".join(words) if words else "a valid value"


def _type_word(kind: str, schema: Mapping[str, Any]) -> str:
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        word = "an integer" if kind == "integer" else "a number"
        if low is not None:
            word += f" >= {low}"
        return word + (f" (up to {high})" if high is not None else "")
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    return {"object": "a JSON object", "array": "a JSON list", "boolean": "true or false",
            "null": "null"}.get(kind, kind)


def field_name(error: jsonschema.ValidationError) -> str:
    """The document path of an error as people write it: `nodes['a'].stream`, `events[0].id`.

    Fixed keys (a schema's `properties`) read `.key`, keys chosen by the document (node names,
    stream ids) read `['key']`, list items `[i]`; which is which comes from the schema path.
    """
    doc, text, i = list(error.absolute_path), "", 0
    steps = list(error.absolute_schema_path)
    for k, step in enumerate(steps):
        if i >= len(doc):
            break
        if step == "properties" and k + 1 < len(steps):
            text = _join(text, str(doc[i]))
        elif step in ("additionalProperties", "patternProperties"):
            text += f"[{doc[i]!r}]"
        elif step in ("items", "prefixItems"):
            text += f"[{doc[i]}]"
        else:
            continue
        i += 1
    for rest in doc[i:]:
        text += f"[{rest}]" if isinstance(rest, int) else f"[{rest!r}]"
    return text


def _property_schema(error: jsonschema.ValidationError, key: str,
                     root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema of property `key` of the object a `required` error is about: the innermost
    schema on the error's schema path that declares it (also outside an `if`/`else` branch)."""
    found: Mapping[str, Any] = {}
    node: Any = root
    for step in error.absolute_schema_path:
        if isinstance(node, Mapping) and key in node.get("properties", {}):
            found = node["properties"][key]
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    return found


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."
