"""Chrome trace event JSON of a run, for Perfetto (ui.perfetto.dev) and chrome://tracing.

One process (the device), one track (tid) per stream named "stream N", one complete ("X")
event per task that ran (a Recv spans its wait; an engine task's args carry its `block_dim`,
the units it held), and flow arrows ("s" -> "f"): from each Send
to the Recv that consumed its record (category "event" or "notify"), and from each activator
to the streams it started (category "activation"). Timestamps are microseconds, the trace
format's unit.
"""

from __future__ import annotations

import json
import math
from typing import Any

from streamalloc.runtime_emu.program import KIND_NAMES, NOTIFY_SPACE, RECV, SEND
from streamalloc.runtime_emu.results import EmulationResult

PID = 0


def _us(value: float) -> float:
    return round(value, 3) + 0.0


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
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"status": result.status, "makespan_us": _us(result.makespan_us)}}


def _slices(result: EmulationResult) -> list[dict[str, Any]]:
    program, slices = result.program, []
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
        slices.append({"ph": "X", "pid": PID, "tid": program.streams[tid], "name": name,
                       "cat": category, "ts": _us(begin), "dur": _us(finish - begin),
                       "args": args})
    return slices


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
