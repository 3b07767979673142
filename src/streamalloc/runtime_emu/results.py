"""What a run produced: timeline, sync matches, violations, deadlock, and derived statistics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streamalloc.runtime_emu.bounds import LowerBounds, lower_bounds
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.kernel import Event, Process, Waitable
from streamalloc.runtime_emu.program import NOTIFY_SPACE, RECV, SEND, TASK, Program


@dataclass(frozen=True, slots=True)
class Blocked:
    """A stream that can never go on: the task it stands at and what it waits for.

    `waits_for` is "event", "notify" or "activation"; `by` lists the tasks that could satisfy
    the wait (Sends of that id, or the activators) with their stream (None: on no stream).
    """

    stream: int
    task: str
    waits_for: str
    id: int | None
    by: tuple[tuple[str, int | None], ...]


@dataclass(frozen=True, slots=True)
class EmulationResult:
    """The outcome of `emulate`; `status` is "ok", "deadlock" or "violation"."""

    program: Program
    table: CostTable
    makespan_us: float
    start: tuple[float, ...]
    end: tuple[float, ...]
    matched: Mapping[int, tuple[int, float]]
    activated_at: Mapping[int, tuple[int, float]]
    violations: tuple[tuple[str, int, int], ...]
    deadlock: tuple[Blocked, ...]
    records: tuple[int, int]
    waits: tuple[int, int]
    lost_records: int
    unconsumed: tuple[tuple[int, int], ...]
    stream_pool: Mapping[str, int | str]
    variables: Mapping[str, Any] | None
    steps: int
    wall_s: float

    @property
    def bounds(self) -> LowerBounds:
        """The program's lower bounds on any plan's makespan, computed when asked: a search
        emulates hundreds of plans and reads none of them."""
        return lower_bounds(self.program, self.table)

    @property
    def status(self) -> str:
        """Deadlock wins over violation: a run that did not finish says so first."""
        if self.deadlock:
            return "deadlock"
        return "violation" if self.violations else "ok"

    def busy_us(self, sid: int) -> float:
        """Time stream `sid` spent running its tasks (not waiting for events or units)."""
        program, end = self.program, self.end
        return sum(program.durations[t] for t in program.stream_tids[sid] if end[t] < math.inf)

    def engine_stats(self) -> dict[str, dict[str, float | int]]:
        """Per engine: units, tasks run, busy unit-time (block dim x task time, summed) and
        utilization (busy unit-time over units x makespan)."""
        stats: dict[str, dict[str, float | int]] = {}
        program, inf = self.program, math.inf
        for engine, kind, end, width, duration in zip(
                program.engines, program.kinds, self.end, program.widths, program.durations,
                strict=True):
            if engine is None or kind != TASK or end == inf:
                continue
            row = stats.get(engine)
            if row is None:
                row = stats[engine] = {"units": self.table.engine(engine).units, "tasks": 0,
                                       "busy_us": 0.0}
            row["tasks"] += 1
            row["busy_us"] += width * duration  # summed in tid order
        for row in stats.values():
            capacity = row["units"] * self.makespan_us
            row["utilization"] = row["busy_us"] / capacity if capacity else 0.0
        return dict(sorted(stats.items()))

    def violation_records(self) -> list[dict[str, Any]]:
        """Violations as plain dicts, in the order they happened.

        For a broken dependency, `producer` and `consumer` are the two graph tasks; for an
        unordered reuse of an event id (`event` names it), the earlier Send or Recv of that
        id and the one that is not ordered after it.
        """
        p = self.program
        records = []
        for kind, u, v in self.violations:
            row: dict[str, Any] = {
                "kind": kind, "producer": p.names[u], "consumer": p.names[v],
                "producer_stream": p.streams[u], "consumer_stream": p.streams[v],
                "producer_end_us": None if self.end[u] == math.inf else self.end[u],
                "consumer_start_us": self.start[v]}
            if p.sync_ids[v] >= 0:
                space = "notify" if p.spaces[v] == NOTIFY_SPACE else "event"
                row["event"] = f"{space} {p.sync_ids[v]}"
            records.append(row)
        return records


class _Stopped(Protocol):
    """What `blocked_streams` needs of a finished run (an `EmulatedDevice`)."""

    @property
    def end(self) -> Sequence[float]: ...
    @property
    def activation(self) -> Mapping[int, Event]: ...
    @property
    def stream_of(self) -> Mapping[Process, int]: ...

    def blocked(self) -> list[tuple[Process, Waitable]]: ...


def blocked_streams(dev: _Stopped, program: Program) -> tuple[Blocked, ...]:
    """Describe each stream still parked when the queue ran dry (a deadlock)."""
    activations = {event: sid for sid, event in dev.activation.items()}
    result = []
    for proc, target in dev.blocked():
        sid = dev.stream_of[proc]
        tid = next(t for t in program.stream_tids[sid] if dev.end[t] == math.inf)
        if target in activations:
            result.append(Blocked(sid, program.names[tid], "activation", None,
                                  _activators(program, sid)))
            continue
        if program.kinds[tid] != RECV:  # a unit wait can always be served: a kernel bug
            raise AssertionError(f"stream {sid} is parked on {target!r} at {program.names[tid]}")
        space, ident = program.spaces[tid], program.sync_ids[tid]
        result.append(Blocked(sid, program.names[tid],
                              "notify" if space == NOTIFY_SPACE else "event", ident,
                              _senders(program, space, ident)))
    return tuple(result)


def _senders(program: Program, space: int, ident: int) -> tuple[tuple[str, int | None], ...]:
    return tuple((program.names[t], program.streams[t]) for t in range(program.task_count())
                 if program.kinds[t] == SEND and program.spaces[t] == space
                 and program.sync_ids[t] == ident)


def _activators(program: Program, sid: int) -> tuple[tuple[str, int | None], ...]:
    where = {program.names[t]: program.streams[t] for t in program.activates}
    return tuple((name, where.get(name)) for name in program.activators.get(sid, ()))
