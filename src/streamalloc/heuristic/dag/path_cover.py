"""Minimum path cover of the residual graph (spec 6 step 5).

A maximum matching in the split bipartite graph (left copy u -> right copy v per residual edge)
is found by unit-capacity max flow with Dinic's algorithm; each matched edge continues a route.
Routes start from every node that is not matched as a target, in residual order; nodes left
over (none, for a DAG) become singleton routes.

[P-order] GE inserts the bipartite edges iterating nodes in pointer order, which orders the
reverse edges inside the right-side vertices and can change which maximum matching Dinic finds.
We insert them in residual (topo) order: source -> left copies, then per left copy its edges in
the residual graph's order, then right copies -> sink. The depth-first search takes edges in
insertion order and keeps its current-arc position for the whole phase, like GE's Dinic.
"""

from __future__ import annotations

from collections import deque

from streamalloc.heuristic.dag.residual import Residual

_SOURCE, _SINK = 0, 1


class _Network:
    """A flow network with unit capacities; edge e and its reverse are e and e ^ 1."""

    def __init__(self, size: int) -> None:
        self.adj: list[list[int]] = [[] for _ in range(size)]
        self.head: list[int] = []
        self.cap: list[int] = []

    def add(self, u: int, v: int) -> int:
        """Add u -> v with capacity 1; returns the edge id."""
        self.adj[u].append(len(self.head))
        self.head.append(v)
        self.cap.append(1)
        self.adj[v].append(len(self.head))
        self.head.append(u)
        self.cap.append(0)
        return len(self.head) - 2

    def levels(self) -> list[int] | None:
        """Breadth-first distances from the source; None when the sink is unreachable."""
        level = [-1] * len(self.adj)
        level[_SOURCE] = 0
        queue = deque([_SOURCE])
        while queue:
            u = queue.popleft()
            for e in self.adj[u]:
                if self.cap[e] > 0 and level[self.head[e]] < 0:
                    level[self.head[e]] = level[u] + 1
                    queue.append(self.head[e])
        return level if level[_SINK] >= 0 else None

    def augment(self, level: list[int], arc: list[int]) -> bool:
        """One augmenting path along the level graph (an iterative depth-first search)."""
        path: list[int] = []
        u = _SOURCE
        while u != _SINK:
            e = self._advance(u, level, arc)
            if e is not None:
                path.append(e)
                u = self.head[e]
                continue
            if not path:
                return False
            u = self.head[path.pop() ^ 1]  # dead end: back to the parent, skip this arc
            arc[u] += 1
        for e in path:
            self.cap[e] -= 1
            self.cap[e ^ 1] += 1
        return True

    def _advance(self, u: int, level: list[int], arc: list[int]) -> int | None:
        while arc[u] < len(self.adj[u]):
            e = self.adj[u][arc[u]]
            if self.cap[e] > 0 and level[self.head[e]] == level[u] + 1:
                return e
            arc[u] += 1
        return None

    def max_flow(self) -> None:
        """Dinic: phases of blocking flows until the sink is unreachable."""
        while (level := self.levels()) is not None:
            arc = [0] * len(self.adj)
            while self.augment(level, arc):
                pass


def matching(residual: Residual) -> list[int | None]:
    """Per residual node u: the node v that follows u on its route (None: u ends a route)."""
    m = len(residual)
    net = _Network(2 + 2 * m)
    for u in range(m):
        net.add(_SOURCE, 2 + u)
    edges = [(u, v, net.add(2 + u, 2 + m + v)) for u, v in residual.edges()]
    for v in range(m):
        net.add(2 + m + v, _SINK)
    net.max_flow()
    following: list[int | None] = [None] * m
    for u, v, e in edges:
        if net.cap[e] == 0:
            following[u] = v
    return following


def min_path_cover(residual: Residual) -> list[tuple[int, ...]]:
    """Routes (residual indices in order) covering every residual node once.

    >>> from streamalloc.heuristic.dag.residual import Residual
    >>> min_path_cover(Residual((0, 1, 2), ((1, 2), (), ()), (0, 1, 1)))
    [(0, 1), (2,)]
    """
    following = matching(residual)
    targets = {v for v in following if v is not None}
    routes: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for start in (u for u in range(len(residual)) if u not in targets):
        route = [start]
        while (nxt := following[route[-1]]) is not None:
            route.append(nxt)
        routes.append(tuple(route))
        seen.update(route)
    routes += [(u,) for u in range(len(residual)) if u not in seen]
    return routes
