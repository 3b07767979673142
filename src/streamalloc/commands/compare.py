"""`streamalloc compare GRAPH... [--modes ge,ge-minimal,optimal] [--json] [--plot FILE.png]
[--jobs N]`.

One row per graph and mode: `ge` (GE's allocation and elimination), `ge-minimal` (GE's
allocation, minimal elimination: what GE loses in elimination alone), `optimal` (the CP-SAT
allocator); streams, events, notifies, emulated makespan, the lower bounds (the emulator's, and
the makespan bound of every plan), Nimble's minimum as a reference, the solver's status and
gap, wall time. Under `--concurrency ge`, `--plot` also runs the optimal mode's frontier of
events against makespan: the events objective at makespan slacks 0, 5, 10, 25 and 50%, the
makespan objective (its fast end: the fastest plan the search finds), and the makespan
objective at event budgets between the two. Each run searches on its own, so a larger slack
may end with a worse plan than a smaller one found: each point shows the best plan of the runs
within its limits (`best_known`), and says whether it is on the Pareto front (`pareto`).
`--jobs N` runs N of all those runs at once (`_Runs`).
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, cast

import msgspec.structs

from streamalloc import api
from streamalloc.allocation import Allocation
from streamalloc.background import Background, can_start_processes
from streamalloc.errors import (
    AllocationInfeasible,
    GeSyncRace,
    InputError,
    LimitExceeded,
    UsageError,
)
from streamalloc.ir.graph import Graph
from streamalloc.optimal import OptimalOptions, nimble_min_events, task_dag
from streamalloc.optimal.bounds import graph_makespan_bound
from streamalloc.outputs import Progress
from streamalloc.report.compare_report import COMPARE_FORMAT, compare_table, frontier_plot
from streamalloc.rules import RuleSet, ge_rules_for
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.runtime_emu.critical_chain import chain_summary
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.program import Program
from streamalloc.sync.driver import synchronize
from streamalloc.sync.limits import without_device_limits
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan
from streamalloc.verify.shared_start import raise_for_ge_plan

MODES = ("ge", "ge-minimal", "optimal")
NO_PLAN = "NO_PLAN"  # the optimal mode found no plan within the device limits
# GE's error cases on a graph that loaded: infeasible, input GE rejects (single-stream mode
# with a stream label, E10055), or a ge-sync plan that races (several activators start one
# stream); its rows say NO_PLAN and why, and the other graphs go on
GE_FAILURES = (AllocationInfeasible, InputError, GeSyncRace)
_PLAN_FIGURES = ("logical_streams", "physical_streams", "events", "notifies", "makespan_us",
                 "chain_sync_us", "critical_path_us", "work_over_units_us")
FRONTIER_SLACKS = (0.0, 5.0, 10.0, 25.0, 50.0)
CARRIED = ("logical_streams", "physical_streams", "events", "notifies", "makespan_us",
           "chain_sync_us", "status", "gap", "reason")  # a frontier point's figures that come
# from the plan it shows
READ_AHEAD_NODES = 200_000  # under --jobs, graphs are read ahead while the graphs not done
# hold fewer nodes than this: their memory stays bounded (and the 17 real models, 8.5k nodes,
# are all read at once)
FRONTIER_SHARES = (0.25, 0.5, 0.75)  # of the events between the slack-0 and the fastest plan:
# the frontier's event budgets (those strictly between, once each)


@dataclass(frozen=True)
class CompareSettings:
    """What every graph is run with."""

    modes: tuple[str, ...]
    rules: RuleSet | None
    options: dict[str, str]
    optimal: OptimalOptions
    frontier: bool = False
    jobs: int = 1  # runs at once, in forked processes (`_Runs`)


def parse_modes(text: str) -> tuple[str, ...]:
    """`--modes ge,optimal` as a tuple; UsageError naming the valid modes."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise UsageError(f"--modes {text!r}: valid modes are {', '.join(MODES)}")
    return modes


def compare(paths: Sequence[str], settings: CompareSettings) -> dict[str, Any]:
    """The comparison document (format streamalloc.compare/v1): every graph's runs
    (`_Runs`), with `--jobs` N > 1 N at a time."""
    if settings.jobs < 1:
        raise UsageError(f"--jobs {settings.jobs}: expected a number of processes >= 1")
    files = list(zip(paths, input_names(paths), strict=True))
    points = _frontier_points(settings) if settings.frontier else []
    with Progress("compare", sys.stderr) as progress:
        documents = _Runs(settings, points, progress).documents(files)
    return {"format": COMPARE_FORMAT, "rows": [row for rows, _ in documents for row in rows],
            "frontier": [entry for _, entries in documents for entry in entries]}


def input_names(paths: Sequence[str]) -> list[str]:
    """Each file's `input`: its name without the suffix, or where two files share that, as
    few of their last path parts as tell them apart, each count first without the suffix and
    then with it (a.yaml, a.json). One file given twice keeps one name.

    >>> input_names(["x/a.yaml", "y/a.yaml", "b.onnx", "z/c.yaml", "z/c.json"])
    ['x/a', 'y/a', 'b', 'c.yaml', 'c.json']
    """
    files = [Path(p).resolve() for p in paths]
    names = [f.stem for f in files]
    members: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        members.setdefault(name, []).append(i)
    for group in members.values():
        distinct = len({files[i] for i in group})
        if distinct == 1:
            continue
        depth = max(len(files[i].parts) for i in group)
        for k, suffix in [(k, s) for k in range(1, depth + 1) for s in (False, True)][1:]:
            labels = {i: _label(files[i], k, suffix) for i in group}
            if len(set(labels.values())) == distinct:
                for i, label in labels.items():
                    names[i] = label
                break
    return names


def _label(file: Path, k: int, suffix: bool) -> str:
    """The last `k` parts of `file`'s path, the file's name with its suffix or without."""
    return "/".join([*file.parts[-k:-1], file.name if suffix else file.stem])


Point = tuple[str, float | None, int | None]  # a frontier point: objective, slack, event budget


def _frontier_points(settings: CompareSettings) -> list[Point]:
    """The frontier's points known before any has run, under `--concurrency ge` (none under
    `full`, whose plans do not trade makespan): the events objective at each of
    FRONTIER_SLACKS (whatever `--objective` the rows ran), then its fast end, the makespan
    objective (slack null: its plan is never slower than ge mode's) within `--event-budget`
    if given."""
    if settings.optimal.concurrency != "ge":
        return []
    points: list[Point] = [("events", slack, None) for slack in FRONTIER_SLACKS]
    points.append(("makespan", None, settings.optimal.event_budget))
    return points


def _point_run(point: Point, settings: CompareSettings) -> tuple[str, CompareSettings]:
    """What the progress line says of a frontier point, and the optimal mode's settings."""
    objective, slack, budget = point
    options = msgspec.structs.replace(settings.optimal, objective=objective,
                                      makespan_slack=slack or 0.0, event_budget=budget)
    label = f"frontier, {objective} objective" + ("" if slack is None else f", slack {slack:g}%") \
        + ("" if budget is None else f", budget {budget}")
    return label, replace(settings, optimal=options)


def _frontier(name: str, graph: Graph, points: list[tuple[Point, dict[str, Any]]]
              ) -> list[dict[str, Any]]:
    """The optimal mode's points of events against makespan, from their runs' rows: the
    slacks, the budgets, the fastest plan; each with the best plan within its limits
    (`best_known`) and whether it is on the Pareto front."""
    entries = best_known([{"input": name, "graph": graph.name, "objective": objective,
                           "slack": slack, "event_budget": budget, **row}
                          for (objective, slack, budget), row in points])
    return [{**entry, "pareto": on_front} for entry, on_front in zip(
        entries, pareto_front([(e["events"], e["makespan_us"]) for e in entries]), strict=True)]


@dataclass(frozen=True)
class _Input:
    """A graph to compare: its file, its `input`, its progress line and the graph read."""

    path: str
    name: str
    step: Callable[[str], None]
    graph: Graph


Job = tuple[int, Point | None]  # an input's position, and a frontier point to run on its
# graph or None: its rows (`graph_rows`)
Rows = list[dict[str, Any]]


@dataclass
class _Runs:
    """Every graph's jobs: its rows (one job: its ge row's results serve the optimal mode's
    baseline) and each frontier point (`_frontier_points`), the fastest plan and the slack-0
    one first: the budgets between their events (`_between`) are released when both have run,
    and run before the jobs waiting.

    With `--jobs` N > 1, where processes may start (`background.can_start_processes`), N jobs
    run at once, each in a process forked from this one as it starts
    (`background.Background`): it has the graphs read by then, and nothing is sent to it.
    Graphs are read while jobs run, as long as the graphs not done hold fewer than
    READ_AHEAD_NODES nodes (memory stays bounded), and a process that ends makes room for the
    next job, whatever its graph. Otherwise one graph is read and run at a time, here. Every
    run is independent (its own search, seeded alike), so the documents are the same either
    way: only the wall time differs."""

    settings: CompareSettings
    points: list[Point]
    progress: Progress
    inputs: dict[int, _Input] = field(default_factory=dict)  # read, with jobs left
    queue: deque[Job] = field(default_factory=deque)
    running: dict[Job, Background[Rows]] = field(default_factory=dict)
    rows: dict[Job, Rows] = field(default_factory=dict)
    budgets: dict[int, list[Point]] = field(default_factory=dict)
    done: dict[int, tuple[Rows, Rows]] = field(default_factory=dict)  # rows, frontier
    finished: int = 0  # jobs

    def documents(self, files: Sequence[tuple[str, str]]) -> list[tuple[Rows, Rows]]:
        """Each file's rows and frontier entries, in the order of `files` (path, input)."""
        parallel = self.settings.jobs > 1 and can_start_processes()
        slots = self.settings.jobs if parallel else 1
        ahead = READ_AHEAD_NODES if parallel else 0
        unread = deque(enumerate(files))
        try:
            while unread or self.queue or self.running:
                while parallel and self.queue and len(self.running) < slots:
                    job = self.queue.popleft()
                    self.running[job] = Background(_job_rows, job, self.inputs[job[0]],
                                                   self.settings)
                if unread and len(self.queue) < slots and (not self.inputs or sum(
                        len(i.graph.by_name) for i in self.inputs.values()) < ahead):
                    k, (path, name) = unread.popleft()
                    self._read(k, path, name, len(files), parallel)
                elif not parallel:
                    job = self.queue.popleft()
                    self._finished(job, _job_rows(job, self.inputs[job[0]], self.settings))
                else:
                    self._show()
                    for job in self._ended():
                        self._finished(job, self.running.pop(job).result())
        finally:
            for background in self.running.values():
                background.cancel()
        return [self.done[k] for k in range(len(files))]

    def _read(self, k: int, path: str, name: str, count: int, parallel: bool) -> None:
        """Read graph `k` and queue its jobs."""
        step = partial(_show, self.progress, f"compare {k + 1}/{count} {name}")
        step("reading")
        graph = api.read_graph(path, self.settings.options, self.settings.rules)
        if self.points and parallel:  # the bound its optimal runs read: computed once, here
            _makespan_bound(graph, self.settings)  # (seconds on Inception v1), and the
            # processes forked for them inherit it
        self.inputs[k] = _Input(path, name, step, graph)
        points = self.points
        self.queue.extend([(k, points[-1]), (k, points[0])] if points else [])
        self.queue.extend([(k, None), *((k, point) for point in points[1:-1])])

    def _ended(self) -> list[Job]:
        """Running jobs that ended (waits for one). A job without a process of its own
        (`Background` found forking unsafe here) runs when its result is asked for."""
        unforked = [job for job, background in self.running.items() if not background.forked]
        if unforked:
            return unforked[:1]
        by_pipe = {background.fileno(): job for job, background in self.running.items()}
        return [by_pipe[fd] for fd in sorted(cast(list[int], wait(list(by_pipe))))]

    def _finished(self, job: Job, rows: Rows) -> None:
        """Take a job's rows and queue the jobs they release, first; close its graph when
        none of its jobs is left."""
        self.finished += 1
        self.rows[job] = rows
        self.queue.extendleft(reversed(self._released(job)))
        k = job[0]
        if all(other != k for other, _ in (*self.queue, *self.running)):
            self._close(k)

    def _released(self, job: Job) -> list[Job]:
        """The budget points a frontier job releases: once its graph's slack-0 and fastest
        plans have both run."""
        k, point = job
        points = self.points
        if point is None or point not in (points[0], points[-1]):
            return []
        fewest, fastest = self.rows.get((k, points[0])), self.rows.get((k, points[-1]))
        if fewest is None or fastest is None:
            return []
        self.budgets[k] = [("makespan", None, budget)
                           for budget in _between(fewest[0], fastest[0])]
        return [(k, budget) for budget in self.budgets[k]]

    def _close(self, k: int) -> None:
        """Graph `k`'s rows and frontier entries, from its jobs' rows; it is no longer held."""
        i, points = self.inputs.pop(k), self.points
        frontier = _frontier(i.name, i.graph, [
            (point, self.rows.pop((k, point))[0])
            for point in [*points[:-1], *self.budgets.pop(k, []), *points[-1:]]]) \
            if points else []
        self.done[k] = (self.rows.pop((k, None)), frontier)

    def _show(self) -> None:
        _show(self.progress, "compare", f"{self.finished} jobs done, {len(self.running)} "
              f"running, {len(self.queue)} waiting")


def _job_rows(job: Job, i: _Input, settings: CompareSettings) -> Rows:
    """The rows of a job on graph `i`."""
    point = job[1]
    if point is None:
        return graph_rows(i.path, i.graph, settings, i.step, name=i.name)
    label, its_settings = _point_run(point, settings)
    i.step(label)
    return [_run(i.graph, "optimal", its_settings)[0]]


def best_known(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each frontier point with the best plan any point's run found within its limits, and
    `carried_from` (the position of the point whose run found it; null: its own). An events
    point admits the plans of the events points at no larger slack, the fewest events first,
    then the fastest; a makespan point those of the makespan objective and of the events
    objective at slack 0 (never slower than ge mode's) within its event budget, the fastest
    first, then the fewest events. Each run searches from its own starts, so a larger slack
    may end with a worse plan than a smaller one found.

    >>> points = [{"objective": "events", "slack": 0.0, "events": 5, "makespan_us": 9.0},
    ...           {"objective": "events", "slack": 5.0, "events": 5, "makespan_us": 9.5},
    ...           {"objective": "makespan", "event_budget": 8, "events": 8, "makespan_us": 9.2},
    ...           {"objective": "makespan", "event_budget": None, "events": 9,
    ...            "makespan_us": 4.0}]
    >>> [(p["events"], p["makespan_us"], p["carried_from"]) for p in best_known(points)]
    [(5, 9.0, None), (5, 9.0, 0), (5, 9.0, 0), (9, 4.0, None)]
    """
    def admits(point: dict[str, Any], other: dict[str, Any]) -> bool:
        if other["events"] is None:
            return False
        if point["objective"] == "events":  # (a makespan plan may need more events than
            # ge mode's plan, which the events objective never does)
            return other["objective"] == "events" and other["slack"] <= point["slack"]
        budget = point["event_budget"]
        return (other["objective"] == "makespan" or other["slack"] == 0.0) \
            and (budget is None or other["events"] <= budget)

    def rank(point: dict[str, Any], other: dict[str, Any]) -> tuple[float, float]:
        events, makespan = other["events"], other["makespan_us"]
        return (events, makespan) if point["objective"] == "events" else (makespan, events)

    result = []
    for k, point in enumerate(entries):
        # (on a tie the point keeps its own plan)
        best = min(((rank(point, other), i != k, i) for i, other in enumerate(entries)
                    if admits(point, other)), default=None)
        if best is None or best[2] == k:
            result.append({**point, "carried_from": None})
        else:
            source = entries[best[2]]
            result.append({**point, **{f: source[f] for f in CARRIED if f in source},
                           "carried_from": best[2]})
    return result


def _between(fewest: dict[str, Any], fastest: dict[str, Any]) -> list[int]:
    """Event budgets at FRONTIER_SHARES of the way from the events objective's plan at slack
    0 to the fastest plan, strictly between their events (none when either has no plan): what
    the events in between buy, which the slacks (all at or above ge mode's makespan) do not
    show where the fastest plan runs far faster.

    >>> _between({"events": 0}, {"events": 3}), _between({"events": 134}, {"events": 487})
    ([1, 2], [222, 310, 399])
    """
    if fewest["events"] is None or fastest["events"] is None:
        return []
    low, high = fewest["events"], fastest["events"]
    return sorted({b for share in FRONTIER_SHARES if low < (b := low + round((high - low) * share))
                   < high})


def pareto_front(points: Sequence[tuple[int | None, float | None]]) -> list[bool]:
    """For each (events, makespan) point, whether no other point needs no more events and
    runs no slower, one of them strictly less; a point without a plan (None) is on no front.

    >>> pareto_front([(5, 100.0), (7, 105.0), (2, 120.0), (2, 120.0), (None, None)])
    [True, False, True, True, False]
    """
    plans = [(e, m) for e, m in points if e is not None and m is not None]
    return [e is not None and m is not None
            and not any(f <= e and n <= m and (f, n) != (e, m) for f, n in plans)
            for e, m in points]


def graph_rows(path: str, graph: Graph, settings: CompareSettings,
               step: Callable[[str], None] = lambda _: None, *, name: str | None = None
               ) -> list[dict[str, Any]]:
    """The rows of one graph (read from `path`), one per mode of `settings`, in that order:
    what `compare` writes per graph and `sweep` per point (docs/compare-format.md). Two
    references per graph: Nimble's minimum for GE's allocation, and the makespan bound of every
    plan (`optimal.bounds.graph_makespan_bound`) from the program the first row emulated (any
    plan's program gives it; without one, ge mode's with the device limits lifted). `step(mode)`
    before each mode's run (the progress line); `name` is the rows' `input` (`input_names`),
    by default the file's name without its suffix."""
    allocation: Allocation | None
    try:  # GE's allocation: the reference's, and the ge rows' (allocated once)
        allocation = api.allocate(graph, ge_rules_for(settings.rules, graph))
        reference: int | None = nimble_min_events(task_dag(graph, allocation))
    except GE_FAILURES:  # one of GE's error cases: each mode's row says which
        allocation = reference = None
    runs = []
    for mode in settings.modes:
        step(mode)
        runs.append(_run(graph, mode, settings, allocation))
    if not runs:
        return []
    bound = _makespan_bound(graph, settings, next((p for _, p in runs if p is not None), None))
    return [{"input": name or Path(path).stem, "graph": graph.name, "file": str(path),
             "mode": mode, "nimble_min_events": reference, "makespan_bound_us": bound, **row}
            for mode, (row, _) in zip(settings.modes, runs, strict=True)]


def _makespan_bound(graph: Graph, settings: CompareSettings, program: Program | None = None
                    ) -> float | None:
    """The makespan bound of every plan of the graph, from `program` (any plan's; the optimal
    mode's, when it ran here) or, when the bound is not known yet, ge mode's with the device
    limits lifted; None where GE fails (no program)."""
    def made() -> Program:
        return program if program is not None else \
            _measured(without_device_limits(graph), "ge", settings)[1]

    try:
        return round(graph_makespan_bound(graph, _costs(settings), made), 3)
    except GE_FAILURES:
        return None


def _costs(settings: CompareSettings) -> CostTable:
    return settings.optimal.costs or default_cost_table()


def _run(graph: Graph, mode: str, settings: CompareSettings,
         allocation: Allocation | None = None) -> tuple[dict[str, Any], Program | None]:
    """The row of one mode, and the program its plan was emulated from. Over a device limit
    (streams, events, notifies): a ge or ge-minimal plan is measured with the limits lifted,
    status OVER_LIMIT and the limit as its reason (GE's figures still tell what the optimal
    mode had to beat); the optimal mode, which finds no plan within them, gives status
    NO_PLAN, its reason, and null for the figures of a plan. Where GE fails on the graph
    (one of its error cases: infeasible, or input GE rejects, such as single-stream mode with
    a stream label), so does every mode, which gives NO_PLAN and GE's error: the other graphs
    go on (a graph that does not load stops the run before). `allocation`: ge mode's on
    `graph`, when known."""
    began = time.perf_counter()
    program: Program | None
    try:
        try:
            row, program = _measured(graph, mode, settings, allocation)
        except LimitExceeded as exc:
            if mode == "optimal":
                raise
            row, program = _measured(without_device_limits(graph), mode, settings)
            row.update(status="OVER_LIMIT", reason=str(exc))
    except GE_FAILURES as exc:
        reason = str(exc).splitlines()[0]  # a race's first line; the verifier's list follows
        row, program = {**dict.fromkeys(_PLAN_FIGURES), "status": NO_PLAN, "gap": None,
                        "events_bound": None, "reason": reason}, None
    return {**row, "wall_s": round(time.perf_counter() - began, 3)}, program


def _measured(graph: Graph, mode: str, settings: CompareSettings,
              allocation: Allocation | None = None) -> tuple[dict[str, Any], Program]:
    solver: dict[str, Any] = {}
    if mode == "optimal":
        plan, report = api.optimal_plan(graph, settings.rules, settings.optimal)
        solver = report.to_json()
        rules = api.recorded_rules(graph, settings.rules, report)
    else:
        rules = ge_rules_for(settings.rules, graph)
        sync = "minimal" if mode == "ge-minimal" else "ge"
        plan = api.plan(graph, rules, "ge", sync) if allocation is None else \
            synchronize(graph, allocation, sync)
    document = plan.to_json()
    raise_for_ge_plan(verify_plan(graph, document, rules=rules), document)
    result = emulate(graph, document, costs=_costs(settings))
    chain, bounds = chain_summary(result), result.bounds  # (bounds: computed when read)
    return {**_counts(plan), "makespan_us": round(result.makespan_us, 3),
            "chain_sync_us": round(chain.send_us + chain.recv_us, 3),
            "critical_path_us": round(bounds.critical_path_us, 3),
            "work_over_units_us": round(bounds.work_over_units_us, 3),
            "status": solver.get("status", "-"), "gap": solver.get("gap"),
            "events_bound": solver.get("events_bound"),
            "reason": solver.get("reason", "")}, result.program


def _counts(plan: SyncPlan) -> dict[str, int]:
    return {"logical_streams": plan.allocation.main_stream_num,
            "physical_streams": plan.physical_stream_count,
            "events": plan.event_count + plan.notify_count, "notifies": plan.notify_count}


def _show(progress: Progress, where: str, what: str) -> None:
    """The progress line's label: which graph, and what runs on it."""
    progress.label = f"{where}: {what}"


def compare_command(paths: Sequence[str], settings: CompareSettings, *, json_out: bool,
                    plot: str | None, write: Callable[[Path, bytes], None]) -> str:
    """Run the comparison; the text (table or JSON) to print. The plot is written by `write`."""
    document = compare(paths, replace(settings, frontier=plot is not None))
    if plot is not None:
        write(Path(plot), frontier_plot(document))
    if json_out:
        return json.dumps(document, indent=1) + "\n"
    return compare_table(document)
