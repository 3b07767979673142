"""Execution orders: which of two unrelated nodes on one stream runs first.

Every stream runs its nodes in G-order, so with the graph's own order a node can wait on its
stream for an unrelated node that merely comes first (LLaMA: the v projection behind the q
projection's chain). The makespan search may therefore also change the order the plan is
synchronized in: any topological order of the root's nodes keeps every assignment free of
deadlocks, and the verifier checks the plan's stream order by happens-before, whatever order
made it. Models with subgraphs keep their T-order (the sync layer's control-flow stages walk
it), and so does the events objective.

>>> from streamalloc.ir.builder import GraphBuilder
>>> from streamalloc.ir.graph import DataInput
>>> b = GraphBuilder("g")
>>> for name, inputs in [("a", []), ("u", ["a"]), ("x", []), ("v", ["x"])]:
...     b.add_node(name, "Relu", inputs=[DataInput(i, 0) for i in inputs])
>>> orders = Orders.of(b.build())
>>> orders.before(orders.start, "v", "u")  # v's producer x comes along, a stays first
('a', 'x', 'v', 'u')
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from streamalloc.ir.graph import Graph

Order = tuple[str, ...]  # the root's node names, in a topological order
GRAPHS_KEPT = 4  # graphs in recent orders kept (`Orders.graph_in`)


@dataclass(frozen=True)
class Orders:
    """The root's predecessors of every node, and the graph's own order (the start)."""

    graph: Graph
    preds: Mapping[str, tuple[str, ...]]
    start: Order
    _graphs: dict[Order, Graph] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, graph: Graph) -> Orders | None:
        """None for a model with subgraphs (its order stays T-order)."""
        if graph.subgraphs:
            return None
        nodes = graph.root.nodes
        # the edges `ComputeGraph.successors` lists, from the consumer's side
        preds = {node.name: (*(i.src for i in node.data_sources()), *node.control_inputs)
                 for node in nodes}
        return cls(graph, MappingProxyType(preds), tuple(node.name for node in nodes))

    def before(self, order: Order, v: str, u: str) -> Order | None:
        """`order` with `v` run before `u`: v and its ancestors between the two move, in
        their order, to just before u; None when u is one of those ancestors."""
        position = {name: i for i, name in enumerate(order)}
        low, high = position[u], position[v]
        if low > high:
            return order
        moved, stack = {v}, [v]
        while stack:
            for p in self.preds[stack.pop()]:
                if p not in moved and low <= position[p]:
                    if p == u:
                        return None
                    moved.add(p)
                    stack.append(p)
        segment = order[low:high + 1]
        return (order[:low] + tuple(n for n in segment if n in moved)
                + tuple(n for n in segment if n not in moved) + order[high + 1:])

    def following(self, sequence: Sequence[str]) -> Order:
        """The order that runs the nodes of `sequence` in its order (a topological order of
        them, such as the list schedule's) and every other node as soon as its producers
        ran; ties go to the graph's order."""
        rank = {name: i for i, name in enumerate(sequence)}
        position, succs = self._positions, self._succs
        missing = {name: len(preds) for name, preds in self.preds.items()}
        ready = [(rank.get(name, -1), position[name], name)
                 for name, count in missing.items() if not count]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            name = heapq.heappop(ready)[2]
            order.append(name)
            for succ in succs[name]:
                missing[succ] -= 1
                if not missing[succ]:
                    heapq.heappush(ready, (rank.get(succ, -1), position[succ], succ))
        return tuple(order)

    @cached_property
    def _positions(self) -> dict[str, int]:
        """Each node's place in the graph's order."""
        return {name: i for i, name in enumerate(self.start)}

    @cached_property
    def _succs(self) -> dict[str, list[str]]:
        """Each node's consumers, once per edge as `preds` lists them."""
        succs: dict[str, list[str]] = {name: [] for name in self.preds}
        for name, preds in self.preds.items():
            for p in preds:
                succs[p].append(name)
        return succs

    def graph_in(self, order: Order | None) -> Graph:
        """The graph with its root in `order` (itself for its own order). The last
        GRAPHS_KEPT are kept, with the tables the sync layer derives of them (producers by
        position): a search evaluates many assignments in its current order."""
        if order is None or order == self.start:
            return self.graph
        found = self._graphs.get(order)
        if found is None:
            if len(self._graphs) >= GRAPHS_KEPT:
                del self._graphs[next(iter(self._graphs))]
            found = self._graphs[order] = self.graph.reordered(order)
        return found
