"""Running the points of a sweep: one point in a worker (`run_point`), and the three ways to
fan them out: in this process (`--jobs 1`), over local processes (`--jobs N`) or over a Ray
cluster (`--ray ADDRESS`, the optional `ray` extra, imported only then).

Every runner yields `PointResult`s in completion order; the caller puts them back in the order
the spec lists. A point's warnings and error travel back as text, so that the three runners
print the same lines, and an error that does not pickle still arrives.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import cache
from typing import Any

from msgspec.structs import replace

from streamalloc import api
from streamalloc.commands.compare import CompareSettings, graph_rows
from streamalloc.commands.sweep_spec import SweepPoint
from streamalloc.errors import InputError, InputWarning, StreamallocError, UsageError
from streamalloc.rules import RuleSet
from streamalloc.runtime_emu.cost_table import CostTable, load_cost_table

RAY_EXTRA = "pip install 'streamalloc[ray]'"


@dataclass(frozen=True)
class PointError:
    """A point that failed: the exit code of its error and the message."""

    exit_code: int
    message: str


@dataclass(frozen=True)
class PointResult:
    """What a worker sends back: the row (or the error) and the input warnings it saw."""

    index: int
    row: dict[str, Any] | None
    warnings: tuple[str, ...]
    error: PointError | None = None


def run_point(point: SweepPoint) -> PointResult:
    """Run one point: load its graph with its options and rules, then compare's row of its
    mode (`commands.compare.graph_rows`), with the peak memory of this process."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        try:
            row = _row(point)
            error = None
        except StreamallocError as exc:
            row, error = None, PointError(exc.exit_code, str(exc))
    seen = tuple(str(w.message) for w in caught if issubclass(w.category, InputWarning))
    return PointResult(point.index, row, seen, error)


def _row(point: SweepPoint) -> dict[str, Any]:
    rules = _rule_set(point.rules_path) if point.rules_path else None
    costs = _costs(point.cost) if point.cost else None
    optimal = replace(api.OptimalOptions(), **dict(point.solver), costs=costs)
    settings = CompareSettings((point.mode,), rules, dict(point.options), optimal)
    graph = api.read_graph(point.path, settings.options, rules,
                           settings_from="the point's options")
    (row,) = graph_rows(point.file, graph, settings)
    results = {k: v for k, v in row.items() if k not in ("input", "graph", "file", "mode")}
    return {"point": point.index, "input": row["input"], "graph": row["graph"],
            "file": row["file"], "rules": point.rules, "options": dict(point.options),
            "mode": point.mode, "solver": dict(point.solver), **results,
            "max_rss_mb": max_rss_mb()}


@cache
def _rule_set(path: str) -> RuleSet | None:
    return api.load_rule_set(path)


@cache
def _costs(path: str) -> CostTable:
    return load_cost_table(path)


def max_rss_mb() -> float | None:
    """The peak resident memory of this process so far (`ru_maxrss`), in MiB; None where the
    platform has no `resource` module."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def serial(points: Sequence[SweepPoint]) -> Iterator[PointResult]:
    """`--jobs 1`: every point in this process, in order."""
    for point in points:
        yield run_point(point)


def processes(points: Sequence[SweepPoint], jobs: int,
              run: Callable[[SweepPoint], PointResult] = run_point) -> Iterator[PointResult]:
    """`--jobs N`: `run` of each point in N spawned processes (the same on every platform;
    no state forked from this one), fed the points in the order the spec lists. A process
    that dies (the OOM killer, say) breaks them all: the points not done then run one at a
    time (alone, a point has the memory to itself), and a point whose process dies even so
    fails, named."""
    left = {point.index: point for point in points}
    try:
        for result in _pooled(points, min(jobs, len(points)) or 1, run):
            del left[result.index]
            yield result
    except BrokenProcessPool:
        yield from _one_at_a_time(list(left.values()), run)


def _pooled(points: Sequence[SweepPoint], workers: int,
            run: Callable[[SweepPoint], PointResult]) -> Iterator[PointResult]:
    pool = _pool(workers)
    try:
        pending: set[Future[PointResult]] = {pool.submit(run, p) for p in points}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:  # also when the caller stops at a failed point: drop what has not started
        pool.shutdown(wait=True, cancel_futures=True)


def _one_at_a_time(points: Sequence[SweepPoint],
                   run: Callable[[SweepPoint], PointResult]) -> Iterator[PointResult]:
    pool = None
    try:
        for point in points:
            pool = pool or _pool(1)
            try:
                result = pool.submit(run, point).result()
            except BrokenProcessPool:
                pool.shutdown(wait=True)
                pool = None
                result = PointResult(point.index, None, (), PointError(
                    1, "its process died (out of memory, or a signal), also when it ran "
                    "alone"))
            yield result
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def on_ray(points: Sequence[SweepPoint], address: str, jobs: int) -> Iterator[PointResult]:
    """`--ray ADDRESS`: one Ray task per point, each asking for as many CPUs as its solver has
    workers. `local` starts a local instance of `jobs` CPUs (and stops it at the end), `auto`
    joins the cluster of this machine, `ray://host:port` a remote one; in a program that has
    already called `ray.init`, its connection is used and kept."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        _connect(ray, address, jobs)
    try:
        task = ray.remote(run_point)
        cpus = ray.cluster_resources().get("CPU", 1)  # a point never waits for more than exist
        refs = {task.options(num_cpus=min(dict(p.solver).get("workers", 1), cpus)).remote(p): p
                for p in points}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for ref in done:
                del refs[ref]
                yield ray.get(ref)
    finally:
        for ref in refs:
            ray.cancel(ref)
        if started:
            ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(f"--ray needs Ray, an optional dependency: {RAY_EXTRA}") from None
    return ray


def _connect(ray: Any, address: str, jobs: int) -> None:
    local = address == "local"
    try:
        ray.init(address=address, num_cpus=jobs if local else None,
                 include_dashboard=False if local else None, logging_level=logging.ERROR,
                 log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"--ray {address}: cannot start or reach a Ray cluster: {exc} "
                         "(use local, auto or ray://HOST:PORT)") from None
