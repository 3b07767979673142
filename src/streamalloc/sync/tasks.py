"""Task accounting for the physical split and the plan (spec 1.4, 5.4).

GE counts the task records task generation produced; we have no task generator, so a graph
node issues `task_count` units (else its engine's default) on its main stream and on each
attached stream (the convention of GE's test harness). GE's explicit counts override those
records (ASSIGNED, 5.4): `_node_sqe_num` on every stream of the node, the HCCL
`_hccl_task_num` on its main stream and `_hccl_attached_task_num` on its attached streams. A
Send is 1 unit, a Recv 2 (an event wait also resets the event), a notify Send or Recv 1; a
StreamActive issues one task per stream it activates. The same count sizes the split, the
limit check after it and the plan's `tasks`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not, or_
from types import MappingProxyType

import msgspec
import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import INVALID, SYNC_UNITS, is_hccl
from streamalloc.ir.graph import Graph, Node
from streamalloc.recent import Recent
from streamalloc.sync.model import Rows, Task, TaskColumns, node_mask, task_at

ACTIVE = "StreamActive"
_ENGINE, _ATTRS, _TASK_COUNT = attrgetter("engine"), attrgetter("attrs"), attrgetter("task_count")


def own_units(graph: Graph, node: Node) -> int:
    """Units of a graph node's own task records on one stream (before GE's overrides)."""
    if node.task_count is not None:
        return node.task_count
    return graph.engines.engines[node.engine].default_task_count


def main_units(graph: Graph, node: Node) -> int:
    """Units of a graph node's task on its main stream, as the split counts them: ASSIGNED
    main when given, else its own."""
    own, main, _ = _counts(graph, node.name)
    return main if main > 0 else own


def _assigned(node: Node, attached: bool) -> int:
    value = 0
    if node.has_attr("_node_sqe_num"):
        value = node.int_attr("_node_sqe_num")
    elif is_hccl(node.type, node.engine):
        key = "_hccl_attached_task_num" if attached else "_hccl_task_num"
        value = node.int_attr(key)
    if value > 0 and node.type in ("Recv", "RecvMem"):
        value += 1
    return value


# Per node counted one by one (attributes or a task count: few): (own units, ASSIGNED main,
# ASSIGNED attached). Every other node issues its engine's default units, ASSIGNED none.
CountTable = dict[str, tuple[int, int, int]]

# Per graph (by its node table): the split and the plan ask for every task's units several times.
_COUNTS: Recent[CountTable] = Recent(4)
_T_UNITS: Recent[tuple[list[str], list[int]]] = Recent(4)
_UNITS_BY_NAME: Recent[dict[str, int]] = Recent(4)  # the same by name, for rows out of T-order
_EXPLICIT: Recent[Mapping[str, tuple[int, int]]] = Recent(4)
# the own units of the streamless nodes asked for: a search synchronizes hundreds of plans of
# one graph with the same streamless nodes
_OWN_UNITS: Recent[dict[str, int]] = Recent(4)
_SHARED_COUNTS: dict[tuple[int, int, int], tuple[int, int, int]] = {}


def _table(graph: Graph) -> CountTable:
    """The graph's count table; loops over tasks fetch it once and pass it on."""
    return _COUNTS.get_or_make(id(graph.by_name), (graph.by_name,),
                               lambda: _count_table(graph))


def _t_units(graph: Graph) -> tuple[list[str], list[int]]:
    """Each graph node's units on its main stream (ASSIGNED main if given, else its own), in
    T-order beside the names: what a task without attached streams issues."""
    def make() -> tuple[list[str], list[int]]:
        nodes = graph.t_ordered_nodes()
        defaults = {name: engine.default_task_count
                    for name, engine in graph.engines.engines.items()}
        units = list(map(defaults.__getitem__, map(_ENGINE, nodes)))
        table = _table(graph)
        for i in _counted_one_by_one(nodes):
            own, main, _ = table[nodes[i].name]
            units[i] = main if main > 0 else own
        return list(graph.t_ordered_names()), units

    return _T_UNITS.get_or_make(id(graph.by_name), (graph.by_name,), make)


def _node_row_units(graph: Graph, rows: Rows) -> list[int]:
    """Per row, the units of its graph node on its main stream (0 for a made row). The graph
    nodes' rows keep T-order among the made ones: their units are then a column read in
    order, without a lookup per name; otherwise they are looked up by name."""
    keep = node_mask(rows)
    names, units = _t_units(graph)
    if list(compress(rows.names, keep)) == names:
        column = np.zeros(len(keep), np.int64)
        column[np.frombuffer(keep, np.bool_)] = units
        return column.tolist()
    by_name = _UNITS_BY_NAME.get_or_make(id(graph.by_name), (graph.by_name,),
                                         lambda: dict(zip(names, units, strict=True)))
    column = np.fromiter(map(by_name.get, rows.names, repeat(0)), np.int64, len(keep))
    column[~np.frombuffer(keep, np.bool_)] = 0  # made rows: 0, whatever their names
    return column.tolist()


def _count_table(graph: Graph) -> CountTable:
    """The counts of the nodes counted one by one (`_counts` gives the others')."""
    nodes = list(graph.by_name.values())
    return {nodes[i].name: _shared(_node_counts(graph, nodes[i]))
            for i in _counted_one_by_one(nodes)}


def _counted_one_by_one(nodes: Sequence[Node]) -> Iterator[int]:
    """The positions of the nodes whose counts are not their engine's default: those with
    attributes or a task count (few), selected at C speed."""
    return compress(range(len(nodes)), map(or_, map(bool, map(_ATTRS, nodes)),
                                           map(is_not, map(_TASK_COUNT, nodes), repeat(None))))


def _shared(counts: tuple[int, int, int]) -> tuple[int, int, int]:
    return _SHARED_COUNTS.setdefault(counts, counts)  # few distinct values


def _counts(graph: Graph, name: str, table: CountTable | None = None) -> tuple[int, int, int]:
    """A graph node's counts (the graph's `table` when the caller has it)."""
    found = (_table(graph) if table is None else table).get(name)
    if found is None:  # not counted one by one: no attributes, no task count
        return _shared(_node_counts(graph, graph.by_name[name]))
    return found


def _node_counts(graph: Graph, node: Node) -> tuple[int, int, int]:
    own = own_units(graph, node)
    if not node.attrs:  # explicit counts are attributes; most nodes have none
        return own, 0, 0
    return own, _assigned(node, False), _assigned(node, True)


def assigned(graph: Graph, task: Task, attached: bool) -> int:
    """GE's ASSIGNED(node, attached): explicit unit counts, 0 when none is given."""
    if task.is_sync:
        return 0
    return _counts(graph, task.name)[2 if attached else 1]


def explicit_counts(graph: Graph) -> Mapping[str, tuple[int, int]]:
    """ASSIGNED (main, attached) of the graph's nodes that give an explicit count: a loop
    asking for ASSIGNED per task looks up these few instead. Found once per graph (the split
    asks on every synchronize of a search; the graphs sharing its nodes share them)."""
    return _EXPLICIT.get_or_make(id(graph.by_name), (graph.by_name,), lambda: MappingProxyType(
        {name: (main, attached) for name, (_, main, attached) in _table(graph).items()
         if main or attached}))  # the count table holds every node with attributes


def task_units(graph: Graph, task: Task, table: CountTable | None = None) -> dict[int, int]:
    """{stream: units} a task issues, as GE counts them (5.4): its records per stream, an
    explicit count (ASSIGNED) replacing them; a generated StreamActive counts 1 here (the
    split replaces a StreamActive's count by the streams it activates)."""
    if task.is_sync:
        return {task.stream: SYNC_UNITS.get(task.type, 1)}
    own, main, extra = _counts(graph, task.name, table)
    units = {task.stream: own}
    for a in task.attached:
        units[a] = units.get(a, 0) + own
    if main > 0:
        units[task.stream] = main
    if extra > 0:
        units.update(dict.fromkeys(task.attached, extra))
    return units


def home_streamless(graph: Graph, rows: TaskColumns) -> None:
    """A task without a stream that issues tasks goes on stream 0 (5.4, B7): GE moves such a
    node (a root-graph RTS label node, 2.6 of the logical spec) before it counts tasks. GE
    synchronized the graph before, when the node had no stream, so no event orders it with a
    neighbour on another stream: AllocationInfeasible then, since that plan would race."""
    if INVALID not in rows.streams:  # most models
        return
    own = _OWN_UNITS.get_or_make(id(graph.by_name), (graph.by_name,), dict)
    table = _table(graph)
    homed: list[tuple[str, int]] = []  # (node, its units)
    for row in list(compress(range(len(rows.streams)), map(INVALID.__eq__, rows.streams))):
        if row in rows.made:
            rows.set_stream(row, 0)
            continue
        name = rows.names[row]
        units = own.get(name)
        if units is None:
            units = own[name] = _counts(graph, name, table)[0]
        if units > 0:
            rows.set_stream(row, 0)
            homed.append((name, units))
    if homed:
        _check_homed(graph, rows, homed)


def _check_homed(graph: Graph, rows: TaskColumns, homed: Sequence[tuple[str, int]]) -> None:
    """Raise AllocationInfeasible when a node `home_streamless` put on stream 0 (with its
    units) has a producer or consumer on another stream, directly or through nodes without a
    stream (which pass orderings on, as the verifier reads them): nothing orders the two."""
    stream_of = dict(zip(rows.names, rows.streams, strict=True))

    def producers(name: str) -> list[str]:
        node = graph.by_name[name]
        return [*(edge.src for edge in node.data_sources()), *node.control_inputs]

    def consumers(name: str) -> tuple[str, ...]:
        return graph.graph(graph.by_name[name].graph).successors(name)

    for name, units in homed:
        for role, step in (("producer", producers), ("consumer", consumers)):
            seen, todo = {name}, list(step(name))
            while todo:
                other = todo.pop()
                if other in seen:
                    continue
                seen.add(other)
                stream = stream_of.get(other, INVALID)
                if stream == INVALID:
                    todo += step(other)
                elif stream != 0:
                    node = graph.by_name[name]
                    raise AllocationInfeasible(
                        f"node {name!r} ({node.type}, engine {node.engine}) has no stream but "
                        f"issues {units} task(s); GE puts such a node on "
                        f"stream 0 after synchronizing (B7), so no event orders it with its "
                        f"{role} {other!r} on stream {stream}. A node GE gives no stream (its "
                        "engine's, or a root-graph label node) should issue no tasks: check "
                        "its task_count")


# A task's (stream, units) pairs, by stream, for the tasks with more than one stream (attached
# streams, or a StreamActive's count by the streams it activates): the others issue their
# single units on their stream.
StreamUnits = tuple[tuple[int, int], ...]


class RowUnits(msgspec.Struct, frozen=True):
    """Each row's units (`single`, on its stream; 0 for a row without a stream) and the
    (stream, units) pairs of the rows on more than one stream (`multi`)."""

    single: list[int]
    multi: dict[int, StreamUnits]


def _row_units(graph: Graph, rows: Rows) -> RowUnits:
    """Units by row, as GE counts them (5.4), before the StreamActive override."""
    single = _node_row_units(graph, rows)
    for row, task in rows.made.items():
        single[row] = SYNC_UNITS.get(task.type, 1)
    table = _table(graph)
    multi: dict[int, StreamUnits] = {}
    for row in compress(range(len(rows.names)), rows.attached):  # rows with attached streams
        if rows.streams[row] != INVALID:
            task = task_at(rows, row, graph.by_name)
            multi[row] = tuple(sorted({task.stream: 0, **task_units(graph, task, table)}.items()))
    return RowUnits(single, multi)


def collect(graph: Graph, rows: TaskColumns, max_task: int,
            active: Mapping[str, Sequence[int]]) -> RowUnits:
    """Each row's units (rows without a stream count none), with the StreamActive override
    (5.4): a StreamActive counts the tasks the streams it activates will need."""
    units = _row_units(graph, rows)
    activators = [r for r, t in rows.made.items() if t.type == ACTIVE
                  and rows.streams[r] != INVALID]
    if not activators:
        return units
    total: dict[int, int] = defaultdict(int)
    for row, (stream, u) in enumerate(zip(rows.streams, units.single, strict=True)):
        pairs = units.multi.get(row)
        if pairs is not None:
            for s, v in pairs:
                total[s] += v
        elif stream != INVALID:
            total[stream] += u
    estimate = {s: math.ceil(t / max_task) for s, t in total.items()}
    for row in activators:
        counted = dict(units.multi.get(row, ((rows.streams[row], units.single[row]),)))
        counted[rows.streams[row]] = sum(estimate[s] for s in active.get(rows.names[row], ())
                                         if s in estimate)
        units.multi[row] = tuple(sorted(counted.items()))
    return units


def stream_units(graph: Graph, rows: Rows, active: Mapping[str, Sequence[int]]
                 ) -> dict[int, int]:
    """Units per physical stream of the final task order: what each task issues there, a
    StreamActive one task per stream in its final activation list."""
    units = _row_units(graph, rows)
    streams = np.fromiter(rows.streams, np.int64, len(rows.streams))
    weights = np.fromiter(units.single, np.int64, len(units.single))
    weights[list(units.multi)] = 0
    on = streams != INVALID
    found = np.bincount(streams[on], weights=weights[on]).astype(np.int64)
    counted: dict[int, int] = defaultdict(int)
    counted.update((s, int(found[s])) for s in sorted_distinct(streams[on]).tolist())
    for pairs in units.multi.values():
        for stream, used in pairs:
            counted[stream] += used
    for row, task in rows.made.items():
        if task.type == ACTIVE and task.name in active and rows.streams[row] != INVALID:
            counted[rows.streams[row]] += len(active[task.name]) - units.single[row]
    return dict(counted)
