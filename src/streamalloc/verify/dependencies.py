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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from streamalloc.facts import ENTER_TYPES, LOOP_BACK_TYPES
from streamalloc.ir.graph import Graph, Node

FFTS_ATTRS = ("_ffts_sub_graph", "_ffts_plus_sub_graph")
THREAD_SCOPE = "_thread_scope_id"
END_NODE = "_subgraph_end_node"


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


def graph_dependencies(graph: Graph, has_task: Callable[[str], bool]) -> list[Dependency]:
    """Every ordering to check, one per (src, dst) pair, in T-order of the consumer."""
    return _Collector(graph, has_task).collect()


class _Collector:
    def __init__(self, graph: Graph, has_task: Callable[[str], bool]) -> None:
        self.graph, self.has_task = graph, has_task
        self.nodes = {n.name: n for n in graph.all_nodes()}
        self.ffts = _ffts_graphs(graph, self.nodes)
        # stream-less node -> the tasks ordered before it: (task, edge kind, first via)
        self.through: dict[str, list[tuple[str, str, str]]] = {}
        self.found: dict[tuple[str, str], Dependency] = {}

    def collect(self) -> list[Dependency]:
        for node in self.graph.all_nodes():
            if node.graph not in self.ffts:
                self._edges_into(node)
        for node in self.graph.all_nodes():
            if node.subgraphs and node.graph not in self.ffts and not _is_ffts(node) \
                    and not node.has_attr(THREAD_SCOPE):
                self._boundary(node)
        return list(self.found.values())

    def _add(self, src: str, dst: str, kind: str, via: str | None) -> None:
        self.found.setdefault((src, dst), Dependency(src, dst, kind, via))

    def _edges_into(self, node: Node) -> None:
        sources = list(self._sources(node, node))
        if self.has_task(node.name):
            for src, kind, via in sources:
                self._add(src, node.name, kind, via)
        elif not node.subgraphs and not node.has_attr(THREAD_SCOPE):
            self.through[node.name] = [(s, k, v or node.name) for s, k, v in sources]

    def _sources(self, node: Node, consumer: Node) -> Iterator[tuple[str, str, str | None]]:
        """Tasks ordered before `consumer` by `node`'s inputs: (task, kind, via)."""
        producers = [(i.src, "data") for i in node.data_sources()]
        producers += [(c, "control") for c in node.control_inputs]
        for name, kind in producers:
            producer = self.nodes[name]
            if kind == "data" and producer.type in LOOP_BACK_TYPES:
                continue  # a loop back edge orders the next iteration, not this one
            if producer.type in ENTER_TYPES and consumer.type != "StreamActive":
                continue  # GE pair rule 3: the loop's activation orders these
            if self.has_task(name):
                yield name, kind, None
            else:
                yield from self.through.get(name, ())

    def _boundary(self, parent: Node) -> None:
        owner = self.graph.graph(parent.graph)
        for _, sub in parent.subgraphs:
            for node in self.graph.graph(sub).nodes:
                if self.has_task(node.name) and not _has_inputs(node):
                    for src, _, via in self._sources(parent, node):
                        self._add(src, node.name, "subgraph entry", via)
                if node.attr(END_NODE) is True:
                    self._exit(node, owner.successors(parent.name))
                    break  # GE stops at the first end node (sync spec 2.3)

    def _exit(self, end: Node, consumers: tuple[str, ...]) -> None:
        ends = [(end.name, None)] if self.has_task(end.name) else \
            [(s, v) for s, _, v in self.through.get(end.name, ())]
        for name in consumers:
            if self.has_task(name) and self.nodes[name].graph not in self.ffts:
                for src, via in ends:
                    if self.nodes[src].type not in ENTER_TYPES or \
                            self.nodes[name].type == "StreamActive":
                        self._add(src, name, "subgraph exit", via)


def _has_inputs(node: Node) -> bool:
    return node.control_inputs != () or any(True for _ in node.data_sources())


def _is_ffts(node: Node) -> bool:
    return any(node.has_attr(a) for a in FFTS_ATTRS)


def _ffts_graphs(graph: Graph, nodes: dict[str, Node]) -> set[str]:
    """Subgraphs below an FFTS node (at any depth): GE's T'-order skips them."""
    found: set[str] = set()
    stack = [sub for n in nodes.values() if _is_ffts(n) for _, sub in n.subgraphs]
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(sub for n in graph.graph(name).nodes for _, sub in n.subgraphs)
    return found
