"""The residual graph of a mini DAG (spec 6 step 4) and its levels.

Residual nodes are the weighted, non-serial nodes, sorted by topo id; they are numbered 0..m-1
in that order. A residual edge u -> v exists when v is reachable from u through a path whose
inner nodes are all serial or non-weight (a direct edge is such a path). Edges are deduplicated
and listed per source in discovery order: depth-first along the mini DAG's edge order.
"""

from __future__ import annotations

import msgspec

from streamalloc.heuristic.dag.model import MiniDag


class Residual(msgspec.Struct, frozen=True):
    """Residual nodes (topo ids), their successors (residual indices) and levels."""

    members: tuple[int, ...]
    succs: tuple[tuple[int, ...], ...]
    levels: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.members)

    def edges(self) -> list[tuple[int, int]]:
        """All residual edges (u, v), by source then discovery order."""
        return [(u, v) for u, targets in enumerate(self.succs) for v in targets]

    def neighbours(self) -> tuple[tuple[int, ...], ...]:
        """Per node: successors then predecessors (each edge seen from both ends)."""
        result: list[list[int]] = [list(t) for t in self.succs]
        for u, v in self.edges():
            result[v].append(u)
        return tuple(tuple(n) for n in result)


def residual_graph(dag: MiniDag) -> Residual:
    """Weighted non-serial nodes with their direct or transitive edges.

    >>> from streamalloc.heuristic.dag.model import DagNode, MiniDag
    >>> nodes = (DagNode("a", 0, -1), DagNode("s", 1, -1, "L"), DagNode("b", 2, -1))
    >>> residual_graph(MiniDag(nodes, ((1,), (2,), ()))).succs
    ((1,), ())
    """
    members = tuple(n.topo_id for n in dag.nodes if n.weighted and not n.serial)
    index = {topo: i for i, topo in enumerate(members)}
    succs = tuple(tuple(index[t] for t in _reached(dag, topo, index)) for topo in members)
    return Residual(members, succs, _levels(succs))


def _reached(dag: MiniDag, start: int, residual: dict[int, int]) -> list[int]:
    """Residual nodes reached from `start` through non-residual nodes, depth-first preorder."""
    found: list[int] = []
    seen = {start}
    stack = [iter(dag.succs[start])]
    while stack:
        target = next(stack[-1], None)
        if target is None:
            stack.pop()
        elif target not in seen:
            seen.add(target)
            if target in residual:
                found.append(target)
            else:
                stack.append(iter(dag.succs[target]))
    return found


def _levels(succs: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """Longest-path depth from a source; edges go forward, so one pass in order suffices."""
    levels = [0] * len(succs)
    for u, targets in enumerate(succs):
        for v in targets:
            levels[v] = max(levels[v], levels[u] + 1)
    return tuple(levels)
