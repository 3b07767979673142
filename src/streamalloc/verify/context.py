"""What every check reads: the graph, the plan, the task table and the violation log.

The task table numbers every listed task globally (gid): stream lists in ascending stream
id, positions in list order. A name listed twice keeps its first place for lookups (the
duplicate is reported by the structure checks); every listed entry is a task of its own.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

from streamalloc.ir.graph import Graph, Node
from streamalloc.verify.plan_input import PlanView, SyncEntry
from streamalloc.verify.report import ViolationLog


@dataclass(frozen=True)
class TaskTable:
    """Every listed task: stream index k (dense, ascending stream id), position, global id.

    `owner[gid]` is the task's stream index; lookups by gid are O(1).
    """

    stream_ids: tuple[int, ...]
    lists: tuple[tuple[str, ...], ...]
    base: tuple[int, ...]
    owner: tuple[int, ...]
    where: Mapping[str, int]
    repeats: Mapping[str, tuple[int, ...]]

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
    where: dict[str, int] = {}
    repeats: dict[str, list[int]] = {}
    base: list[int] = []
    owner: list[int] = []
    for k, names in enumerate(plan.streams.values()):
        base.append(len(owner))
        for gid, name in enumerate(names, start=len(owner)):
            if where.setdefault(name, gid) != gid:
                repeats.setdefault(name, [where[name]]).append(gid)
        owner.extend([k] * len(names))
    return TaskTable(tuple(plan.streams), tuple(plan.streams.values()), tuple(base),
                     tuple(owner), where, {n: tuple(g) for n, g in repeats.items()})


@dataclass(frozen=True)
class Context:
    """Shared read-only inputs of the checks, plus the log they write to.

    `nodes` holds every graph node (root and subgraphs) in T-order; `sync` the declared
    generated nodes by name (first declaration wins; duplicates are reported).
    """

    graph: Graph
    plan: PlanView
    table: TaskTable
    nodes: Mapping[str, Node]
    t_index: Mapping[str, int]
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
    nodes = {n.name: n for n in graph.all_nodes()}
    sync: dict[str, SyncEntry] = {}
    for entry in plan.sync_nodes:
        sync.setdefault(entry.name, entry)
    # Plain dicts behind Mapping types: read-only by convention, and faster than proxies.
    return Context(graph, plan, task_table(plan), nodes,
                   {name: i for i, name in enumerate(nodes)}, sync, log)
