"""The orderings a plan must respect: every dependency of the graph between two tasks.

Checked, for the root and every subgraph:

* data and control edges u -> v, where both nodes issue a task (physical stream >= 0);
* an edge through nodes without a stream counts as an edge between the tasks around them
  (u -> x -> v with x stream-less orders u before v), except through nodes owning subgraphs
  (their boundary is checked below) and FFTS thread-scope nodes;
* subgraph boundaries, as GE synchronizes them (sync spec 2.3): the producers of a parent
  node's inputs before each entry node of its subgraph (a node with a stream and no inputs),
  and the subgraph's first `_subgraph_end_node` before the parent's consumers. As in GE,
  entry nodes after that end node in the subgraph's list are not connected.

Not checked, because GE does not order them either (sync spec 2.1, 2.2): loop back edges out
of NextIteration/RefNextIteration; edges out of Enter/RefEnter into anything but a
StreamActive; edges inside the subgraphs of FFTS nodes (`_ffts_sub_graph`,
`_ffts_plus_sub_graph`), whose tasks the FFTS parent schedules itself.

Nodes are numbered in T-order (`Graph.all_nodes`); the edges between tasks, which are almost
all of them, are filtered as numpy arrays, and only edges that touch stream-less nodes or
subgraph boundaries are walked one by one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import compress
from operator import attrgetter
from typing import NamedTuple

import msgspec
import numpy as np

from streamalloc.facts import ENTER_TYPES, LOOP_BACK_TYPES
from streamalloc.ir.graph import Graph, Node
from streamalloc.verify.graph_edges import CONTROL, DATA, KIND_NAMES, Edges, graph_edges

FFTS_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")
THREAD_SCOPE = "_thread_scope_id"
END_NODE = "_subgraph_end_node"
ENTRY, EXIT = KIND_NAMES.index("subgraph entry"), KIND_NAMES.index("subgraph exit")
NO_VIA = -1
ACTIVE = "StreamActive"
_FLAGGED = LOOP_BACK_TYPES | ENTER_TYPES | {ACTIVE}
_TYPE = attrgetter("type")

Source = tuple[int, int, int]  # (task node, edge kind, first stream-less node or NO_VIA)


class Dependency(NamedTuple):
    """u must run before v. `via`: the stream-less node the edge passes through, if any."""

    src: str
    dst: str
    kind: str
    via: str | None = None

    def label(self) -> str:
        """`data edge a -> b (through x, ...)` for messages."""
        through = f" (through {self.via}, which has no stream)" if self.via else ""
        return f"{self.kind} edge {self.src} -> {self.dst}{through}"


class Dependencies(msgspec.Struct, frozen=True):
    """The orderings to check, in check order, as parallel arrays of T-order node indices."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    via: np.ndarray

    def __len__(self) -> int:
        return len(self.src)

    def item(self, i: int, names: Sequence[str]) -> Dependency:
        """Dependency i with node names, for a message."""
        via = int(self.via[i])
        return Dependency(names[self.src[i]], names[self.dst[i]], KIND_NAMES[self.kind[i]],
                          names[via] if via != NO_VIA else None)


def graph_dependencies(graph: Graph, order: Sequence[Node], index: Mapping[str, int],
                       has_task: np.ndarray) -> Dependencies:
    """Every ordering to check, one per (src, dst) pair: edges in T-order of the consumer,
    then subgraph boundaries. `order` is `graph.all_nodes()`, `index` its inverse and
    `has_task[i]` whether node i issues a task."""
    return _Collector(graph, order, index, has_task).collect()


class _Collector:
    def __init__(self, graph: Graph, order: Sequence[Node], index: Mapping[str, int],
                 has_task: np.ndarray) -> None:
        self.graph, self.order, self.index, self.has_task = graph, order, index, has_task
        self.ffts = _ffts_graphs(graph, order)
        self.skipped = np.fromiter((n.graph in self.ffts for n in order), bool, len(order)) \
            if self.ffts else np.zeros(len(order), bool)
        self.loop_back, self.enter, self.active = _type_flags(order)
        # stream-less node -> the tasks ordered before it (filled in T-order, as edges are)
        self.through: dict[int, list[Source]] = {}

    def collect(self) -> Dependencies:
        edges = self._ordering_edges(graph_edges(self.graph))
        direct, through = self._task_edges(edges), self._through_edges(edges)
        if len(through[0]):  # both keyed by (edge place, place among what it passes on)
            merged = [np.concatenate(pair) for pair in zip(direct, through, strict=True)]
            direct = tuple(column[np.lexsort((merged[5], merged[4]))] for column in merged)
        boundaries = self._boundaries()  # after every edge, in the order found
        src, dst, kind, via = (np.concatenate(pair)
                               for pair in zip(direct[:4], boundaries, strict=True))
        return _first_of_each_pair(len(self.order), src, dst, kind, via)

    def _ordering_edges(self, edges: Edges) -> Edges:
        """Edges that order their consumer: no loop back edge, no edge out of Enter (except
        into StreamActive), none inside FFTS subgraphs."""
        src, dst = edges.src, edges.dst
        drop = (self.loop_back[src] & (edges.kind == DATA)) | (self.enter[src] & ~self.active[dst])
        return edges.where(~(drop | self.skipped[dst]))

    def _task_edges(self, edges: Edges) -> tuple[np.ndarray, ...]:
        """Edges between two tasks: src, dst, kind, via, edge place, 0."""
        place = np.flatnonzero(self.has_task[edges.src] & self.has_task[edges.dst])
        return (edges.src[place], edges.dst[place], edges.kind[place],
                np.full(len(place), NO_VIA), place, np.zeros(len(place), np.int64))

    def _through_edges(self, edges: Edges) -> tuple[np.ndarray, ...]:
        """Edges through stream-less nodes: src, dst, kind, via, place of the edge into the
        consumer, place among what the stream-less node passes on (from 1). Fills `through`
        edge by edge, so a node's list is complete before its consumers read it."""
        found: list[tuple[int, int, int, int, int, int]] = []
        has_task = self.has_task
        for e in np.flatnonzero(~(has_task[edges.src] & has_task[edges.dst])).tolist():
            u, v, kind = int(edges.src[e]), int(edges.dst[e]), int(edges.kind[e])
            sources = self._sources_of(u, kind, v)
            if has_task[v]:
                found.extend((s, v, k, via, e, j) for j, (s, k, via) in enumerate(sources, 1))
            elif self._passes_on(v):
                self.through.setdefault(v, []).extend(
                    (s, k, v if via == NO_VIA else via) for s, k, via in sources)
        return _columns(found, 6)

    def _passes_on(self, v: int) -> bool:
        """A stream-less node orders its consumers after its producers, unless it owns
        subgraphs (checked at the boundary) or is an FFTS thread-scope node."""
        node = self.order[v]
        return not node.subgraphs and not node.has_attr(THREAD_SCOPE)

    def _sources_of(self, u: int, kind: int, consumer: int) -> list[Source]:
        """The tasks an edge u -> consumer orders before it: u itself, or what u passes on as
        far as T-order has reached (a back edge from a later node passes on nothing)."""
        if self.has_task[u]:
            return [(u, kind, NO_VIA)]
        return self.through.get(u, []) if u < consumer else []

    def _boundaries(self) -> tuple[np.ndarray, ...]:
        """Subgraph entry and exit orderings: src, dst, kind, via."""
        found: list[tuple[int, int, int, int]] = []
        for node in self.order:
            if node.subgraphs and node.graph not in self.ffts and not _is_ffts(node) \
                    and not node.has_attr(THREAD_SCOPE):
                self._boundary(node, found)
        return _columns(found, 4)

    def _boundary(self, parent: Node, found: list[tuple[int, int, int, int]]) -> None:
        owner = self.graph.graph(parent.graph)
        for _, sub in parent.subgraphs:
            for node in self.graph.graph(sub).nodes:
                v = self.index[node.name]
                if self.has_task[v] and not _has_inputs(node):
                    found.extend((s, v, ENTRY, via)
                                 for s, _, via in self._parent_sources(parent, node))
                if node.attr(END_NODE) is True:
                    self._exit(v, owner.successors(parent.name), found)
                    break  # GE stops at the first end node (sync spec 2.3)

    def _parent_sources(self, parent: Node, entry: Node) -> Iterator[Source]:
        """Tasks ordered before a subgraph's entry node by its parent's inputs."""
        producers = [(i.src, DATA) for i in parent.data_sources()]
        producers += [(c, CONTROL) for c in parent.control_inputs]
        for name, kind in producers:
            u = self.index[name]
            if kind == DATA and self.loop_back[u]:
                continue  # a loop back edge orders the next iteration, not this one
            if self.enter[u] and entry.type != ACTIVE:
                continue  # GE pair rule 3: the loop's activation orders these
            yield from self._sources_of(u, kind, len(self.order))

    def _exit(self, end: int, consumers: tuple[str, ...],
              found: list[tuple[int, int, int, int]]) -> None:
        ends = [(end, NO_VIA)] if self.has_task[end] else \
            [(s, via) for s, _, via in self.through.get(end, ())]
        for name in consumers:
            c = self.index[name]
            if self.has_task[c] and not self.skipped[c]:
                found.extend((s, c, EXIT, via) for s, via in ends
                             if not self.enter[s] or self.active[c])


def _type_flags(order: Sequence[Node]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node: a loop back type, an Enter type, a StreamActive (the few such nodes found in
    one pass over the types, at C speed)."""
    flags = np.zeros((3, len(order)), bool)
    types = list(map(_TYPE, order))
    for i in compress(range(len(types)), map(_FLAGGED.__contains__, types)):
        kind = types[i]
        flags[:, i] = kind in LOOP_BACK_TYPES, kind in ENTER_TYPES, kind == ACTIVE
    return flags[0], flags[1], flags[2]


def _columns(rows: Sequence[tuple[int, ...]], width: int) -> tuple[np.ndarray, ...]:
    """Rows of integers as `width` int64 columns."""
    table = np.array(rows, dtype=np.int64).reshape(len(rows), width)
    return tuple(table[:, j] for j in range(width))


def _first_of_each_pair(nodes: int, src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
                        via: np.ndarray) -> Dependencies:
    """One dependency per (src, dst) pair: the first found."""
    key = src * nodes + dst
    by_key = np.argsort(key, kind="stable")
    ordered = key[by_key]
    first = by_key[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if len(key) else by_key
    first.sort()
    return Dependencies(src[first], dst[first], kind[first], via[first])


def _has_inputs(node: Node) -> bool:
    return node.control_inputs != () or any(True for _ in node.data_sources())


def _is_ffts(node: Node) -> bool:
    return any(node.has_attr(a) for a in FFTS_ATTRS)


def _ffts_graphs(graph: Graph, order: Sequence[Node]) -> set[str]:
    """Subgraphs below an FFTS node (at any depth): GE's T'-order skips them."""
    found: set[str] = set()
    stack = [sub for n in order if n.subgraphs and _is_ffts(n) for _, sub in n.subgraphs]
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(sub for n in graph.graph(name).nodes for _, sub in n.subgraphs)
    return found
