"""Run a compiled plan on the emulated device: streams are kernel processes.

`EmulatedDevice` is the environment of one run and owns all its mutable state: the clock and
queue (from the kernel), one `Resource` per engine, one kernel `Event` per event id and per
notify id, one activation event per activated stream, and the timeline. Each stream is a
process that walks its task list in order:

* a task waits until its block dim of units of its engine are free, holds them for its time,
  releases them, then records the activation events of the streams it activates. An engine
  serves its tasks strictly in arrival order: a wide task waiting for units holds back every
  later one, so narrow tasks of other streams cannot starve it (a kernel starts on all its
  cores at once; strict FIFO is the simplest deterministic rule that never starves one);
* a Send (SendNotify) takes its record latency, then records its event; a Recv (RecvNotify)
  waits until its event is recorded, which resets it, then takes its wait latency;
* a stream that some node activates first waits for that activation.

Ordering is checked as it happens. Each stream carries a vector clock: entry `t` counts the
tasks of stream `t` known to be complete, through stream order, the record a wait consumed and
the activation that started the stream. A task whose producer has not ended is an
`early_start`; one whose producer ended but is not covered by the clock is `unsynchronized`
(it was right by luck of timing, a race on a real device). An event or notify id used again
(a record, or a wait) without being ordered after its previous wait is an `unordered_reuse`:
which record a wait takes, or whether a record is lost, then depends on timing, and a plan that
ran here could deadlock on a device. All three are violations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from itertools import compress, repeat
from operator import ge
from typing import Any

import numpy as np

from streamalloc import collector
from streamalloc.errors import InternalError
from streamalloc.facts import LIMIT_DEFAULTS
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.runtime_emu.kernel import (
    PARK,
    Environment,
    Event,
    Process,
    ProcessGen,
    Request,
    Resource,
)
from streamalloc.runtime_emu.memory import DeviceMemory, VariableLoader, load_variables
from streamalloc.runtime_emu.node_tasks import NodeTask
from streamalloc.runtime_emu.plan import Plan, plan_from_dict
from streamalloc.runtime_emu.program import (
    NOTIFY_SPACE,
    RECV,
    SEND,
    TASK,
    Program,
    compile_program,
)
from streamalloc.runtime_emu.results import EmulationResult, blocked_streams
from streamalloc.runtime_emu.streams import (
    DeviceStreams,
    StreamPool,
    StreamRegistry,
    acquire_for_model,
    load_model_v1,
)

INF = math.inf
EARLY, UNSYNCED, REUSE = "early_start", "unsynchronized", "unordered_reuse"


class DeviceEvent(Event):
    """A device event or notify: a kernel event that remembers its last wait.

    "Reuse after wait": a record must come after the previous wait of the same id, and a wait
    must arrive after it too; otherwise which record a wait takes, or whether a record is lost,
    depends on timing, and another device can deadlock where this run did not.
    """

    __slots__ = ("checked", "last_record", "last_wait")

    def __init__(self, name: str, *, checked: bool = True) -> None:
        super().__init__(name)
        self.checked = checked  # False for activations: one-shot, several activators may record
        self.last_record = -1   # tid of the last Send that recorded it
        self.last_wait: tuple[int, int, int] | None = None  # (stream column, prefix, tid)


class EmulatedDevice(Environment):
    """Engines, events, notifies, activations and the timeline of one run."""

    def __init__(self, program: Program, table: CostTable) -> None:
        super().__init__()
        self.program = program
        count = program.task_count()
        self.start = [INF] * count
        self.end = [INF] * count
        self.units = {e: Resource(e, table.engine(e).units)
                      for e in sorted({e for e in program.engines if e is not None})}
        self.sync = ([DeviceEvent(f"event {i}") for i in range(program.event_count)],
                     [DeviceEvent(f"notify {i}") for i in range(program.notify_count)])
        self.activation = {sid: DeviceEvent(f"activation of stream {sid}", checked=False)
                           for sid in program.activators if program.stream_tids.get(sid)}
        self.column = {sid: i for i, sid in enumerate(program.stream_ids)}
        self.sender_of = [-1] * count  # recv tid -> the send tid whose record it consumed
        self.activated_at: dict[int, tuple[int, float]] = {}  # stream -> (activator tid, time)
        self.violations: list[tuple[str, int, int]] = []      # (kind, producer, consumer)
        self.stream_of: dict[Process, int] = {}

    def check(self, tid: int, clock: np.ndarray, checks: tuple[tuple[int, int, int], ...]) -> None:
        """Record a violation for each producer not complete, or not ordered, before `tid`."""
        now, end = self.now, self.end
        for producer, column, position in checks:
            if end[producer] > now:
                self.violations.append((EARLY, producer, tid))
            elif clock[column] <= position:
                self.violations.append((UNSYNCED, producer, tid))

    def items(self) -> dict[int, list[tuple[Any, ...]]]:
        """The tasks of each stream as `StreamRunner` runs them, bound to this run's objects:
        every task's item made by one pass in C, the Sends and Recvs patched after."""
        program = self.program
        none = ()
        acts = {tid: tuple(self.activation[s] for s in targets if s in self.activation)
                for tid, targets in program.activates.items()}
        # one shared claim per engine and block dim (None: no engine)
        claims: dict[tuple[str | None, int], Request | None] = {}
        for engine, width in set(zip(program.engines, program.widths, strict=True)):
            claims[(engine, width)] = None if engine is None else \
                self.units[engine].request(width)
        tids = range(program.task_count())
        items = list(zip(tids, program.durations, map(claims.__getitem__,
                                                      zip(program.engines, program.widths,
                                                          strict=True)),
                         program.checks, map(acts.get, tids, repeat(none)), repeat(None)))
        sync = self.sync
        for tid in compress(tids, map(ge, program.kinds, repeat(SEND))):  # Sends, Recvs
            event = sync[program.spaces[tid]][program.sync_ids[tid]]
            records, wait = ((event,), None) if program.kinds[tid] == SEND else (none, event)
            items[tid] = (tid, program.durations[tid], None, none, records, wait)
        return {sid: items[run.start:run.stop] for sid, run in program.stream_tids.items()}


class StreamRunner:
    """The process of one stream: its vector clock and the loop over its tasks.

    Every task has the same shape, `(tid, duration, claim, checks, records, wait)`: a Recv is a
    task that first waits for its event (`wait`), a Send a task that records its event when it
    ends (`records`), an activator a task that records the activation events of its streams.
    One uniform loop is what makes the emulator fast: no dispatch on the kind of task.
    """

    __slots__ = ("clock", "dev", "me", "sid")

    def __init__(self, dev: EmulatedDevice, sid: int) -> None:
        self.dev, self.sid, self.me = dev, sid, dev.column[sid]
        # tasks of each stream known to be complete; an array, so that merging is one call
        self.clock = np.zeros(len(dev.column), np.int64)

    def run(self, items: list[tuple[Any, ...]]) -> ProcessGen:
        """Walk the task list in order (the hot loop of the emulator: locals only)."""
        dev, clock = self.dev, self.clock
        start, end, sender_of = dev.start, dev.end, dev.sender_of
        if items and self.sid in dev.activation:
            yield from self.activated()
        for pos, (tid, duration, claim, checks, records, wait) in enumerate(items):
            start[tid] = dev.now
            if wait is not None:
                sender_of[tid], snapshot = yield wait  # the wait also resets the event
                self.waited(wait, snapshot, tid, pos)
            # taken here when free (no round trip through the queue), else queued in the kernel
            if claim is not None and claim.take() is PARK:
                yield claim  # resumed holding the units
                start[tid] = dev.now
            if checks:
                dev.check(tid, clock, checks)
            if duration:
                yield duration
            end[tid] = dev.now
            if claim is not None:
                claim.release(dev)
            if records:
                self.record(records, tid, pos)

    def activated(self) -> ProcessGen:
        """Wait for the activation of this stream; it starts knowing what its activator knew."""
        activator, snapshot = yield self.dev.activation[self.sid]
        merge(self.clock, snapshot)
        self.dev.activated_at[self.sid] = (activator, self.dev.now)

    def waited(self, event: DeviceEvent, snapshot: np.ndarray, tid: int, pos: int) -> None:
        """After a wait: check it was ordered after the previous wait, then merge the clock."""
        self._ordered_after_last_wait(event, tid)
        event.last_wait = (self.me, pos + 1, tid)
        merge(self.clock, snapshot)

    def record(self, events: tuple[DeviceEvent, ...], tid: int, pos: int) -> None:
        """Record events with this stream's clock: `pos` and everything before it are done."""
        snapshot = self.clock.copy()
        snapshot[self.me] = pos + 1
        for event in events:
            if event.checked:
                if event.recorded:  # nobody waited for the last record: this one is lost
                    self.dev.violations.append((REUSE, event.last_record, tid))
                else:
                    self._ordered_after_last_wait(event, tid)
                event.last_record = tid
            event.record(self.dev, (tid, snapshot))

    def _ordered_after_last_wait(self, event: DeviceEvent, tid: int) -> None:
        last = event.last_wait  # on this stream it came earlier: ordered by the stream
        if last is not None and last[0] != self.me and self.clock[last[0]] < last[1]:
            self.dev.violations.append((REUSE, last[2], tid))


def merge(clock: np.ndarray, snapshot: np.ndarray) -> None:
    """Merge a vector clock into `clock`, in place."""
    np.maximum(clock, snapshot, out=clock)


def emulate(graph: Graph, plan: Plan | Mapping[str, Any], *, costs: CostTable | None = None,
            variables: VariableLoader | None = None, pool: StreamPool | None = None,
            runtime: str = "v2", dim: int = 0, tasks: Mapping[str, NodeTask] | None = None
            ) -> EmulationResult:
    """Load the plan on a fresh emulated device and run it to completion (or deadlock).

    `pool` lets several models share one V2 stream pool (later ones reuse its streams);
    `runtime="v1"` creates streams the V1 way instead; every multi-dims Case runs its dim
    `dim % dims` (`dims.py`), the others are skipped. Raises InputError for a plan that does
    not fit the graph and LimitExceeded for one over a device limit; deadlocks and violations
    are results, not exceptions (see `EmulationResult.status`). `tasks`: the graph's
    `graph_node_tasks` on the table, for a caller that runs many plans of one graph.
    """
    table = costs or default_cost_table()
    if not isinstance(plan, Plan):
        plan = plan_from_dict(plan)
    with collector.paused():
        program = compile_program(graph, plan, table, dim, tasks)
        stream_report = _create_streams(program, graph, pool, runtime)
        dev = EmulatedDevice(program, table)
        memory = DeviceMemory(table.memory)
        loaded = load_variables(variables, memory)  # before the first task
        items = dev.items()
        for sid in program.stream_ids:
            proc = dev.process(StreamRunner(dev, sid).run(items[sid]), f"stream {sid}")
            dev.stream_of[proc] = sid
        began = time.perf_counter()
        dev.run()
        wall = time.perf_counter() - began
        return _result(dev, table, stream_report, loaded, wall)



def _create_streams(program: Program, graph: Graph, pool: StreamPool | None,
                    runtime: str) -> dict[str, int | str]:
    streams = program.requested_streams
    if runtime == "v1":
        return load_model_v1(StreamRegistry(DeviceStreams()), 0, streams)
    if runtime != "v2":
        raise InternalError(f"runtime must be 'v1' or 'v2', not {runtime!r}")
    capacity = int(graph.option("streamalloc.max_streams", "")
                   or LIMIT_DEFAULTS["streamalloc.max_streams"])
    return acquire_for_model(pool or StreamPool(DeviceStreams(), capacity), streams)


def _result(dev: EmulatedDevice, table: CostTable, stream_report: dict[str, int | str],
            loaded: dict[str, Any] | None, wall: float) -> EmulationResult:
    program = dev.program
    unconsumed = tuple(sorted((space, i) for space, events in enumerate(dev.sync)
                              for i, ev in enumerate(events) if ev.recorded))
    syncs = [tid for tid, kind in enumerate(program.kinds) if kind >= SEND]  # Sends, Recvs
    return EmulationResult(
        program=program, table=table, makespan_us=dev.now, start=tuple(dev.start),
        end=tuple(dev.end), matched=_matched(program, dev, syncs),
        activated_at=dict(dev.activated_at),
        violations=tuple(dev.violations), deadlock=blocked_streams(dev, program),
        records=_done(program, dev.end, SEND, syncs), waits=_done(program, dev.end, RECV, syncs),
        lost_records=sum(ev.lost for events in dev.sync for ev in events),
        unconsumed=unconsumed, stream_pool=stream_report, variables=loaded,
        steps=dev.steps, wall_s=wall)


def _matched(program: Program, dev: EmulatedDevice, syncs: list[int]
             ) -> dict[int, tuple[int, float]]:
    """Recv tid -> (Send tid whose record it consumed, time of the wake-up); `syncs`: the
    tids of the Sends and Recvs, ascending (only a Recv consumes a record)."""
    return {tid: (send, dev.end[tid] - program.durations[tid] if dev.end[tid] != INF
                  else dev.now)
            for tid in syncs if (send := dev.sender_of[tid]) >= 0}


def _done(program: Program, end: list[float], kind: int, syncs: list[int]) -> tuple[int, int]:
    """Completed tasks of `kind` (a Send or a Recv, among `syncs`) per id space: (events,
    notifies)."""
    counts = [0, 0]
    for tid in syncs:
        if program.kinds[tid] == kind and end[tid] != INF:
            counts[program.spaces[tid]] += 1
    return counts[0], counts[NOTIFY_SPACE]


__all__ = ["TASK", "EmulatedDevice", "StreamRunner", "emulate"]
