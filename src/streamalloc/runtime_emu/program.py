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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from streamalloc.errors import InputError, LimitExceeded
from streamalloc.facts import ENTER_TYPES, LIMIT_DEFAULTS, LOOP_BACK_TYPES
from streamalloc.ir.graph import Graph, Node
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.dims import idle_graphs, idle_tasks
from streamalloc.runtime_emu.plan import Plan, SyncNode

TASK, NOP, SEND, RECV = 0, 1, 2, 3
EVENT_SPACE, NOTIFY_SPACE = 0, 1
KIND_NAMES = {TASK: "task", NOP: "nop", SEND: "send", RECV: "recv"}
RTS_ENGINE = "DNN_VM_RTS"
# One task while compiling: name, kind, type, stream, position, engine, duration, sync id,
# id space, block dim (the tid is the row's index).
Row = tuple[str, int, str, int, int, str | None, float, int, int, int]


@dataclass(frozen=True, slots=True)
class Program:
    """The compiled tasks, in parallel tuples indexed by tid; immutable and reusable."""

    graph: str
    stream_ids: tuple[int, ...]
    stream_tids: Mapping[int, tuple[int, ...]]
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


def compile_program(graph: Graph, plan: Plan, table: CostTable, dim: int = 0) -> Program:
    """Check the plan against the graph and build the task lists (InputError, LimitExceeded);
    `dim` picks the dim every multi-dims Case runs."""
    if plan.graph != graph.name:
        raise InputError(f"{plan.source}: graph: the plan is for graph {plan.graph!r}, but the "
                         f"graph file holds {graph.name!r}; pass the plan made for this graph")
    return _Compiler(graph, plan, table, dim).build()


class _Compiler:
    def __init__(self, graph: Graph, plan: Plan, table: CostTable, dim: int) -> None:
        self.graph, self.plan, self.table, self.dim = graph, plan, table, dim
        self.costs = CostModel(graph, table)
        self.idle: set[str] = set()  # tasks of the dims that do not run
        self.nodes = {n.name: n for n in graph.all_nodes()}
        self.tid_of: dict[str, int] = {}
        self.rows: list[Row] = []
        self.sync_kinds = {  # type -> (kind, id space, latency)
            "Send": (SEND, EVENT_SPACE, table.event_record_us),
            "Recv": (RECV, EVENT_SPACE, table.event_wait_us),
            "SendNotify": (SEND, NOTIFY_SPACE, table.notify_record_us),
            "RecvNotify": (RECV, NOTIFY_SPACE, table.notify_wait_us)}

    def build(self) -> Program:
        self._rows()
        self._idle_dims()
        self._check_sync_nodes()
        events, notifies = self._sync_counts()
        preds, topo = self._preds()
        (names, kinds, types, streams, positions, engines, durations, sync_ids, spaces,
         widths) = (tuple(col) for col in zip(*self.rows, strict=True)) if self.rows else \
            ((),) * 10
        return Program(
            graph=self.graph.name, stream_ids=tuple(self.plan.streams),
            stream_tids=self._stream_tids(),
            names=names, kinds=kinds, types=types, streams=streams, positions=positions,
            engines=engines, durations=durations, widths=widths, sync_ids=sync_ids,
            spaces=spaces, preds=preds, checks=self._checks(preds), topo=topo,
            activates=self._activates(), activators=self._activators(), event_count=events,
            notify_count=notifies,
            requested_streams=self._requested_streams())

    def _stream_tids(self) -> dict[int, tuple[int, ...]]:
        first, result = 0, {}
        for sid, names in self.plan.streams.items():  # tids run stream by stream
            result[sid] = tuple(range(first, first + len(names)))
            first += len(names)
        return result

    def _rows(self) -> None:
        """One row per stream entry, in stream order (the tid is the row index)."""
        tid_of, rows, sync_nodes, nodes = self.tid_of, self.rows, self.plan.sync_nodes, self.nodes
        sync_kinds = self.sync_kinds
        for sid, names in self.plan.streams.items():
            for pos, name in enumerate(names):
                if name in tid_of:
                    self._twice(sid, pos, name)
                sync = sync_nodes.get(name)
                if sync is None:
                    if name not in nodes:
                        raise self._fail(f"streams[{str(sid)!r}][{pos}]",
                                         f"{name!r} is neither a node of graph "
                                         f"{self.graph.name!r} nor listed in sync_nodes")
                    rows.append(self._node_row(sid, pos, nodes[name]))
                elif sync.stream != sid or sync.event is None:
                    rows.append(self._generated_row(sid, pos, sync))
                else:  # Send/Recv, inlined: plans carry many
                    kind, space, latency = sync_kinds[sync.type]
                    rows.append((name, kind, sync.type, sid, pos, None, latency, sync.event,
                                 space, 0))
                tid_of[name] = len(rows) - 1

    def _idle_dims(self) -> None:
        """The tasks of the dims that do not run become no-ops."""
        self.idle = idle_tasks(self.plan.streams, self.nodes,
                               idle_graphs(self.graph, self.dim), self._shared_ids())
        for name in self.idle:
            tid = self.tid_of[name]
            _, _, kind, sid, pos, *_ = self.rows[tid]
            self.rows[tid] = (name, NOP, kind, sid, pos, None, 0.0, -1, 0, 0)

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

    def _checks(self, preds: tuple[tuple[int, ...], ...]
                ) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        """Per task: (producer, producer's stream column, producer's position) to check at its
        start; a same-stream producer listed earlier is ordered by the stream and skipped."""
        column = {sid: i for i, sid in enumerate(self.plan.streams)}
        rows, empty = self.rows, ()
        result = []
        for tid, row in enumerate(rows):
            sid, pos = row[3], row[4]
            mine = [(p, column[rows[p][3]], rows[p][4]) for p in preds[tid]
                    if rows[p][3] != sid or rows[p][4] > pos]
            result.append(tuple(mine) if mine else empty)
        return tuple(result)

    def names_of(self, tid: int) -> str:
        """The name of a task."""
        return self.rows[tid][0]

    def _fail(self, where: str, message: str) -> InputError:
        return InputError(f"{self.plan.source}: {where}: {message}")

    def _twice(self, sid: int, pos: int, name: str) -> None:
        first = self.rows[self.tid_of[name]]
        raise self._fail(f"streams[{str(sid)!r}][{pos}]",
                         f"task {name!r} is listed twice (first on stream {first[3]} at position "
                         f"{first[4]}); each task runs on one stream")

    def _node_row(self, sid: int, pos: int, node: Node) -> Row:
        engine = self.graph.engines.get(node.engine)
        count = node.task_count if node.task_count is not None else \
            (engine.default_task_count if engine is not None else 1)
        if count == 0 and node.cost_us is None:
            return (node.name, NOP, node.type, sid, pos, None, 0.0, -1, 0, 0)
        run, width = self.costs.kernel(node)
        return (node.name, TASK, node.type, sid, pos, node.engine, self.table.launch_us + run,
                -1, 0, width)

    def _generated_row(self, sid: int, pos: int, sync: SyncNode) -> Row:
        if sync.stream != sid:
            raise self._fail(f"streams[{str(sid)!r}][{pos}]",
                             f"sync node {sync.name!r} says stream {sync.stream} in sync_nodes "
                             f"but is listed on stream {sid}")
        # a generated StreamActive: a runtime task on the RTS engine, one unit
        table = self.table
        formula = table.formula(sync.type)
        run = formula.us if formula.formula == "fixed" else table.engine(RTS_ENGINE).fallback_us
        return (sync.name, TASK, sync.type, sid, pos, RTS_ENGINE, table.launch_us + run, -1, 0,
                1)

    def _check_sync_nodes(self) -> None:
        for i, name in enumerate(self.plan.sync_nodes):
            if name not in self.tid_of:
                raise self._fail(f"sync_nodes[{i}]", f"sync node {name!r} is in no stream list")

    def _sync_counts(self) -> tuple[int, int]:
        highest = [-1, -1]
        for row in self.rows:
            if row[1] in (SEND, RECV):
                highest[row[8]] = max(highest[row[8]], row[7])
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
        highest = max(self.plan.streams, default=-1) + 1
        return max(self.plan.physical_stream_count, highest, 1) + self.plan.attached_stream_count

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

    def _preds(self) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
        # Task predecessors over graph edges, followed through nodes that issue no task.
        through: dict[str, frozenset[int]] = {}
        preds: list[tuple[int, ...]] = [()] * len(self.rows)
        topo = []
        for node in self.graph.all_nodes():
            found: set[int] = set()
            for src in _sources(node, self.nodes):
                tid = self.tid_of.get(src)
                if tid is not None:
                    found.add(tid)
                else:
                    found |= through.get(src, frozenset())
            tid = self.tid_of.get(node.name)
            if tid is None:
                if found:
                    through[node.name] = frozenset(found)
                continue
            if node.name in self.idle:
                continue
            preds[tid] = tuple(sorted(t for t in found if self.names_of(t) not in self.idle))
            topo.append(tid)
        return tuple(preds), tuple(topo)


def _sources(node: Node, nodes: Mapping[str, Node]) -> Iterator[str]:
    """Producers of `node` over the edges that order tasks (data, then control)."""
    for src in node.data_sources():
        producer = nodes[src.src]
        # GE's pair rule 3: edges out of Enter/RefEnter are not synchronized by events (the
        # loop construct orders them), so they are neither checked nor on the critical path
        if producer.type not in LOOP_BACK_TYPES and producer.type not in ENTER_TYPES:
            yield src.src
    for name in node.control_inputs:
        if nodes[name].type not in ENTER_TYPES:
            yield name
