"""Matchings of nodes to nodes they reach, as maximum flows along the DAG's edges.

A matching over the reachability pairs (u reaches v) needs an arc per pair, and the pairs
grow with the square of the nodes (a generated 11,500-node layered graph has 66 million).
The same matching is a maximum flow on the graph's own edges: a unit leaves each node that
may come before (`before`) through one of its out-edges, travels the edges (unbounded), and
ends at a node that may come after; unit capacities at both ends make each node one pair's
at most. Any such flow splits into paths, each a pair (u, v) with u reaching v, and any
matching is such a flow. OR-Tools solves it in C++: that graph's in 0.01 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ortools.graph.python import max_flow


class _Network:
    """The network of `n` nodes in T-order and their edges: node v carries paths as v and
    starts a unit as n + v; group k is 2n + k; then the source and the sink."""

    def __init__(self, n: int, edges: Sequence[tuple[int, int]], before: Sequence[bool],
                 groups: Sequence[tuple[Sequence[int], int]]) -> None:
        self.n = n
        source, sink = 2 * n + len(groups), 2 * n + len(groups) + 1
        self.edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
        starting = np.array(before, dtype=bool).reshape(-1)
        self.firsts = self.edges[starting[self.edges[:, 0]]]
        self.flow = max_flow.SimpleMaxFlow()
        unbounded = n + 1  # more than the source sends
        self.path_arcs = self._arcs(self.edges[:, 0], self.edges[:, 1], unbounded)
        self.first_arcs = self._arcs(n + self.firsts[:, 0], self.firsts[:, 1], 1)
        starts = np.flatnonzero(starting)
        self._arcs(np.full(len(starts), source), n + starts, 1)
        self.ends = np.array([v for members, _ in groups for v in members], dtype=np.int64)
        self.end_arcs = self._arcs(self.ends, np.array(
            [2 * n + k for k, (members, _) in enumerate(groups) for _ in members],
            dtype=np.int64), 1)
        self._arcs(2 * n + np.arange(len(groups)), np.full(len(groups), sink),
                   np.array([most for _, most in groups], dtype=np.int64))
        if self.flow.solve(source, sink) != self.flow.OPTIMAL:
            raise RuntimeError(f"OR-Tools' max flow failed on a {n}-node graph")

    def _arcs(self, tails: np.ndarray, heads: np.ndarray, capacity: int | np.ndarray
              ) -> np.ndarray:
        return np.asarray(self.flow.add_arcs_with_capacity(
            tails.astype(np.int32), heads.astype(np.int32),
            np.broadcast_to(np.asarray(capacity, dtype=np.int64), tails.shape).copy()))

    def pairs(self) -> list[tuple[int, int]]:
        """The flow's units as (start, end) pairs (`unit_pairs`)."""
        ending = np.zeros(self.n, dtype=bool)
        ending[self.ends[self.flow.flows(self.end_arcs) > 0]] = True
        return unit_pairs(self.n, self.firsts, self.edges,
                          started=self.flow.flows(self.first_arcs),
                          carried=self.flow.flows(self.path_arcs), ending=ending)


def unit_pairs(n: int, firsts: np.ndarray, edges: np.ndarray, *, started: np.ndarray,
               carried: np.ndarray, ending: np.ndarray) -> list[tuple[int, int]]:
    """A flow's units as (start, end) pairs, in the end's order: `started` units leave u along
    its first edge (u, v) of `firsts`, `carried` units travel each edge of `edges`, and a unit
    ends at each node of `ending`. Nodes in T-order hand the starts that reached them on to
    their out-edges (any split of a node's units is a path decomposition), so the work is
    the flow summed over the edges."""
    reached: list[list[int]] = [[] for _ in range(n)]
    for u, v in firsts[started > 0].tolist():
        reached[v].append(u)
    onward: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for (u, v), units in zip(edges[carried > 0].tolist(), carried[carried > 0].tolist(),
                             strict=True):
        onward[u].append((v, units))
    found: list[tuple[int, int]] = []
    for v, ends in enumerate(ending.tolist()):
        starts = reached[v]
        if ends:
            found.append((starts.pop(), v))
        for w, units in onward[v]:
            reached[w] += starts[-units:]
            del starts[-units:]
    return found


def most_following(n: int, edges: Sequence[tuple[int, int]], before: Sequence[bool],
                   groups: Sequence[tuple[Sequence[int], int]]) -> int:
    """The most nodes of `groups` (each: its nodes, and at most how many of them count) that
    can each follow a node of `before` of its own that reaches it, in the graph of `n` nodes
    in T-order and `edges`."""
    return int(_Network(n, edges, before, groups).flow.optimal_flow())


def reach_matching(n: int, edges: Sequence[tuple[int, int]], before: Sequence[int],
                   after: Sequence[int]) -> list[tuple[int, int]]:
    """A maximum matching of nodes of `before` to nodes of `after` they reach, as (u, v)
    pairs in v's order."""
    starting = [False] * n
    for u in before:
        starting[u] = True
    return _Network(n, edges, starting, [(after, len(after))]).pairs()
