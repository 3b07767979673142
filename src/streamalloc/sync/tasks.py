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
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not, or_

from streamalloc.facts import INVALID, SYNC_UNITS, is_hccl
from streamalloc.ir.graph import Graph, Node
from streamalloc.recent import Recent
from streamalloc.sync.model import Task

ACTIVE = "StreamActive"
_ENGINE, _ATTRS, _TASK_COUNT = attrgetter("engine"), attrgetter("attrs"), attrgetter("task_count")


def own_units(graph: Graph, node: Node) -> int:
    """Units of a graph node's own task records on one stream (before GE's overrides)."""
    if node.task_count is not None:
        return node.task_count
    return graph.engines.engines[node.engine].default_task_count


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


# Per node: (own units, ASSIGNED main, ASSIGNED attached), for every node on first use.
CountTable = dict[str, tuple[int, int, int]]

# Per graph (by its node table): the split and the plan ask for every task's units several times.
_COUNTS: Recent[CountTable] = Recent(4)
_SHARED_COUNTS: dict[tuple[int, int, int], tuple[int, int, int]] = {}


def _table(graph: Graph) -> CountTable:
    """The graph's count table; loops over tasks fetch it once and pass it on."""
    table = _COUNTS.get(id(graph.by_name), graph.by_name)
    if table is None:
        table = _COUNTS.put(id(graph.by_name), (graph.by_name,), _count_table(graph))
    return table


def _count_table(graph: Graph) -> CountTable:
    """Every node's counts. A node without attributes and task count has its engine's default
    (most nodes: looked up at C speed); the others are counted one by one."""
    names, nodes = graph.by_name.keys(), graph.by_name.values()
    defaults = {name: _shared((engine.default_task_count, 0, 0))
                for name, engine in graph.engines.engines.items()}
    table = dict(zip(names, map(defaults.__getitem__, map(_ENGINE, nodes)), strict=True))
    own_counts = map(or_, map(bool, map(_ATTRS, nodes)),
                     map(is_not, map(_TASK_COUNT, nodes), repeat(None)))
    for node in compress(nodes, own_counts):
        table[node.name] = _shared(_node_counts(graph, node))
    return table


def _shared(counts: tuple[int, int, int]) -> tuple[int, int, int]:
    return _SHARED_COUNTS.setdefault(counts, counts)  # few distinct values


def _counts(graph: Graph, name: str, table: CountTable | None = None) -> tuple[int, int, int]:
    """A node's counts, from the graph's `table` when the caller has it."""
    return (_table(graph) if table is None else table)[name]


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


def explicit_counts(nodes: Iterable[Node]) -> dict[str, tuple[int, int]]:
    """ASSIGNED (main, attached) of those of `nodes` that give an explicit count: a loop
    asking for ASSIGNED per task looks up these few instead."""
    found: dict[str, tuple[int, int]] = {}
    for node in nodes:
        if node.attrs:  # explicit counts are attributes
            counts = (_assigned(node, False), _assigned(node, True))
            if any(counts):
                found[node.name] = counts
    return found


def _single_stream_units(graph: Graph, task: Task, table: CountTable) -> int:
    """`task_units` of a task without attached streams (most tasks), without making a dict."""
    if task.is_sync:
        return SYNC_UNITS.get(task.type, 1)
    own, main, _ = table[task.name]
    return main if main > 0 else own


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


def issues_tasks(graph: Graph, task: Task) -> bool:
    """The task has records at all (5.4: such a node must live on a stream)."""
    return task.is_sync or _counts(graph, task.name)[0] > 0


def home_streamless(graph: Graph, tasks: Sequence[Task]) -> None:
    """A task without a stream that issues tasks goes on stream 0 (5.4, B7): GE moves such a
    node (a root-graph RTS label node, 2.6 of the logical spec) before it counts tasks."""
    for task in tasks:
        if task.stream == INVALID and issues_tasks(graph, task):
            task.stream = 0


# A task's (stream, units) pairs, by stream; () for a task without a stream.
StreamUnits = tuple[tuple[int, int], ...]


def collect(graph: Graph, tasks: list[Task], max_task: int,
            active: Mapping[str, Sequence[int]]) -> list[StreamUnits]:
    """Each task's (stream, units) pairs (by task index), with the StreamActive override
    (5.4)."""
    units_of: list[StreamUnits] = []
    total: dict[int, int] = defaultdict(int)
    shared: dict[StreamUnits, StreamUnits] = {}  # a 1M-task list holds a few hundred tuples
    table = _table(graph)
    activators: list[int] = []  # indices of the StreamActive tasks, a few
    for task in tasks:
        if task.stream == INVALID:
            units_of.append(())
            continue
        if task.type == ACTIVE:
            activators.append(len(units_of))
        if task.attached:
            pairs = tuple(sorted({task.stream: 0, **task_units(graph, task, table)}.items()))
            for s, u in pairs:
                total[s] += u
        else:  # most tasks: one stream
            u = _single_stream_units(graph, task, table)
            total[task.stream] += u
            pairs = ((task.stream, u),)
        units_of.append(shared.setdefault(pairs, pairs))
    estimate = {s: math.ceil(t / max_task) for s, t in total.items()}
    for i in activators:
        task = tasks[i]
        units = dict(units_of[i])
        units[task.stream] = sum(estimate[s] for s in active.get(task.name, ())
                                 if s in estimate)
        units_of[i] = tuple(sorted(units.items()))
    return units_of


def stream_units(graph: Graph, tasks: Sequence[Task],
                 active: Mapping[str, Sequence[int]]) -> dict[int, int]:
    """Units per physical stream of the final task order: what each task issues there, a
    StreamActive one task per stream in its final activation list."""
    units: dict[int, int] = defaultdict(int)
    table = _table(graph)
    for task in tasks:
        if task.stream == INVALID:
            continue
        if task.attached:
            for stream, used in task_units(graph, task, table).items():
                units[stream] += used
        else:
            units[task.stream] += _single_stream_units(graph, task, table)
        if task.type == ACTIVE and task.name in active:
            units[task.stream] += len(active[task.name]) \
                - task_units(graph, task, table)[task.stream]
    return dict(units)
