"""Task predecessors over the graph edges that order tasks, followed through nodes that issue
no task (`u -> Data-like -> v` orders u before v).

Ordering edges: data edges except those out of loop back nodes (NextIteration) and Enter
nodes, control edges except those out of Enter nodes (GE's pair rule 3: the loop construct
orders them). Nodes are numbered in T-order; the edges between two tasks, almost all of them,
are handled as numpy arrays, the few that touch a node without a task one by one, in T-order
of the consumer (a node passes on only the tasks known when T-order reaches it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import chain, repeat
from operator import attrgetter
from typing import cast

import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.facts import ENTER_TYPES, LOOP_BACK_TYPES
from streamalloc.ir.graph import Node

_UNORDERED_FROM = frozenset(LOOP_BACK_TYPES) | frozenset(ENTER_TYPES)
_INPUTS, _CONTROL = attrgetter("inputs"), attrgetter("control_inputs")


def task_pairs(order: Sequence[Node], tid_of: Mapping[str, int], idle: Collection[int],
               tasks: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(consumer tids, producer tids) of every ordering between two tasks, unique and sorted
    by consumer then producer, without idle tasks on either side; and the tids of the graph
    tasks that are not idle, in T-order. `order` is `Graph.all_nodes()`."""
    names = [node.name for node in order]
    tid = np.fromiter(map(tid_of.get, names, repeat(-1)), np.int64, len(names))
    # producers are numbered by T-order position, found by tid for listed nodes (the extra
    # last entry answers tid -1)
    position = np.full(tasks + 1, -1, np.int64)
    position[tid[tid >= 0]] = np.flatnonzero(tid >= 0)
    unlisted = {names[i]: i for i in np.flatnonzero(tid < 0).tolist()}
    src, dst = _ordering_edges(order, tid_of, position, unlisted)
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


def _ordering_edges(order: Sequence[Node], tid_of: Mapping[str, int], position: np.ndarray,
                    unlisted: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(producer, consumer) T-order positions of the edges that order their consumer."""
    unordered = np.zeros(len(order), bool)
    enter = np.zeros(len(order), bool)
    for i in [i for i, node in enumerate(order) if node.type in _UNORDERED_FROM]:
        unordered[i], enter[i] = True, order[i].type in ENTER_TYPES
    data = _positions([None if ref is None else ref.src
                       for ref in chain.from_iterable(map(_INPUTS, order))],
                      tid_of, position, unlisted)
    data_dst = np.repeat(np.arange(len(order)), [len(node.inputs) for node in order])
    control = _positions(list(chain.from_iterable(map(_CONTROL, order))), tid_of, position,
                         unlisted)
    control_dst = np.repeat(np.arange(len(order)), [len(node.control_inputs) for node in order])
    keep_data = data >= 0
    keep_data[keep_data] = ~unordered[data[keep_data]]
    keep_control = ~enter[control]
    return (np.concatenate([data[keep_data], control[keep_control]]),
            np.concatenate([data_dst[keep_data], control_dst[keep_control]]))


def _positions(producers: list[str | None], tid_of: Mapping[str, int], position: np.ndarray,
               unlisted: Mapping[str, int]) -> np.ndarray:
    """T-order positions of producers by name (None, an unconnected input slot: -1)."""
    # a lookup of None (an empty slot) finds nothing
    lookup = cast("Callable[[str | None, int], int]", tid_of.get)
    tids = np.fromiter(map(lookup, producers, repeat(-1)), np.int64, len(producers))
    found = position[tids]
    for i in np.flatnonzero(tids < 0).tolist():  # nodes without a task, and empty slots
        name = producers[i]
        found[i] = -1 if name is None else unlisted.get(name, -1)
    return found


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
