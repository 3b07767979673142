"""The emulation report: the JSON of formats.md section 7 and the human summary.

Section 7's keys come first, in its order; the extra keys follow: `tasks`, `notify_records`,
`notify_waits`, `engines`, `stream_pool`, `device`, for status ok `critical_chain`, and
when relevant `variables`, `deadlock`, `violations` (at most `MAX_LISTED`, with
`violation_count`) and `sync_warnings`. Times are in
microseconds rounded to nanoseconds, so the text is byte-identical across runs.
"""

from __future__ import annotations

import json
from typing import Any

from streamalloc.report.table import format_table
from streamalloc.runtime_emu.critical_chain import chain_summary
from streamalloc.runtime_emu.results import EmulationResult

REPORT_FORMAT = "streamalloc.emulation/v1"
MAX_LISTED = 100
SHOWN_IN_TEXT = 10


def _us(value: float) -> float:
    return round(value, 3) + 0.0  # + 0.0 turns -0.0 into 0.0


def report_dict(result: EmulationResult) -> dict[str, Any]:
    """The report as a JSON-able dict (formats.md section 7 plus extra keys)."""
    # the bounds are computed when read: once
    program, makespan, bounds = result.program, result.makespan_us, result.bounds
    streams = {}
    for sid in program.stream_ids:
        busy = result.busy_us(sid)
        streams[str(sid)] = {"busy_us": _us(busy), "idle_us": _us(max(0.0, makespan - busy)),
                             "tasks": len(program.stream_tids[sid])}
    report: dict[str, Any] = {
        "format": REPORT_FORMAT, "graph": program.graph, "makespan_us": _us(makespan),
        "status": result.status, "streams": streams,
        "event_records": result.records[0], "event_waits": result.waits[0],
        "lower_bounds": {"critical_path_us": _us(bounds.critical_path_us),
                         "work_over_units_us": _us(bounds.work_over_units_us)},
        "tasks": program.task_count(),
        "notify_records": result.records[1], "notify_waits": result.waits[1],
        "engines": {name: {"units": row["units"], "tasks": row["tasks"],
                           "busy_us": _us(row["busy_us"]),
                           "utilization": round(row["utilization"], 4)}
                    for name, row in result.engine_stats().items()},
        "stream_pool": dict(result.stream_pool),
        "device": {"name": result.table.device_name, "cost_table": result.table.source},
    }
    if result.status == "ok":
        report["critical_chain"] = _chain(result)
    _add_problems(report, result)
    return report


def _chain(result: EmulationResult) -> dict[str, Any]:
    """Where the time of the run's critical chain went (`runtime_emu/critical_chain.py`)."""
    chain = chain_summary(result)
    return {"tasks": chain.tasks, "graph_task_us": _us(chain.graph_task_us),
            "engines": {name: _us(us) for name, us in chain.engines.items()},
            "send_us": _us(chain.send_us), "recv_us": _us(chain.recv_us),
            "gap_us": _us(chain.gap_us), "event_hops": chain.event_hops,
            "unit_waits": chain.unit_waits}


def _add_problems(report: dict[str, Any], result: EmulationResult) -> None:
    if result.variables is not None:
        report["variables"] = result.variables
    if result.deadlock:
        report["deadlock"] = [
            {"stream": b.stream, "task": b.task, "waits_for": b.waits_for, "id": b.id,
             "by": [{"task": name, "stream": sid} for name, sid in b.by]}
            for b in result.deadlock]
    if result.violations:
        records = result.violation_records()[:MAX_LISTED]
        for row in records:
            for key in ("producer_end_us", "consumer_start_us"):
                if row[key] is not None:
                    row[key] = _us(row[key])
        report["violations"] = records
        report["violation_count"] = len(result.violations)
    if result.lost_records or result.unconsumed:
        report["sync_warnings"] = {
            "lost_records": result.lost_records,
            "unconsumed": [{"kind": "notify" if space else "event", "id": ident}
                           for space, ident in result.unconsumed]}


def report_json(result: EmulationResult) -> str:
    """The canonical JSON text of the report (one trailing newline)."""
    return json.dumps(report_dict(result), indent=1) + "\n"


def report_text(result: EmulationResult) -> str:
    """A summary for people: headline, stream and engine tables, then what went wrong."""
    report = report_dict(result)
    bounds = report["lower_bounds"]
    lines = [f"graph {report['graph']}: status {report['status']}, makespan "
             f"{report['makespan_us']} us, {report['tasks']} tasks",
             f"lower bounds: critical path {bounds['critical_path_us']} us, work over units "
             f"{bounds['work_over_units_us']} us",
             f"events: {report['event_records']} records, {report['event_waits']} waits; "
             f"notifies: {report['notify_records']} records, {report['notify_waits']} waits",
             _pool_line(report["stream_pool"]), *_chain_lines(report), ""]
    makespan = report["makespan_us"] or 1.0
    lines.append(format_table(
        ["stream", "tasks", "busy_us", "idle_us", "busy_%"],
        [[sid, row["tasks"], row["busy_us"], row["idle_us"],
          f"{100 * row['busy_us'] / makespan:.1f}"] for sid, row in report["streams"].items()]))
    lines += ["", format_table(
        ["engine", "units", "tasks", "busy_us", "utilization_%"],
        [[name, row["units"], row["tasks"], row["busy_us"], f"{100 * row['utilization']:.1f}"]
         for name, row in report["engines"].items()])]
    lines += _problem_lines(report)
    return "\n".join(lines).rstrip() + "\n"


def _chain_lines(report: dict[str, Any]) -> list[str]:
    if "critical_chain" not in report:
        return []
    chain = report["critical_chain"]
    return [f"critical chain: {chain['tasks']} tasks; graph tasks {chain['graph_task_us']} us, "
            f"Sends {chain['send_us']} us, Recvs {chain['recv_us']} us, gaps "
            f"{chain['gap_us']} us; {chain['event_hops']} event hops, {chain['unit_waits']} "
            "engine waits"]


def _pool_line(pool: dict[str, Any]) -> str:
    if pool.get("runtime") == "v1":
        return f"streams: {pool['requested']}, all created at load (V1 runtime: never reused)"
    return (f"streams: {pool['requested']} ({pool['created']} created at load, "
            f"{pool['reused']} reused from the pool; slot 0 is the caller's stream)")


def _problem_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    if "variables" in report:
        var = report["variables"]
        sizes = ", ".join(f"{k} {v}" for k, v in var["bytes"].items())
        lines += ["", f"variables loaded: {var['count']}" + (f", bytes {sizes}" if sizes else "")]
    if "deadlock" in report:
        lines += ["", "deadlock: no stream can go on"]
        for b in report["deadlock"]:
            what = b["waits_for"] if b["id"] is None else f"{b['waits_for']} {b['id']}"
            by = ", ".join(f"{x['task']} (stream {x['stream']})" for x in b["by"])
            source = f"which only {by} can give" if by else "which no task of the plan gives"
            lines.append(f"  stream {b['stream']} waits at {b['task']} for {what}, {source}")
    if "violations" in report:
        lines += ["", f"violations: {report['violation_count']} dependencies broken"]
        for v in report["violations"][:SHOWN_IN_TEXT]:
            if "event" in v:
                lines.append(f"  {v['kind']}: {v['consumer']} (stream {v['consumer_stream']}) "
                             f"uses {v['event']}, not ordered after its earlier use by "
                             f"{v['producer']} (stream {v['producer_stream']}): a record can be "
                             "lost or taken by the wrong wait")
                continue
            ended = "had not ended" if v["producer_end_us"] is None else \
                f"ended at {v['producer_end_us']} us"
            lines.append(f"  {v['kind']}: {v['consumer']} (stream {v['consumer_stream']}) "
                         f"started at {v['consumer_start_us']} us; its producer {v['producer']} "
                         f"(stream {v['producer_stream']}) {ended}")
    return lines
