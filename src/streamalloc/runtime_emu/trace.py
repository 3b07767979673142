"""Chrome trace event JSON of a run, for Perfetto (ui.perfetto.dev) and chrome://tracing.

One process (the device), one track (tid) per stream named "stream N", one complete ("X")
event per task that ran (a Recv spans its wait; an engine task's args carry its `block_dim`,
the units it held; a task of the run's critical chain, `runtime_emu/critical_chain.py`, has
`"critical_chain": true`), and flow arrows ("s" -> "f"): from each Send
to the Recv that consumed its record (category "event" or "notify"), and from each activator
to the streams it started (category "activation").

Times: `ts` and `dur` are microseconds, the trace format's unit, with nanosecond fractions;
`displayTimeUnit` "ns" only asks chrome://tracing to display them to the nanosecond. A slice's
start and end are rounded to the nanosecond and its `dur` is their difference, so consecutive
tasks on one stream never overlap through rounding.

A run that failed still has its trace, up to the failure (`emulate` writes it as a diagnostic):
each stream blocked in a deadlock gets a slice "waiting for event N" (notify N, activation;
category "deadlock") from the time it blocked to the makespan, and an instant event there; each
violation (the first `MAX_MARKED`) an instant event "violation: KIND" on the consumer's track at
its start.
"""

from __future__ import annotations

import json
import math
from typing import Any

from streamalloc.runtime_emu.critical_chain import chain_spans
from streamalloc.runtime_emu.program import KIND_NAMES, NOTIFY_SPACE, RECV, SEND
from streamalloc.runtime_emu.results import Blocked, EmulationResult

PID = 0
MAX_MARKED = 100  # violations marked, as many as the report lists


def _ns(value: float) -> int:
    """A time in us as whole nanoseconds (the trace's resolution)."""
    return round(value * 1000)


def _us(value: float) -> float:
    return _ns(value) / 1000 + 0.0


def waiting_label(blocked: Blocked) -> str:
    """What a blocked stream waits for: "waiting for event 3", "waiting for activation"."""
    what = blocked.waits_for if blocked.id is None else f"{blocked.waits_for} {blocked.id}"
    return f"waiting for {what}"


def blocked_since(result: EmulationResult) -> list[tuple[Blocked, float]]:
    """Each stream blocked in a deadlock with the time it blocked: when it reached the task it
    waits at (0 for a stream never activated, which waits before its first task)."""
    program, found = result.program, []
    for blocked in result.deadlock:
        tid = next(t for t in program.stream_tids[blocked.stream] if result.end[t] == math.inf)
        since = result.start[tid]
        found.append((blocked, 0.0 if since == math.inf else since))
    return found


def trace_dict(result: EmulationResult) -> dict[str, Any]:
    """The trace as a dict: `traceEvents` plus `displayTimeUnit` and a little metadata."""
    events: list[dict[str, Any]] = [{"ph": "M", "pid": PID, "name": "process_name",
                                     "args": {"name": f"{result.program.graph} (emulated)"}}]
    for sid in result.program.stream_ids:
        events.append({"ph": "M", "pid": PID, "tid": sid, "name": "thread_name",
                       "args": {"name": f"stream {sid}"}})
        events.append({"ph": "M", "pid": PID, "tid": sid, "name": "thread_sort_index",
                       "args": {"sort_index": sid}})
    events += _slices(result)
    events += _flows(result)
    events += _failure_marks(result)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"status": result.status, "makespan_us": _us(result.makespan_us)}}


def _slices(result: EmulationResult) -> list[dict[str, Any]]:
    program, slices = result.program, []
    chain = {tid for tid, _, _ in chain_spans(result)}
    for tid, name in enumerate(program.names):
        begin, finish = result.start[tid], result.end[tid]
        if finish == math.inf:
            continue
        kind = program.kinds[tid]
        category = program.engines[tid] or ("notify" if program.spaces[tid] == NOTIFY_SPACE
                                            and kind in (SEND, RECV) else KIND_NAMES[kind])
        args: dict[str, Any] = {"type": program.types[tid]}
        if kind in (SEND, RECV):
            args["id"] = program.sync_ids[tid]
        elif program.widths[tid]:
            args["block_dim"] = program.widths[tid]
        if tid in chain:
            args["critical_chain"] = True
        slices.append(_slice(program.streams[tid], name, category, (begin, finish), args))
    return slices


def _slice(track: int, name: str, category: str, span: tuple[float, float],
           args: dict[str, Any]) -> dict[str, Any]:
    # round both ends, then dur = end - start: rounding never makes neighbours overlap
    first, last = _ns(span[0]), _ns(span[1])
    return {"ph": "X", "pid": PID, "tid": track, "name": name, "cat": category,
            "ts": first / 1000 + 0.0, "dur": (last - first) / 1000 + 0.0, "args": args}


def _failure_marks(result: EmulationResult) -> list[dict[str, Any]]:
    """Slices and instants marking where a deadlocked or violating run went wrong."""
    marks: list[dict[str, Any]] = []
    for blocked, since in blocked_since(result):
        label = waiting_label(blocked)
        args: dict[str, Any] = {
            "task": blocked.task, "waits_for": blocked.waits_for, "id": blocked.id,
            "by": [{"task": name, "stream": sid} for name, sid in blocked.by]}
        marks.append(_slice(blocked.stream, label, "deadlock",
                            (since, max(since, result.makespan_us)), args))
        marks.append({"ph": "i", "s": "t", "pid": PID, "tid": blocked.stream,
                      "name": f"blocked: {label}", "cat": "deadlock", "ts": _us(since),
                      "args": args})
    for row in result.violation_records()[:MAX_MARKED]:
        args = {k: v for k, v in row.items() if k != "consumer_start_us"}
        if row["producer_end_us"] is not None:
            args["producer_end_us"] = _us(row["producer_end_us"])
        marks.append({"ph": "i", "s": "t", "pid": PID, "tid": row["consumer_stream"],
                      "name": f"violation: {row['kind']}", "cat": "violation",
                      "ts": _us(row["consumer_start_us"]), "args": args})
    return marks


def _flows(result: EmulationResult) -> list[dict[str, Any]]:
    program, flows, flow_id = result.program, [], 0
    for recv, (send, when) in sorted(result.matched.items()):
        space = "notify" if program.spaces[recv] == NOTIFY_SPACE else "event"
        name = f"{space} {program.sync_ids[recv]}"
        flows += _arrow(flow_id, name, space, (program.streams[send], result.start[send]),
                        (program.streams[recv], when))
        flow_id += 1
    for sid, (activator, when) in sorted(result.activated_at.items()):
        first = result.start[program.stream_tids[sid][0]]
        flows += _arrow(flow_id, f"activate stream {sid}", "activation",
                        (program.streams[activator], result.start[activator]),
                        (sid, when if first == math.inf else max(when, first)))
        flow_id += 1
    return flows


def _arrow(flow_id: int, name: str, category: str, source: tuple[int, float],
           target: tuple[int, float]) -> list[dict[str, Any]]:
    # "s" binds to the slice enclosing its time on the source track, "f" with bp "e" to the
    # slice enclosing its time on the target track (the Send, the Recv or the first task).
    return [{"ph": "s", "pid": PID, "tid": source[0], "id": flow_id, "name": name,
             "cat": category, "ts": _us(source[1])},
            {"ph": "f", "bp": "e", "pid": PID, "tid": target[0], "id": flow_id, "name": name,
             "cat": category, "ts": _us(target[1])}]


def trace_json(result: EmulationResult) -> str:
    """The trace as compact JSON text (a trace can hold hundreds of thousands of events)."""
    return json.dumps(trace_dict(result), separators=(",", ":")) + "\n"
