"""`streamalloc sweep SPEC.yaml [-o OUT.json] [--md FILE] [--json] [--jobs N] [--ray ADDRESS]`.

Runs the cross product a sweep spec lists (graphs, rule sets, option grids, modes, solver
settings; `commands.sweep_spec`, docs/sweep-format.md): one row per point, compare's row of its
mode plus the point's parameters and the peak memory of the process that ran it. The rows come
in the order the spec lists them, whatever order the points finish in, and equal a serial
run's but for `wall_s` and `max_rss_mb`; `--jobs N` runs N local processes, `--ray ADDRESS` a
Ray cluster.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from streamalloc.commands import sweep_run
from streamalloc.commands.sweep_spec import SweepPoint, load_spec
from streamalloc.errors import (
    AllocationInfeasible,
    InputError,
    InputWarning,
    InternalError,
    PlanVerifyError,
    StreamallocError,
    UsageError,
)
from streamalloc.outputs import Progress
from streamalloc.report.compare_report import cell, why_lines
from streamalloc.report.table import format_table

SWEEP_FORMAT = "streamalloc.sweep/v1"
RESULT_COLUMNS = ("logical_streams", "physical_streams", "events", "notifies", "makespan_us",
                  "chain_sync_us", "critical_path_us", "work_over_units_us", "makespan_bound_us",
                  "nimble_min_events", "status", "gap", "events_bound", "wall_s", "max_rss_mb")
# What differs between two runs of one spec: everything else is the same, however it ran.
UNREPRODUCIBLE = ("wall_s", "max_rss_mb")
_ERRORS: Mapping[int, type[StreamallocError]] = {
    2: UsageError, 3: InputError, 4: AllocationInfeasible, 5: PlanVerifyError}


def sweep(spec_path: str, *, jobs: int = 1, ray: str | None = None) -> dict[str, Any]:
    """The sweep document (format streamalloc.sweep/v1) of a spec file. `jobs` local processes
    (1: in this process), or a Ray cluster at `ray` (`local`, `auto`, `ray://host:port`)."""
    if jobs < 1:
        raise UsageError(f"--jobs {jobs}: expected a number of processes >= 1")
    spec = load_spec(spec_path)
    points = spec.points()
    rows: list[dict[str, Any] | None] = [None] * len(points)
    seen: dict[str, None] = {}
    with Progress("sweep", sys.stderr) as progress:
        for done, result in enumerate(_results(points, jobs, ray), start=1):
            progress.label = f"sweep {done}/{len(points)} points"
            if result.error is not None:
                raise _failed(spec_path, points[result.index], result.error)
            rows[result.index] = result.row
            seen.update(dict.fromkeys(result.warnings))
    for message in seen:  # once each, whichever points saw it
        warnings.warn(message, InputWarning, stacklevel=2)
    return {"format": SWEEP_FORMAT, "spec": str(spec_path), "rows": rows}


def _results(points: Sequence[SweepPoint], jobs: int,
             ray: str | None) -> Iterator[sweep_run.PointResult]:
    if ray is not None:
        return sweep_run.on_ray(points, ray, jobs)
    if jobs == 1 or len(points) == 1:
        return sweep_run.serial(points)
    return sweep_run.processes(points, jobs)


def _failed(spec: str, point: SweepPoint, error: sweep_run.PointError) -> StreamallocError:
    """The error of a point, naming the point; the same exit code as the point's own."""
    kind = _ERRORS.get(error.exit_code, InternalError)
    return kind(f"{spec}: point {point.index} ({describe_point(point)}): {error.message}")


def describe_point(point: SweepPoint) -> str:
    """`train_step.yaml, rules default, ge.hcomParallel=1, optimal, time_limit=1`."""
    options = [f"{k}={v}" for k, v in point.options]
    solver = [f"{k}={v}" for k, v in point.solver]
    return ", ".join([point.file, f"rules {point.rules}", *options, point.mode, *solver])


def parameter_columns(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The parameters that vary between rows, as (column, block, key): the rule set when
    there are several, each option axis, the mode, each solver axis (among optimal rows)."""
    def varies(values: Iterator[Any]) -> bool:
        return len(set(map(repr, values))) > 1

    optimal = [row for row in rows if row["mode"] == "optimal"]
    columns = [("input", "", "input")]
    if varies(row["rules"] for row in rows):
        columns.append(("rules", "", "rules"))
    keys = dict.fromkeys(k for row in rows for k in row["options"])
    columns += [(k, "options", k) for k in keys if varies(r["options"].get(k) for r in rows)]
    columns.append(("mode", "", "mode"))
    keys = dict.fromkeys(k for row in optimal for k in row["solver"])
    columns += [(k, "solver", k) for k in keys if varies(r["solver"].get(k) for r in optimal)]
    return columns


def _cells(document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    params = parameter_columns(document["rows"])
    header = [name for name, _, _ in params] + list(RESULT_COLUMNS)
    body = [[cell(row[block].get(key) if block else row[key]) for _, block, key in params]
            + [cell(row.get(c)) for c in RESULT_COLUMNS] for row in document["rows"]]
    return header, body


def sweep_table(document: Mapping[str, Any]) -> str:
    """One row per point: the parameters that vary, then compare's columns and the memory;
    under it, why a point's plan is not its mode's own (as under compare's table)."""
    header, body = _cells(document)
    return format_table(header, body) + "\n" + why_lines(
        document["rows"], lambda row: f"point {row['point']}: ")


def sweep_markdown(document: Mapping[str, Any]) -> str:
    """The table of `sweep_table` in markdown (`--md FILE`)."""
    header, body = _cells(document)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def sweep_command(spec: str, *, jobs: int, ray: str | None, json_out: bool,
                  output: str | None, markdown: str | None,
                  write: Callable[[Path, str], None]) -> str:
    """Run the sweep and write `output` (JSON) and `markdown` with `write`; the text to print
    (the JSON with `json_out`, else the table)."""
    document = sweep(spec, jobs=jobs, ray=ray)
    text = json.dumps(document, indent=1) + "\n"
    if output is not None:
        write(Path(output), text)
    if markdown is not None:
        write(Path(markdown), sweep_markdown(document))
    return text if json_out else sweep_table(document)
