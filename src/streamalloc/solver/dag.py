"""The streamed-node DAG the solver reasons about: nodes that issue tasks, in T-order, and the
dependencies a plan must order between them; its transitive reduction and reachability.

Reachability is exact, as bitsets (Python ints): `anc[v]` has bit u when u reaches v. That is
O(N^2 / 64) words: nothing for the real models (a few thousand nodes), 0.6 GB and 1.4 s for a
100k-node generated graph; CP-SAT solves models of larger graphs window by window
(`solver.windows`), each window a DAG of its own.

>>> dag = TaskDag.build(["a", "b", "c"], [("a", "b"), ("b", "c"), ("a", "c")], ["g"] * 3)
>>> dag.reduction
((0, 1), (1, 2))
>>> dag.reaches(0, 2), dag.reaches(2, 0)
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

Time = TypeVar("Time", int, float)


@dataclass(frozen=True)
class TaskDag:
    """Nodes 0..n-1 in T-order (every edge goes forward), their graphs and dependency edges."""

    names: tuple[str, ...]
    graphs: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]

    @classmethod
    def build(cls, names: Sequence[str], edges: Sequence[tuple[str, str]],
              graphs: Sequence[str]) -> TaskDag:
        """From names in T-order and dependency pairs between them (duplicates dropped; an
        edge that points backwards in T-order, a loop back edge, orders the next iteration
        and is left out)."""
        index = {n: i for i, n in enumerate(names)}
        pairs = sorted({(index[u], index[v]) for u, v in edges if index[u] < index[v]})
        return cls(tuple(names), tuple(graphs), tuple(pairs))

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @cached_property
    def preds(self) -> tuple[tuple[int, ...], ...]:
        """Direct predecessors of each node, ascending."""
        return _adjacency(self.size, ((v, u) for u, v in self.edges))

    @cached_property
    def succs(self) -> tuple[tuple[int, ...], ...]:
        """Direct successors of each node, ascending."""
        return _adjacency(self.size, self.edges)

    def bottom_levels(self, durations: Sequence[Time]) -> list[Time]:
        """Longest path from each node to the end, its own duration included."""
        rank: list[Time] = list(durations)
        for v in range(self.size - 1, -1, -1):
            rank[v] = durations[v] + max((rank[w] for w in self.succs[v]), default=0)
        return rank

    def reached_from(self, first: Iterable[int]) -> list[bool]:
        """Per node, is it one of `first` or after one of them?"""
        seeds = set(first)
        after = [False] * self.size
        for v in range(self.size):  # T-order: producers first
            after[v] = v in seeds or any(after[p] for p in self.preds[v])
        return after

    @cached_property
    def ancestors(self) -> tuple[int, ...]:
        """Bitset of the nodes that reach each node (itself excluded)."""
        anc = [0] * self.size
        for v in range(self.size):
            bits = 0
            for u in self.preds[v]:
                bits |= anc[u] | (1 << u)
            anc[v] = bits
        return tuple(anc)

    def reaches(self, u: int, v: int) -> bool:
        """Is there a path u -> v?"""
        return bool(self.ancestors[v] >> u & 1)

    def ordered(self, u: int, v: int) -> bool:
        """Does one of the two reach the other?"""
        return self.reaches(u, v) or self.reaches(v, u)

    @cached_property
    def reduction(self) -> tuple[tuple[int, int], ...]:
        """The edges of the transitive reduction: u -> v with no other path from u to v."""
        result = []
        for v in range(self.size):
            preds = self.preds[v]
            # OR of the other predecessors' closures, by prefix and suffix ORs
            closures = [self.ancestors[u] | (1 << u) for u in preds]
            suffix = [0] * (len(preds) + 1)
            for i in range(len(preds) - 1, -1, -1):
                suffix[i] = suffix[i + 1] | closures[i]
            prefix = 0
            for i, u in enumerate(preds):
                others = prefix | suffix[i + 1]
                if not others >> u & 1:
                    result.append((u, v))
                prefix |= closures[i]
        return tuple(sorted(result))

    @cached_property
    def reduction_succs(self) -> tuple[tuple[int, ...], ...]:
        """Each node's successors along the reduction edges, ascending."""
        return _adjacency(self.size, self.reduction)


def _adjacency(n: int, pairs: Iterable[tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    """Per node 0..n-1, the second nodes of its `pairs`, in their order."""
    found: list[list[int]] = [[] for _ in range(n)]
    for u, v in pairs:
        found[u].append(v)
    return tuple(map(tuple, found))
