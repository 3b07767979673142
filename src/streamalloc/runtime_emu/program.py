"""Compile a graph, a plan and a cost table into the flat task lists the emulator runs.

Every entry of a stream list becomes one task, numbered `tid` stream by stream in ascending
stream id. Kinds:

* `TASK`: a graph node with device work (or a generated StreamActive): holds its block dim
  of units of its engine for `launch_us` + its execution time (`cost_model.CostModel.kernel`);
* `NOP`: a graph node listed on a stream that issues no device work (task count 0, e.g. GE-local
  Reshape or NetOutput): zero time, no unit, but it keeps its place in the stream order;
* `SEND` / `RECV`: event (space 0) or notify (space 1) record and wait.

Graph nodes in no stream list (GE's stream -1: Data, Const, ...) issue no task; dependencies
are followed through them, so `u -> Data-like -> v` still orders u before v. Of a multi-dims
Case only one dim runs (`dims.py`): the tasks of the others are `NOP`s without dependencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain, compress, pairwise, repeat
from operator import is_, is_not
from typing import cast

import numpy as np

from streamalloc.errors import InputError, LimitExceeded
from streamalloc.facts import LIMIT_DEFAULTS
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.dims import idle_graphs, idle_tasks
from streamalloc.runtime_emu.node_tasks import NO_TASK, NodeTask, node_tasks
from streamalloc.runtime_emu.plan import Plan, SyncNode
from streamalloc.runtime_emu.task_edges import task_pairs

TASK, NOP, SEND, RECV = 0, 1, 2, 3
EVENT_SPACE, NOTIFY_SPACE = 0, 1
KIND_NAMES = {TASK: "task", NOP: "nop", SEND: "send", RECV: "recv"}
RTS_ENGINE = "DNN_VM_RTS"


@dataclass(frozen=True, slots=True)
class Program:
    """The compiled tasks, in parallel tuples indexed by tid; immutable and reusable."""

    graph: str
    stream_ids: tuple[int, ...]
    stream_tids: Mapping[int, range]  # tids run stream by stream
    names: tuple[str, ...]
    kinds: tuple[int, ...]
    types: tuple[str, ...]
    streams: tuple[int, ...]
    positions: tuple[int, ...]
    engines: tuple[str | None, ...]
    durations: tuple[float, ...]
    widths: tuple[int, ...]        # block dim: units of its engine a task holds, 0 without one
    sync_ids: tuple[int, ...]      # event/notify id, -1 for non-sync tasks
    spaces: tuple[int, ...]        # EVENT_SPACE / NOTIFY_SPACE for sync tasks
    preds: tuple[tuple[int, ...], ...]   # task predecessors over graph edges
    checks: tuple[tuple[tuple[int, int, int], ...], ...]  # what to check at each task's start
    topo: tuple[int, ...]          # tids of graph tasks in a topological (T-) order
    activates: Mapping[int, tuple[int, ...]]   # activator tid -> streams it activates
    activators: Mapping[int, tuple[str, ...]]  # activated stream -> names of its activators
    event_count: int
    notify_count: int
    requested_streams: int

    def task_count(self) -> int:
        """Tasks over all streams (graph tasks and sync tasks)."""
        return len(self.names)


def compile_program(graph: Graph, plan: Plan, table: CostTable, dim: int = 0,
                    tasks: Mapping[str, NodeTask] | None = None) -> Program:
    """Check the plan against the graph and build the task lists (InputError, LimitExceeded);
    `dim` picks the dim every multi-dims Case runs; `tasks`: the graph's `graph_node_tasks` on
    `table`, when the caller compiles many plans of one graph (a third of an optimal-mode
    evaluation was the cost model)."""
    if plan.graph != graph.name:
        raise InputError(f"{plan.source}: graph: the plan is for graph {plan.graph!r}, but the "
                         f"graph file holds {graph.name!r}; pass the plan made for this graph")
    return _Compiler(graph, plan, table, dim, tasks).build()


class _Compiler:
    """Builds the columns of a `Program` (`names`, `kinds`, ... indexed by tid), list by list:
    plans have a hundred thousand tasks, and a pass per column costs less than a row each."""

    def __init__(self, graph: Graph, plan: Plan, table: CostTable, dim: int,
                 tasks: Mapping[str, NodeTask] | None) -> None:
        self.graph, self.plan, self.table, self.dim = graph, plan, table, dim
        self.tasks = tasks
        self.idle: set[str] = set()  # tasks of the dims that do not run
        self.nodes = graph.by_name
        self.names = [name for names in plan.streams.values() for name in names]
        self.tid_of = dict(zip(self.names, range(len(self.names)), strict=True))
        self.sync_kinds = {  # type -> (kind, id space, latency)
            "Send": (SEND, EVENT_SPACE, table.event_record_us),
            "Recv": (RECV, EVENT_SPACE, table.event_wait_us),
            "SendNotify": (SEND, NOTIFY_SPACE, table.notify_record_us),
            "RecvNotify": (RECV, NOTIFY_SPACE, table.notify_wait_us)}

    def build(self) -> Program:
        self._columns()
        self._idle_dims()
        self._check_sync_nodes()
        events, notifies = self._sync_counts()
        consumer, producer, topo = task_pairs(
            self.graph.t_ordered_nodes(), self.graph.t_producers(), self.tid_of,
            {self.tid_of[name] for name in self.idle}, len(self.names))
        preds = self._preds(consumer, producer)
        return Program(
            graph=self.graph.name, stream_ids=tuple(self.plan.streams),
            stream_tids=self._stream_tids(),
            names=tuple(self.names), kinds=tuple(self.kinds), types=tuple(self.types),
            streams=tuple(self.streams), positions=tuple(self.positions),
            engines=tuple(self.engines), durations=tuple(self.durations),
            widths=tuple(self.widths), sync_ids=tuple(self.sync_ids), spaces=tuple(self.spaces),
            preds=preds, checks=self._checks(consumer, producer), topo=topo,
            activates=self._activates(), activators=self._activators(), event_count=events,
            notify_count=notifies,
            requested_streams=self._requested_streams())

    def _stream_tids(self) -> dict[int, range]:
        first, result = 0, {}
        for sid, names in self.plan.streams.items():  # tids run stream by stream
            result[sid] = range(first, first + len(names))
            first += len(names)
        return result

    def _columns(self) -> None:
        """One task per stream entry, in stream order (the tid is the entry's index); each
        column made by one pass in C where it can be, the few sync tasks patched after."""
        names, plan = self.names, self.plan
        lengths = list(map(len, plan.streams.values()))
        self.streams = list(chain.from_iterable(map(repeat, plan.streams, lengths)))
        self.positions = list(chain.from_iterable(map(range, lengths)))
        syncs = list(map(plan.sync_nodes.get, names))  # a sync node wins over a graph node
        found = list(map(self.nodes.get, names))
        # `is` holds only where both are None: an entry that is neither a sync nor a graph node
        if len(self.tid_of) != len(names) or any(map(is_, syncs, found)):
            raise self._entry_error()
        self.sync_tids = list(compress(range(len(names)), map(is_not, syncs, repeat(None))))
        for tid in self.sync_tids:
            found[tid] = None  # the sync node's task, not a graph node's of its name
        # every other entry is a graph node (checked just above)
        known = self.tasks
        if known is None:
            tasks = node_tasks(self.graph, CostModel(self.graph, self.table), found)
        else:
            tasks = [NO_TASK if node is None else known[node.name] for node in found]
        engines, durations, widths = zip(*tasks, strict=True) if tasks else ((), (), ())
        self.engines, self.durations, self.widths = list(engines), list(durations), list(widths)
        self.kinds = [NOP if engine is None else TASK for engine in engines]
        self.types = [node.type if node is not None else "" for node in found]
        self.sync_ids, self.spaces = [-1] * len(names), [0] * len(names)
        for tid in self.sync_tids:
            self._sync_task(tid, cast("SyncNode", syncs[tid]))

    def _sync_task(self, tid: int, sync: SyncNode) -> None:
        """Fill in the columns of a sync node's task."""
        if sync.stream != self.streams[tid]:
            raise self._entry_error()
        self.types[tid] = sync.type
        if sync.event is None:  # a generated StreamActive: a runtime task on RTS, one unit
            table = self.table
            formula = table.formula(sync.type)
            run = formula.us if formula.formula == "fixed" else \
                table.engine(RTS_ENGINE).fallback_us
            self.kinds[tid], self.engines[tid], self.widths[tid] = TASK, RTS_ENGINE, 1
            self.durations[tid] = table.launch_us + run
        else:  # Send/Recv and their notify twins
            kind, space, latency = self.sync_kinds[sync.type]
            self.kinds[tid], self.durations[tid] = kind, latency
            self.sync_ids[tid], self.spaces[tid] = sync.event, space

    def _entry_error(self) -> InputError:
        """The first bad stream entry, in stream order: a task listed twice, a name that is
        neither a graph node nor a sync node, a sync node listed on another stream."""
        seen: dict[str, tuple[int, int]] = {}
        for sid, names in self.plan.streams.items():
            for pos, name in enumerate(names):
                where = f"streams[{str(sid)!r}][{pos}]"
                if name in seen:
                    return self._fail(where, f"task {name!r} is listed twice (first on stream "
                                             f"{seen[name][0]} at position {seen[name][1]}); "
                                             "each task runs on one stream")
                seen[name] = (sid, pos)
                sync = self.plan.sync_nodes.get(name)
                if sync is None and name not in self.nodes:
                    return self._fail(where, f"{name!r} is neither a node of graph "
                                             f"{self.graph.name!r} nor listed in sync_nodes")
                if sync is not None and sync.stream != sid:
                    return self._fail(where, f"sync node {sync.name!r} says stream "
                                             f"{sync.stream} in sync_nodes but is listed on "
                                             f"stream {sid}")
        raise AssertionError("no bad stream entry")  # callers found one

    def _idle_dims(self) -> None:
        """The tasks of the dims that do not run become no-ops."""
        self.idle = idle_tasks(self.plan.streams, self.nodes,
                               idle_graphs(self.graph, self.dim), self._shared_ids())
        for name in self.idle:
            tid = self.tid_of[name]
            self.kinds[tid], self.engines[tid], self.durations[tid] = NOP, None, 0.0
            self.sync_ids[tid], self.spaces[tid], self.widths[tid] = -1, 0, 0

    def _shared_ids(self) -> tuple[list[str], list[str]]:
        """The Sends and the Recvs of the ids several Sends record (multi-dims reuse)."""
        ends: dict[tuple[int, int], tuple[list[str], list[str]]] = {}
        for name, sync in self.plan.sync_nodes.items():
            kind = self.sync_kinds.get(sync.type)
            if kind is not None and sync.event is not None:
                group = ends.setdefault((kind[1], sync.event), ([], []))
                group[0 if kind[0] == SEND else 1].append(name)
        shared = [group for group in ends.values() if len(group[0]) > 1]
        return [n for g in shared for n in g[0]], [n for g in shared for n in g[1]]

    def _checks(self, consumer: np.ndarray, producer: np.ndarray
                ) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        """Per task: (producer, producer's stream column, producer's position) to check at its
        start; a same-stream producer listed earlier is ordered by the stream and skipped."""
        column = {sid: i for i, sid in enumerate(self.plan.streams)}
        streams = np.array(self.streams, np.int64)
        positions = np.array(self.positions, np.int64)
        unordered = (streams[producer] != streams[consumer]) | \
            (positions[producer] > positions[consumer])
        found: dict[int, list[tuple[int, int, int]]] = {}
        for tid, p in zip(consumer[unordered].tolist(), producer[unordered].tolist(),
                          strict=True):
            found.setdefault(tid, []).append((p, column[self.streams[p]], self.positions[p]))
        empty: tuple[tuple[int, int, int], ...] = ()
        checks = [empty] * len(self.names)
        for tid, mine in found.items():
            checks[tid] = tuple(mine)
        return tuple(checks)

    def _fail(self, where: str, message: str) -> InputError:
        return InputError(f"{self.plan.source}: {where}: {message}")

    def _check_sync_nodes(self) -> None:
        for i, name in enumerate(self.plan.sync_nodes):
            if name not in self.tid_of:
                raise self._fail(f"sync_nodes[{i}]", f"sync node {name!r} is in no stream list")

    def _sync_counts(self) -> tuple[int, int]:
        highest = [-1, -1]
        kinds, sync_ids, spaces = self.kinds, self.sync_ids, self.spaces
        for tid in self.sync_tids:
            if kinds[tid] in (SEND, RECV):
                highest[spaces[tid]] = max(highest[spaces[tid]], sync_ids[tid])
        events = max(self.plan.event_count, highest[EVENT_SPACE] + 1)
        notifies = max(self.plan.notify_count, highest[NOTIFY_SPACE] + 1)
        for what, count, key in (("events", events, "streamalloc.max_events"),
                                 ("notifies", notifies, "streamalloc.max_notifies")):
            limit = self._limit(key)
            if count > limit:
                raise LimitExceeded(f"{self.plan.source}: the plan uses {count} {what}, the "
                                    f"device allows {limit} (graph option {key})")
        return events, notifies

    def _limit(self, key: str) -> int:
        text = self.graph.option(key, "")
        try:
            return int(text) if text else LIMIT_DEFAULTS[key]
        except ValueError:
            raise InputError(f"{self.graph.source or self.graph.name}: option {key}: expected "
                             f"an integer, found {text!r}") from None

    def _requested_streams(self) -> int:
        """The physical streams and the attached ones without a task list: an attached stream
        that carries sync tasks has one (its ids follow the logical streams'; a plan without
        `logical_stream_count` counts every attached stream apart)."""
        plan = self.plan
        ids = max(plan.physical_stream_count, max(plan.streams, default=-1) + 1, 1)
        first = plan.logical_stream_count
        attached = plan.attached_stream_count if first is None else \
            len(range(max(first, ids), first + plan.attached_stream_count))
        return ids + attached

    def _activates(self) -> dict[int, tuple[int, ...]]:
        result = {}
        for name, streams in self.plan.stream_activations.items():
            if name not in self.nodes and name not in self.plan.sync_nodes:
                raise self._fail(f"stream_activations[{name!r}]",
                                 f"activator {name!r} is neither a graph node nor a sync node")
            sync = self.plan.sync_nodes.get(name)
            if sync is not None and sync.event is not None:
                raise self._fail(f"stream_activations[{name!r}]",
                                 f"activator {name!r} is a {sync.type}; streams are activated "
                                 "by tasks such as StreamActive")
            if name in self.tid_of:
                result[self.tid_of[name]] = tuple(dict.fromkeys(streams))
        return result

    def _activators(self) -> dict[int, tuple[str, ...]]:
        result: dict[int, list[str]] = {}
        for name, streams in self.plan.stream_activations.items():
            for sid in streams:
                result.setdefault(sid, []).append(name)
        return {sid: tuple(names) for sid, names in sorted(result.items())}

    def _preds(self, consumer: np.ndarray, producer: np.ndarray
               ) -> tuple[tuple[int, ...], ...]:
        """Per task: its predecessors over the graph edges, in ascending tids."""
        producers = producer.tolist()
        ends = np.cumsum(np.bincount(consumer, minlength=len(self.names))).tolist()
        return tuple(tuple(producers[start:end]) for start, end in pairwise([0, *ends]))

