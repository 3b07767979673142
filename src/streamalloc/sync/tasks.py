"""Task accounting for the physical split (spec 1.4, 5.4).

GE counts the task records task generation produced; we have no task generator, so a graph
node issues `task_count` units (else its engine's default) on its main stream and on each
attached stream (the convention of GE's test harness); explicit `_node_sqe_num` and the HCCL
`_hccl_task_num` / `_hccl_attached_task_num` attributes override as in GE. A Send is 1 unit, a
Recv 2 (an event wait also resets the event), a notify Send or Recv 1.
"""

from __future__ import annotations

import math
from collections import defaultdict

from streamalloc.facts import INVALID, SYNC_UNITS, is_hccl
from streamalloc.ir.graph import Graph, Node
from streamalloc.sync.model import Task


def own_units(graph: Graph, node: Node) -> int:
    """Units a graph node's own tasks take on one stream."""
    if node.task_count is not None:
        return node.task_count
    return graph.engines.engines[node.engine].default_task_count


def assigned(graph: Graph, task: Task, attached: bool) -> int:
    """GE's ASSIGNED(node, attached): explicit unit counts, 0 when none is given."""
    if task.is_sync:
        return 0
    node = graph.node(task.name)
    value = 0
    if node.has_attr("_node_sqe_num"):
        value = node.int_attr("_node_sqe_num")
    elif is_hccl(node.type, node.engine):
        key = "_hccl_attached_task_num" if attached else "_hccl_task_num"
        value = node.int_attr(key)
    if value > 0 and node.type in ("Recv", "RecvMem"):
        value += 1
    return value


def task_units(graph: Graph, task: Task) -> dict[int, int]:
    """{stream: units} the task's records take (before GE's explicit overrides)."""
    if task.is_sync:  # a generated StreamActive: one unit here, replaced in `collect`
        return {task.stream: SYNC_UNITS.get(task.type, 1)}
    units = {task.stream: own_units(graph, graph.node(task.name))}
    for a in task.attached:
        units[a] = units.get(a, 0) + own_units(graph, graph.node(task.name))
    return units


def collect(graph: Graph, tasks: list[Task], max_task: int,
            active: dict[str, list[int]]) -> dict[int, dict[int, int]]:
    """units_of (task index -> {stream: units}), with the StreamActive override."""
    units_of: dict[int, dict[int, int]] = {}
    total: dict[int, int] = defaultdict(int)
    for i, task in enumerate(tasks):
        if task.stream == INVALID:
            continue
        m = {task.stream: 0}
        for s, u in task_units(graph, task).items():
            m[s] = m.get(s, 0) + u
        if assigned(graph, task, False) > 0:
            m[task.stream] = assigned(graph, task, False)
        if assigned(graph, task, True) > 0:
            for a in task.attached:
                m[a] = assigned(graph, task, True)
        units_of[i] = m
        for s, u in m.items():
            total[s] += u
    estimate = {s: math.ceil(t / max_task) for s, t in total.items()}
    for i, task in enumerate(tasks):
        if task.type == "StreamActive" and i in units_of:
            units_of[i][task.stream] = sum(estimate[s] for s in active.get(task.name, ())
                                           if s in estimate)
    return units_of
