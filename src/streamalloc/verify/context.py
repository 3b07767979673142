"""What every check reads: the graph, the plan, the task table and the violation log.

The task table numbers every listed task globally (gid): stream lists in ascending stream
id, positions in list order. A name listed twice keeps its first place for lookups (the
duplicate is reported by the structure checks); every listed entry is a task of its own.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from itertools import accumulate, chain, repeat

import msgspec
import numpy as np

from streamalloc.ir.graph import Graph, Node
from streamalloc.verify.node_columns import NodeColumns, node_columns
from streamalloc.verify.plan_view import PlanView, SyncEntry
from streamalloc.verify.report import ViolationLog


class TaskTable(msgspec.Struct, frozen=True):
    """Every listed task: stream index k (dense, ascending stream id), position, global id.

    `owner[gid]` is the task's stream index; lookups by gid are O(1). `stream_of` holds every
    task's stream id as an array, for checks over all tasks at once.
    """

    stream_ids: tuple[int, ...]
    lists: tuple[tuple[str, ...], ...]
    base: tuple[int, ...]
    owner: tuple[int, ...]
    where: Mapping[str, int]
    repeats: Mapping[str, tuple[int, ...]]
    stream_of: np.ndarray

    @property
    def total(self) -> int:
        """Number of listed tasks."""
        return len(self.owner)

    def index_of_stream(self, stream: int) -> int | None:
        """Dense index of a stream id, None when the plan has no list for it."""
        k = bisect_right(self.stream_ids, stream) - 1
        return k if k >= 0 and self.stream_ids[k] == stream else None

    def locate(self, gid: int) -> tuple[int, int]:
        """(dense stream index, position) of a task."""
        k = self.owner[gid]
        return k, gid - self.base[k]

    def place(self, gid: int) -> tuple[int, int]:
        """(stream id, position) of a task, as messages show it."""
        k = self.owner[gid]
        return self.stream_ids[k], gid - self.base[k]

    def name(self, gid: int) -> str:
        """The task's name."""
        k, pos = self.locate(gid)
        return self.lists[k][pos]

    def describe(self, gid: int) -> str:
        """`name (stream s, position i)`."""
        stream, pos = self.place(gid)
        return f"{self.name(gid)} (stream {stream}, position {pos})"


def task_table(plan: PlanView) -> TaskTable:
    """Number the plan's tasks."""
    lists = tuple(plan.streams.values())
    names = list(chain.from_iterable(lists))
    where = dict(zip(names, range(len(names)), strict=True))
    repeats: dict[str, tuple[int, ...]] = {}
    if len(where) < len(names):  # a name listed twice keeps its first gid
        where, repeats = _first_places(names)
    lengths = [len(listed) for listed in lists]
    base = tuple(accumulate(lengths[:-1], initial=0)) if lists else ()
    owner = tuple(chain.from_iterable(repeat(k, n) for k, n in enumerate(lengths)))
    stream_of = np.repeat(np.array(list(plan.streams), dtype=np.int64), lengths)
    return TaskTable(tuple(plan.streams), lists, base, owner, where, repeats, stream_of)


def _first_places(names: list[str]) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    """Name -> its first gid, and name -> every gid of the names listed more than once."""
    where: dict[str, int] = {}
    repeats: dict[str, list[int]] = {}
    for gid, name in enumerate(names):
        if where.setdefault(name, gid) != gid:
            repeats.setdefault(name, [where[name]]).append(gid)
    return where, {name: tuple(gids) for name, gids in repeats.items()}


class Context(msgspec.Struct, frozen=True):
    """Shared read-only inputs of the checks, plus the log they write to.

    `nodes` holds every graph node (root and subgraphs) by name, `order` the same nodes in
    T-order and `t_index` their positions in it; `columns` the plan's entries of those nodes;
    `sync` the declared generated nodes by name (first declaration wins; duplicates are
    reported).
    """

    graph: Graph
    plan: PlanView
    table: TaskTable
    nodes: Mapping[str, Node]
    order: tuple[Node, ...]
    t_index: Mapping[str, int]
    columns: NodeColumns
    sync: Mapping[str, SyncEntry]
    log: ViolationLog

    def gid(self, name: str) -> int | None:
        """Global task id of a listed name."""
        return self.table.where.get(name)

    def is_task_name(self, name: str) -> bool:
        """A graph node or a declared generated node."""
        return name in self.nodes or name in self.sync


def make_context(graph: Graph, plan: PlanView, log: ViolationLog) -> Context:
    """Index the graph and the plan once for all checks."""
    order, t_index = _t_order(graph)
    names = graph.t_ordered_names()
    sync: dict[str, SyncEntry] = {}
    for entry in plan.sync_nodes:
        sync.setdefault(entry.name, entry)
    table = task_table(plan)
    # The graph's own index of its nodes serves as it is.
    return Context(graph, plan, table, graph.by_name, order, t_index,
                   node_columns(names, plan.nodes, table.where, table.stream_of), sync, log)


def _t_order(graph: Graph) -> tuple[tuple[Node, ...], Mapping[str, int]]:
    """Every node in T-order, and name -> position in it."""
    order = graph.t_ordered_nodes()
    if not graph.subgraphs:  # T-order is the root's G-order, which the root indexes already
        return order, graph.root.index
    # a plain dict behind the Mapping type: read-only by convention, faster than a proxy
    return order, {node.name: i for i, node in enumerate(order)}
