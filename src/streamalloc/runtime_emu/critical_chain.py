"""The critical chain of an emulated run: why the run ended when it did.

Walking back from a task, each task started when the task before it on its stream ended
(`STREAM`; the first task of a stream at time 0), when its Recv's event was recorded (`EVENT`:
the chain goes on at the Send, on the producer's stream) or, waiting at its engine, when the
units it needed came free (`UNITS`: it goes on at the task whose end freed them, `releaser`).
The walk ends at time 0, so the chain's tasks and the gaps between them add up to the end of
the first one (`chain_summary`): what the run spent on graph tasks, on Sends and Recvs, and
waiting, along the one path that decided its length. The optimal mode's makespan search
(`optimal/critical.py`) moves the tasks of this chain.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from streamalloc.runtime_emu.program import RECV, SEND, TASK
from streamalloc.runtime_emu.results import EmulationResult

EPS = 1e-6  # us: times closer than this are the same instant
STREAM, EVENT, UNITS = "stream", "event", "units"


Step = tuple[int, str]  # a task of the chain and why it started when it did (`STREAM`,
# `EVENT`, `UNITS`): plain tuples, as a chain can hold every task of a 100k-node run


def last_task(result: EmulationResult, tids: Sequence[int] | None = None) -> int | None:
    """Of `tids` (default: every task that ended), the one that ended last (ties: the
    lowest tid)."""
    end = result.end
    candidates = range(len(end)) if tids is None else tids
    return max((t for t in candidates if end[t] != math.inf),
               key=lambda t: (end[t], -t), default=None)


def critical_steps(result: EmulationResult, last: int | None) -> list[Step]:
    """The chain of causes from task `last` back to time 0, `last` first (a task that waited
    for units and that no task's end freed goes on at the task before it on its stream).

    A task's cause does not depend on the walk, so every task's is found at once (arrays); the
    walk then takes each run of `STREAM` steps down a stream in one slice (a stream's tids are
    a range: the task before t on its stream is t - 1) and stops only where the chain changes
    stream or meets its first task."""
    program, matched = result.program, result.matched
    size = program.task_count()
    end = np.array(result.end, dtype=np.float64)
    first = np.zeros(size, dtype=bool)
    for run in program.stream_tids.values():
        if len(run):
            first[run.start] = True
    arrival = np.zeros(size)  # when the task before it on its stream ended (0 for the first)
    arrival[1:] = end[:-1]
    arrival[first] = 0.0
    waited = (np.array(program.kinds) == TASK) & \
        (np.array(result.start, dtype=np.float64) > arrival + EPS)
    woken = [t for t, (_, wake) in matched.items() if wake > arrival[t] + EPS]
    stop = waited | first
    stop[woken] = True
    last_stop = np.maximum.accumulate(np.where(stop, np.arange(size), -1)).tolist()
    woken_set, waited_list, first_list = set(woken), waited.tolist(), first.tolist()
    holder = releaser(result)
    steps: list[Step] = []
    tid = last
    while tid is not None:
        at = last_stop[tid]  # tid down to at + 1 started when the task before ended
        steps += [(t, STREAM) for t in range(tid, at, -1)]
        before = None if first_list[at] else at - 1
        if at in woken_set:
            steps.append((at, EVENT))
            tid = matched[at][0]  # waited for the Send, on the producer's stream
        elif waited_list[at]:
            steps.append((at, UNITS))
            held = holder(at)
            tid = held if held is not None else before
        else:
            steps.append((at, STREAM))
            tid = before
    return steps


def releaser(result: EmulationResult) -> Callable[[int], int | None]:
    """For a graph task that waited for its engine's units: the engine's task whose end freed
    them, at its start (ties: the lowest tid); None when none ended then (its stream was
    activated late). The engines' tasks are sorted by end on the first call (most chains
    never wait for units)."""
    start, end = result.start, result.end
    tables: dict[str, tuple[list[float], list[int]]] = {}

    def holder(tid: int) -> int | None:
        engine = result.program.engines[tid]
        if not tables:
            for name, tids in engine_tasks(result).items():
                by_end = sorted(tids, key=lambda t: (end[t], t))
                tables[name] = ([end[t] for t in by_end], by_end)
        if engine not in tables:
            return None
        ends, tids = tables[engine]
        begin = start[tid]
        k = bisect.bisect_left(ends, begin - EPS)
        found = [tids[i] for i in range(k, bisect.bisect_right(ends, begin + EPS, lo=k))
                 if tids[i] != tid]
        return min(found) if found else None

    return holder


def engine_tasks(result: EmulationResult) -> dict[str, list[int]]:
    """Each engine's graph tasks, in tid order."""
    program = result.program
    by_engine: dict[str, list[int]] = {}
    for t, engine in enumerate(program.engines):
        if engine is not None and program.kinds[t] == TASK:
            by_engine.setdefault(engine, []).append(t)
    return by_engine


@dataclass(frozen=True, slots=True)
class ChainSummary:
    """Where the critical chain's time went: its tasks, their time by kind (graph tasks per
    engine, Sends, Recvs), the time between them when none of them ran, and how often it
    changed stream through an event or waited for an engine's units (or, first on a stream
    activated late, for the activation). The times add up to the end of its last task."""

    tasks: int
    graph_task_us: float
    engines: dict[str, float]
    send_us: float
    recv_us: float
    gap_us: float
    event_hops: int
    unit_waits: int


def chain_spans(result: EmulationResult) -> list[tuple[int, float, float]]:
    """(tid, begin, end) of each task of the chain from the task that ended last, last first:
    the time the chain spends on it. A Recv that waited for its event counts from the record
    on (before it, the chain runs on the Send's stream). Empty for a run that did not end
    (a deadlock: no task ended last)."""
    if result.status == "deadlock":
        return []
    return _spans(result, critical_steps(result, last_task(result)))


def _spans(result: EmulationResult, steps: list[Step]) -> list[tuple[int, float, float]]:
    start, end, matched = result.start, result.end, result.matched
    return [(tid, matched[tid][1] if cause == EVENT else start[tid], end[tid])
            for tid, cause in steps]


def chain_summary(result: EmulationResult) -> ChainSummary:
    """The summary of the chain from the task that ended last (`chain_spans`)."""
    program = result.program
    steps = critical_steps(result, last_task(result))
    engines: dict[str, float] = {}
    send = recv = 0.0
    for tid, begin, finish in _spans(result, steps):
        took = finish - begin
        kind = program.kinds[tid]
        if kind == TASK:
            engine = program.engines[tid] or "none"
            engines[engine] = engines.get(engine, 0.0) + took
        elif kind == SEND:
            send += took
        elif kind == RECV:
            recv += took
    last = result.end[steps[0][0]] if steps else 0.0
    graph = sum(engines.values())
    return ChainSummary(len(steps), graph, dict(sorted(engines.items())), send, recv,
                        max(0.0, last - graph - send - recv), sum(c == EVENT for _, c in steps),
                        sum(c == UNITS for _, c in steps))
