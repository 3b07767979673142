"""Reading a plan file (docs/plan-format.md) into typed, immutable records.

Only the shape is checked here: JSON that parses, follows the plan schema (`streamalloc schema
plan`), required keys present, values of the right type. A malformed plan is an `InputError`
(exit 3) that names the file and the field. Whether
the plan is *right* (names exist, ids pair up, dependencies are ordered) is the verifier's
job and gives violations, not exceptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress, repeat
from pathlib import Path
from typing import Any, TypeGuard

from streamalloc.errors import InputError
from streamalloc.plan_fields import PLAN_DOC, PlanFields, read_plan_json
from streamalloc.schemas import PLAN_FORMAT, check_document
from streamalloc.verify.plan_view import (
    EventEntry,
    NodeEntries,
    NodeEntry,
    PlanView,
    RulesRef,
    SyncEntry,
)

# Generated task types; StreamActive (switch handling, sync spec 6.3) carries no id.
ACTIVE_TYPE = "StreamActive"
SYNC_TYPES = ("Send", "Recv", "SendNotify", "RecvNotify", ACTIVE_TYPE)
_SYNC_TYPES, _EVENT_KINDS = frozenset(SYNC_TYPES), frozenset({"event", "notify"})
REQUIRED = ("format", "graph", "nodes", "streams", "physical_stream_count", "event_count",
            "notify_count")


def read_plan(path: str | Path) -> PlanView:
    """Read a plan file, validate it against the plan schema and type-check it (InputError
    naming the file and the field)."""
    path = Path(path)
    data = read_plan_json(path)
    check_document("plan", data, str(path))
    return plan_view(data, source=str(path))


def plan_view(data: Any, source: str = "<plan>") -> PlanView:
    """Type-check an in-memory plan dict (docs/plan-format.md) and return it as a PlanView."""
    f = PlanFields(source)
    data = f.obj(data, "the plan")
    for key in REQUIRED:
        if key not in data:
            raise InputError(f"{source}: missing key {key!r}; a plan needs "
                             f"{', '.join(REQUIRED)} ({PLAN_DOC})")
    if data["format"] != PLAN_FORMAT:
        raise f.fail("format", repr(PLAN_FORMAT), data["format"])
    return PlanView(
        source=source, graph=f.text(data["graph"], "graph"),
        nodes=_nodes(f, data["nodes"]), streams=_streams(f, data["streams"]),
        sync_nodes=_sync_nodes(f, data.get("sync_nodes", [])),
        events=_events(f, data.get("events", [])),
        activations=_activations(f, data.get("stream_activations", {})),
        event_count=f.int_(data["event_count"], "event_count"),
        notify_count=f.int_(data["notify_count"], "notify_count"),
        physical_stream_count=f.int_(data["physical_stream_count"], "physical_stream_count"),
        attached_stream_count=f.int_(data.get("attached_stream_count", 0),
                                     "attached_stream_count"),
        logical_stream_count=f.optional_int(data.get("logical_stream_count"),
                                            "logical_stream_count"),
        tasks=_tasks(f, data.get("tasks")),
        huge_streams=_huge(f, data.get("huge_streams")),
        attached=_attached(f, data["nodes"]), options=_options(f, data.get("options")),
        rules=_rules(f, data.get("rules")),
        sync=None if data.get("sync") is None else f.text(data["sync"], "sync"))


# Each reader below has a fast path for well-formed entries and falls back to the checking
# reader, which raises the detailed error; plans of 100k nodes parse in well under a second.


def _nat(value: Any) -> bool:
    return type(value) is int and value >= 0


def _nodes(f: PlanFields, raw: Any) -> NodeEntries:
    entries = f.obj(raw, "nodes")
    # the common case, checked a column at a time: one entry per graph node
    if _all_dicts(entries):
        values = list(entries.values())
        streams = list(map(dict.get, values, repeat("stream")))
        physical = list(map(dict.get, values, repeat("physical_stream")))
        if _stream_ids(streams) and _stream_ids(physical):
            return NodeEntries(tuple(entries), streams, physical)
    checked = [_node_entry(f, name, entry) for name, entry in entries.items()]
    return NodeEntries(tuple(entries), [e.stream for e in checked],
                       [e.physical_stream for e in checked])


def _all_dicts(entries: Mapping[str, Any] | list[Any]) -> bool:
    return set(map(type, entries.values() if isinstance(entries, Mapping) else entries)) <= {dict}


def _among(values: list[Any], allowed: frozenset[str]) -> bool:
    """Whether every value is one of the `allowed` strings (a value of another type, a list
    say, is not hashed)."""
    return set(map(type, values)) <= {str} and set(values) <= allowed


def _ints_from(values: list[Any], least: int) -> TypeGuard[list[int]]:
    """Whether every value is an int (not a bool) >= `least`, checked at C speed."""
    return set(map(type, values)) <= {int} and min(values, default=least) >= least


def _naturals(values: list[Any]) -> bool:
    """`_nat` of every value."""
    return _ints_from(values, 0)


def _stream_ids(values: list[Any]) -> TypeGuard[list[int]]:
    """Whether every value is a stream id or -1 (no stream)."""
    return _ints_from(values, -1)


def _node_entry(f: PlanFields, name: str, raw: Any) -> NodeEntry:
    where = f"nodes[{name!r}]"
    entry = f.obj(raw, where)
    for key in ("stream", "physical_stream"):
        if key not in entry:
            raise f.fail(f"{where}.{key}", "a stream id (-1 = no stream)", None)
    return NodeEntry(f.int_(entry["stream"], f"{where}.stream", -1),
                     f.int_(entry["physical_stream"], f"{where}.physical_stream", -1))


def _streams(f: PlanFields, raw: Any) -> Mapping[int, tuple[str, ...]]:
    streams: dict[int, tuple[str, ...]] = {}
    for key, names in f.obj(raw, "streams").items():
        sid = f.stream_key(key, f"streams key {key!r}")
        items = tuple(f.array(names, f"streams[{key!r}]"))
        if not set(map(type, items)) <= {str} or "" in items:  # all good: checked in C
            items = tuple(f.text(n, f"streams[{key!r}][{i}]") for i, n in enumerate(items))
        streams[sid] = items
    return dict(sorted(streams.items()))


def _sync_nodes(f: PlanFields, raw: Any) -> tuple[SyncEntry, ...]:
    entries = f.array(raw, "sync_nodes")
    # the common case, checked a column at a time: every entry well formed
    if _all_dicts(entries):
        names, types, streams, events = (list(map(dict.get, entries, repeat(key)))
                                         for key in ("name", "type", "stream", "event"))
        counted = events if ACTIVE_TYPE not in types else \
            [e for t, e in zip(types, events, strict=True) if t != ACTIVE_TYPE]
        if set(map(type, names)) <= {str} and "" not in names and _among(types, _SYNC_TYPES) \
                and _naturals(streams) and _naturals(counted):
            if counted is not events:  # a StreamActive has no id
                events = [None if t == ACTIVE_TYPE else e
                          for t, e in zip(types, events, strict=True)]
            return tuple(map(SyncEntry._make, zip(names, types, streams, events, strict=True)))
    result = []
    for i, e in enumerate(entries):
        if type(e) is dict and type(e.get("name")) is str and e["name"] \
                and e.get("type") in SYNC_TYPES and _nat(e.get("stream")) \
                and (e["type"] == ACTIVE_TYPE or _nat(e.get("event"))):
            ident = None if e["type"] == ACTIVE_TYPE else e["event"]
            result.append(SyncEntry(e["name"], e["type"], e["stream"], ident))
        else:
            result.append(_sync_entry(f, i, e))
    return tuple(result)


def _sync_entry(f: PlanFields, i: int, raw: Any) -> SyncEntry:
    where = f"sync_nodes[{i}]"
    entry = f.obj(raw, where)
    kind = entry.get("type")
    if kind not in SYNC_TYPES:
        raise f.fail(f"{where}.type", "one of " + ", ".join(SYNC_TYPES), kind)
    ident = None if kind == ACTIVE_TYPE else f.int_(entry.get("event"), f"{where}.event")
    return SyncEntry(f.text(entry.get("name"), f"{where}.name"), kind,
                     f.int_(entry.get("stream"), f"{where}.stream"), ident)


def _events(f: PlanFields, raw: Any) -> tuple[EventEntry, ...]:
    entries = f.array(raw, "events")
    # the common case, checked a column at a time: every entry well formed
    if _all_dicts(entries):
        ids, sends, recvs, send_streams, recv_streams = (
            list(map(dict.get, entries, repeat(key)))
            for key in ("id", "send", "recv", "send_stream", "recv_stream"))
        kinds = list(map(dict.get, entries, repeat("kind"), repeat("event")))
        if _among(kinds, _EVENT_KINDS) and _naturals(ids) and _naturals(send_streams) \
                and _naturals(recv_streams) and set(map(type, sends)) <= {str} \
                and set(map(type, recvs)) <= {str} and "" not in sends and "" not in recvs:
            return tuple(map(EventEntry._make, zip(range(len(entries)), ids, kinds, sends, recvs,
                                                   send_streams, recv_streams, strict=True)))
    result = []
    for i, e in enumerate(entries):
        if type(e) is dict and e.get("kind", "event") in ("event", "notify") \
                and _nat(e.get("id")) and _nat(e.get("send_stream")) \
                and _nat(e.get("recv_stream")) and type(e.get("send")) is str and e["send"] \
                and type(e.get("recv")) is str and e["recv"]:
            result.append(EventEntry(i, e["id"], e.get("kind", "event"), e["send"], e["recv"],
                                     e["send_stream"], e["recv_stream"]))
        else:
            result.append(_event_entry(f, i, e))
    return tuple(result)


def _event_entry(f: PlanFields, i: int, raw: Any) -> EventEntry:
    where = f"events[{i}]"
    entry = f.obj(raw, where)
    kind = entry.get("kind", "event")
    if kind not in ("event", "notify"):
        raise f.fail(f"{where}.kind", "'event' or 'notify'", kind)
    return EventEntry(
        list_index=i, id=f.int_(entry.get("id"), f"{where}.id"), kind=kind,
        send=f.text(entry.get("send"), f"{where}.send"),
        recv=f.text(entry.get("recv"), f"{where}.recv"),
        send_stream=f.int_(entry.get("send_stream"), f"{where}.send_stream"),
        recv_stream=f.int_(entry.get("recv_stream"), f"{where}.recv_stream"))


def _activations(f: PlanFields, raw: Any) -> Mapping[str, tuple[int, ...]]:
    return {name: f.int_list(streams, f"stream_activations[{name!r}]")
            for name, streams in f.obj(raw, "stream_activations").items()}


def _tasks(f: PlanFields, raw: Any) -> Mapping[int, int] | None:
    if raw is None:
        return None
    return {f.stream_key(k, f"tasks key {k!r}"): f.int_(v, f"tasks[{k!r}]")
            for k, v in f.obj(raw, "tasks").items()}


def _attached(f: PlanFields, nodes: Mapping[str, Any]) -> Mapping[str, tuple[int, ...]]:
    # `_nodes` has checked that every entry is an object; most have no attached streams
    values = map(dict.get, nodes.values(), repeat("attached_streams")) if _all_dicts(nodes) \
        else (entry.get("attached_streams") for entry in nodes.values())
    raw = list(values)
    if not any(raw):  # most plans: no node has attached streams
        return {}
    return {name: f.int_list(value, f"nodes[{name!r}].attached_streams")
            for name, value in compress(zip(nodes, raw, strict=True), raw)}


def _options(f: PlanFields, raw: Any) -> Mapping[str, str] | None:
    if raw is None:
        return None
    return {key: f.text(value, f"options[{key!r}]", empty=True)
            for key, value in f.obj(raw, "options").items()}


def _rules(f: PlanFields, raw: Any) -> RulesRef | None:
    if raw is None:
        return None
    entry = f.obj(raw, "rules")
    return RulesRef(f.text(entry.get("name"), "rules.name"),
                    f.text(entry.get("digest"), "rules.digest"))


def _huge(f: PlanFields, raw: Any) -> tuple[int, ...] | None:
    return None if raw is None else f.int_list(raw, "huge_streams")
