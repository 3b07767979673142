"""Task predecessors over the graph edges that order tasks, followed through nodes that issue
no task (`u -> Data-like -> v` orders u before v).

Ordering edges: data edges except those out of loop back nodes (NextIteration) and Enter
nodes, control edges except those out of Enter nodes (GE's pair rule 3: the loop construct
orders them). Nodes are numbered in T-order; the edges between two tasks, almost all of them,
are handled as numpy arrays, the few that touch a node without a task one by one, in T-order
of the consumer (a node passes on only the tasks known when T-order reaches it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import repeat
from operator import attrgetter

import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.facts import ENTER_TYPES, LOOP_BACK_TYPES
from streamalloc.ir.adjacency import Producers
from streamalloc.ir.graph import Node

_UNORDERED_FROM = frozenset(LOOP_BACK_TYPES) | frozenset(ENTER_TYPES)
_NAME = attrgetter("name")


def task_pairs(order: Sequence[Node], producers: Producers, tid_of: Mapping[str, int],
               idle: Collection[int], tasks: int
               ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(consumer tids, producer tids) of every ordering between two tasks, unique and sorted
    by consumer then producer, without idle tasks on either side; and the tids of the graph
    tasks that are not idle, in T-order. `order` is `Graph.all_nodes()`, `producers` its
    `Graph.t_producers()`."""
    tid = np.fromiter(map(tid_of.get, map(_NAME, order), repeat(-1)), np.int64, len(order))
    src, dst = _ordering_edges(order, producers)
    direct = (tid[src] >= 0) & (tid[dst] >= 0)
    through = _through(src[~direct].tolist(), dst[~direct].tolist(), tid.tolist())
    consumer = np.concatenate([tid[dst[direct]], through[0]])
    producer = np.concatenate([tid[src[direct]], through[1]])
    if idle:
        idle_tids = np.fromiter(idle, np.int64, len(idle))
        busy = ~(np.isin(consumer, idle_tids) | np.isin(producer, idle_tids))
        consumer, producer = consumer[busy], producer[busy]
    key = sorted_distinct(consumer * tasks + producer)
    listed = tid[tid >= 0]
    topo = listed[~np.isin(listed, list(idle))] if idle else listed
    return key // tasks, key % tasks, tuple(topo.tolist())


def _ordering_edges(order: Sequence[Node], producers: Producers
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(producer, consumer) T-order positions of the edges that order their consumer."""
    unordered = np.zeros(len(order), bool)
    enter = np.zeros(len(order), bool)
    for i in [i for i, node in enumerate(order) if node.type in _UNORDERED_FROM]:
        unordered[i], enter[i] = True, order[i].type in ENTER_TYPES
    data, data_dst = producers.data_edges()
    control, control_dst = producers.control_edges()
    keep_data = ~unordered[data]
    keep_control = ~enter[control]
    return (np.concatenate([data[keep_data], control[keep_control]]),
            np.concatenate([data_dst[keep_data], control_dst[keep_control]]))


def _through(src: list[int], dst: list[int], tid: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(consumer, producer) tids of the orderings through nodes without a task, from the
    edges that touch such a node."""
    passes: dict[int, set[int]] = {}  # node without a task -> the tasks ordered before it
    pairs: list[tuple[int, int]] = []
    for v, u in sorted(zip(dst, src, strict=True)):  # consumers in T-order
        found = {tid[u]} if tid[u] >= 0 else passes.get(u, set()) if u < v else set()
        if tid[v] >= 0:
            pairs.extend((tid[v], t) for t in found)
        elif found:
            passes.setdefault(v, set()).update(found)
    table = np.array(pairs, np.int64).reshape(len(pairs), 2)
    return table[:, 0], table[:, 1]
