"""One benchmark row per input and mode, from two fresh CLI processes.

    streamalloc allocate G -o PLAN [--set ...] [mode arguments]     -> allocate_s, the plan
    streamalloc emulate G PLAN --json [--set ...]                    -> emulate_s, the makespan

Mode arguments: `ge` none; `ge-minimal` `--sync minimal`; `optimal` `--mode optimal
--time-limit S` (no `--time-limit` when the preset gives none: the allocator's default). Counts
come from the plan file (events = event_count + notify_count, as in `streamalloc compare`),
makespan and lower bounds from `emulate --json`, solver status and reason from the plan's
`solver` block. Optimal mode is not run above `optimal_max_nodes`: that row says FALLBACK with
the reason. A command that fails or times out gives a row with status ERROR or TIMEOUT. On
the generated graphs up to 200k nodes, ge and ge-minimal run each command three times and keep
the fastest (the rows of the speed targets).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import runner
from .inputs import BenchInput

MODES = ("ge", "ge-minimal", "optimal")
REPEAT = 3  # runs of ge and ge-minimal on the generated graphs up to REPEAT_UP_TO nodes: the
REPEAT_UP_TO = 200_000  # rows of the speed targets, as ratios to json.load (also best of 3)
_MODE_ARGS = {"ge": [], "ge-minimal": ["--sync", "minimal"], "optimal": ["--mode", "optimal"]}
# The row's fields in table order; every row has all of them (None when not measured).
FIELDS = ("input", "kind", "mode", "nodes", "logical_streams", "physical_streams", "events",
          "notifies", "makespan_us", "critical_path_us", "work_over_units_us", "status", "reason",
          "allocate_s", "emulate_s", "allocate_peak_mb", "emulate_peak_mb", "json_load_s",
          "allocate_ratio", "emulate_ratio")


@dataclass(frozen=True)
class Settings:
    """How every row is run."""

    modes: tuple[str, ...]
    time_limit: float | None  # optimal mode's --time-limit; None: its default
    optimal_max_nodes: int
    timeout: float  # per command, seconds
    memory_mb: int  # per command, address space (RLIMIT_AS)


def measure(item: BenchInput, mode: str, settings: Settings, workdir: Path,
            json_load_s: float | None = None) -> dict[str, Any]:
    """The row of `item` in `mode`; `json_load_s` (generated graphs) adds the two ratios."""
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row.update(input=item.name, kind=item.kind, mode=mode, nodes=item.nodes,
               json_load_s=json_load_s, reason="")
    if mode == "optimal" and item.nodes > settings.optimal_max_nodes:
        row.update(status="FALLBACK", reason=(
            f"not run: {item.nodes} nodes > --optimal-max-nodes {settings.optimal_max_nodes} "
            "(optimal mode's time and memory grow too fast beyond it, see the README's "
            "Benchmarks section); its fallback plan is the ge-minimal row's"))
        return row
    plan = workdir / f"{item.name}.{mode}.plan.json"
    repeat = REPEAT if json_load_s and mode != "optimal" and item.nodes <= REPEAT_UP_TO else 1
    allocated = _best(repeat, "allocate", str(item.path), "-o", str(plan), *item.set_args(),
                      *_mode_args(mode, settings), settings=settings)
    row.update(allocate_s=_round(allocated.wall_s), allocate_peak_mb=_round(allocated.peak_mb, 1))
    if allocated.returncode != 0:
        return _failed(row, allocated, "allocate")
    row.update(_plan_fields(plan))
    emulated = _best(repeat, "emulate", str(item.path), str(plan), "--json", *item.set_args(),
                     settings=settings)
    row.update(emulate_s=_round(emulated.wall_s), emulate_peak_mb=_round(emulated.peak_mb, 1))
    if emulated.returncode != 0:
        return _failed(row, emulated, "emulate")
    row.update(_emulation_fields(json.loads(emulated.stdout)))
    if json_load_s:
        row.update(allocate_ratio=_round(allocated.wall_s / json_load_s, 2),
                   emulate_ratio=_round(emulated.wall_s / json_load_s, 2))
    plan.unlink()
    return row


def _best(repeat: int, *args: str, settings: Settings) -> runner.Run:
    """The fastest of `repeat` runs of one command (the first that fails, if one does), with
    the largest peak memory: a single run on a noisy machine is off by a tenth either way."""
    runs: list[runner.Run] = []
    for _ in range(repeat):
        run = runner.streamalloc(*args, timeout=settings.timeout, memory_mb=settings.memory_mb)
        if run.returncode != 0:
            return run
        runs.append(run)
    best = min(runs, key=lambda r: r.wall_s)
    return replace(best, peak_mb=max(r.peak_mb for r in runs))


def _mode_args(mode: str, settings: Settings) -> list[str]:
    args = list(_MODE_ARGS[mode])
    if mode == "optimal" and settings.time_limit is not None:
        args += ["--time-limit", str(settings.time_limit)]
    return args


def _plan_fields(plan: Path) -> dict[str, Any]:
    with plan.open("rb") as f:
        document = json.load(f)
    solver = document.get("solver") or {}
    return {"logical_streams": document["logical_stream_count"],
            "physical_streams": document["physical_stream_count"],
            "events": document["event_count"] + document["notify_count"],
            "notifies": document["notify_count"],
            "status": solver.get("status", "-"), "reason": solver.get("reason", "")}


def _emulation_fields(report: dict[str, Any]) -> dict[str, Any]:
    bounds = report["lower_bounds"]
    fields = {"makespan_us": report["makespan_us"],
              "critical_path_us": bounds["critical_path_us"],
              "work_over_units_us": bounds["work_over_units_us"]}
    if report["status"] != "ok":
        fields["reason"] = f"emulation: {report['status']}"
    return fields


def _failed(row: dict[str, Any], failed: runner.Run, command: str) -> dict[str, Any]:
    row.update(status="TIMEOUT" if failed.timed_out else "ERROR",
               reason=f"{command}: {failed.error()}")
    return row


def _round(value: float, digits: int = 3) -> float:
    return round(value, digits)
