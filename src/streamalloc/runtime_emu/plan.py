"""The plan file the emulator consumes (docs/plan-format.md), read and checked for structure.

Only what the emulator needs is kept: the per-stream task order, the generated sync nodes, the
event list, the stream activations and the stream counts. A plan file is validated against the
plan schema first, as `verify` does (`streamalloc schema plan`, `validate_plan`); unknown
top-level keys are allowed (other tools may add some); a wrong type or a missing required key is
an `InputError` that names the file and the field. Whether the names exist in the graph is
checked when the plan is compiled against a graph (`program.compile_program`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from streamalloc.plan_fields import PlanFields, read_plan_json
from streamalloc.schemas import PLAN_FORMAT, check_document

SYNC_TYPES = ("Send", "Recv", "SendNotify", "RecvNotify")
# Generated nodes that are neither graph nodes nor Send/Recv (GE's switch handling adds
# StreamActive nodes, sync spec 6.3).
EXTRA_GENERATED_TYPES = ("StreamActive",)


class SyncNode(NamedTuple):
    """A generated node: Send/Recv (event id), SendNotify/RecvNotify (notify id), StreamActive.

    A NamedTuple rather than a frozen dataclass: plans carry hundreds of thousands of them.
    """

    name: str
    type: str
    stream: int
    event: int | None


class PlanEvent(NamedTuple):
    """One entry of the plan's `events` list (the sync pair between two graph nodes)."""

    id: int
    kind: str
    send: str
    recv: str
    send_stream: int
    recv_stream: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A plan as the emulator sees it. `streams` is ordered by stream id."""

    source: str
    graph: str
    mode: str
    streams: Mapping[int, tuple[str, ...]]
    sync_nodes: Mapping[str, SyncNode]
    events: tuple[PlanEvent, ...]
    stream_activations: Mapping[str, tuple[int, ...]]
    physical_stream_count: int
    attached_stream_count: int
    event_count: int
    notify_count: int
    logical_stream_count: int | None = None  # the attached streams' ids follow the logical ones

    def stream_of(self) -> dict[str, tuple[int, int]]:
        """Task name -> (stream, position in that stream)."""
        return {name: (sid, pos) for sid, names in self.streams.items()
                for pos, name in enumerate(names)}


# The top-level fields of a plan file that running it reads (`plan_from_dict`) and the options
# it records; not `nodes`, which is most of a plan file (10.8 of 15.7 MB at 100k nodes):
# decoding only these takes a fifth of the time. A field the file lacks stays UNSET.
_RunFields = msgspec.defstruct("_RunFields", [(name, Any, msgspec.UNSET) for name in (
    "format", "graph", "mode", "streams", "sync_nodes", "events", "stream_activations",
    "physical_stream_count", "attached_stream_count", "event_count", "notify_count",
    "logical_stream_count", "options")])
_RUN_FIELDS = msgspec.json.Decoder(_RunFields)


def read_run_fields(data: bytes) -> dict[str, Any] | None:
    """The fields of a plan file's bytes that running it reads, as the JSON object holds them
    (None when they do not decode this way: `plan_fields.plan_json` says why). Not checked
    against the schema: a caller runs the plan only after the whole file passed it."""
    try:
        fields = _RUN_FIELDS.decode(data)
    except msgspec.DecodeError:
        return None
    values = {name: getattr(fields, name) for name in fields.__struct_fields__}
    return {name: value for name, value in values.items() if value is not msgspec.UNSET}


def load_plan(path: str | Path) -> Plan:
    """Read a plan file, validate it against the plan schema and check it (InputError naming the
    file and field when it is malformed)."""
    path = Path(path)
    data = read_plan_json(path)
    validate_plan(data, str(path))
    return plan_from_dict(data, source=str(path))


def validate_plan(data: Any, source: str) -> None:
    """Validate a plan document against the plan schema: InputError naming `source` and the
    field, as `schemas.check_document` says it."""
    check_document("plan", data, source)


def plan_from_dict(data: Any, source: str = "<plan>") -> Plan:
    """Check an in-memory plan dict (docs/plan-format.md) and return it as a `Plan`."""
    check = PlanFields(source)
    data = check.obj(data, "plan")
    if data.get("format") != PLAN_FORMAT:
        raise check.fail("format", f"{PLAN_FORMAT!r}", data.get("format"))
    streams = _streams(check, data)
    sync_nodes = _sync_nodes(check, data.get("sync_nodes", []))
    counts = {key: check.int_(data.get(key, 0), key)
              for key in ("physical_stream_count", "attached_stream_count", "event_count",
                          "notify_count")}
    logical = data.get("logical_stream_count")
    return Plan(source=source, graph=check.text(data.get("graph"), "graph"),
                mode=str(data.get("mode", "")), streams=streams, sync_nodes=sync_nodes,
                events=_events(check, data.get("events", [])),
                stream_activations=_activations(check, data.get("stream_activations", {})),
                logical_stream_count=None if logical is None else
                check.int_(logical, "logical_stream_count"), **counts)


def _streams(check: PlanFields, data: Mapping[str, Any]) -> dict[int, tuple[str, ...]]:
    if "streams" not in data:
        raise check.fail("streams", "a JSON object: stream id -> ordered task names", None)
    raw = check.obj(data["streams"], "streams")
    streams: dict[int, tuple[str, ...]] = {}
    for key, names in raw.items():
        sid = check.stream_key(key, f"streams key {key!r}")
        items = check.array(names, f"streams[{key!r}]")
        if not set(map(type, items)) <= {str} or "" in items:  # all good: checked in C
            for i, name in enumerate(items):
                check.text(name, f"streams[{key!r}][{i}]")
        streams[sid] = tuple(items)
    return dict(sorted(streams.items()))


def _sync_nodes(check: PlanFields, raw: Any) -> dict[str, SyncNode]:
    nodes: dict[str, SyncNode] = {}
    for i, entry in enumerate(check.array(raw, "sync_nodes")):
        try:  # the common case, checked without building messages
            name, kind, stream, event = entry["name"], entry["type"], entry["stream"], \
                entry.get("event")
            good = (name.__class__ is str and name and stream.__class__ is int and stream >= 0
                    and ((kind in SYNC_TYPES and event.__class__ is int and event >= 0)
                         or kind in EXTRA_GENERATED_TYPES) and name not in nodes)
        except (KeyError, TypeError, AttributeError):
            good = False
        if not good:
            name, kind, stream, event = _sync_fields(check, entry, f"sync_nodes[{i}]", nodes)
        nodes[name] = SyncNode(name, kind, stream, event if kind in SYNC_TYPES else None)
    return nodes


def _sync_fields(check: PlanFields, entry: Any, where: str, nodes: Mapping[str, SyncNode]
                 ) -> tuple[str, str, int, int | None]:
    """The slow path of `_sync_nodes`: find the bad field and say which (always raises)."""
    entry = check.obj(entry, where)
    name = check.text(entry.get("name"), f"{where}.name")
    kind = entry.get("type")
    if kind not in SYNC_TYPES + EXTRA_GENERATED_TYPES:
        raise check.fail(f"{where}.type", "one of " + ", ".join(SYNC_TYPES + EXTRA_GENERATED_TYPES),
                         kind)
    event = check.int_(entry.get("event"), f"{where}.event") if kind in SYNC_TYPES else None
    stream = check.int_(entry.get("stream"), f"{where}.stream")
    if name in nodes:
        raise check.fail(f"{where}.name", "a name not used by another sync node", name)
    return name, kind, stream, event


_EVENT_FIELDS = ("id", "send", "recv", "send_stream", "recv_stream")


def _events(check: PlanFields, raw: Any) -> tuple[PlanEvent, ...]:
    events = []
    for i, entry in enumerate(check.array(raw, "events")):
        try:  # the common case, checked without building messages
            ident, send, recv, s_stream, r_stream = (entry[k] for k in _EVENT_FIELDS)
            kind = entry.get("kind", "event")
            good = (kind in ("event", "notify") and send.__class__ is str and send
                    and recv.__class__ is str and recv
                    and all(v.__class__ is int and v >= 0 for v in (ident, s_stream, r_stream)))
        except (KeyError, TypeError, AttributeError):
            good = False
        if not good:
            _bad_event(check, entry, f"events[{i}]")
        events.append(PlanEvent(ident, kind, send, recv, s_stream, r_stream))
    return tuple(events)


def _bad_event(check: PlanFields, entry: Any, where: str) -> None:
    """The slow path of `_events`: say which field is wrong (always raises)."""
    entry = check.obj(entry, where)
    if entry.get("kind", "event") not in ("event", "notify"):
        raise check.fail(f"{where}.kind", "'event' or 'notify'", entry.get("kind"))
    for key in _EVENT_FIELDS:
        if key in ("send", "recv"):
            check.text(entry.get(key), f"{where}.{key}")
        else:
            check.int_(entry.get(key), f"{where}.{key}")
    raise check.fail(where, "an event entry", entry)


def _activations(check: PlanFields, raw: Any) -> dict[str, tuple[int, ...]]:
    result = {}
    for name, streams in check.obj(raw, "stream_activations").items():
        items = check.array(streams, f"stream_activations[{name!r}]")
        result[name] = tuple(check.int_(s, f"stream_activations[{name!r}][{i}]")
                             for i, s in enumerate(items))
    return result
