"""GE's topological sorts (ge-logical-streams.md 1.1), as pure functions over adjacency.

Edges are counted per edge (a consumer reading one producer twice waits for both). A data edge
leaving a NextIteration/RefNextIteration node is a loop back edge and does not order anything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence

# Sources of these types are taken before any other source in GE's depth-first sort.
FIRST_SOURCE_TYPES = frozenset({"Data", "RefData", "AippData", "AnnData", "Send", "Recv"})

Successors = Callable[[str], Sequence[str]]


class CycleError(Exception):
    """The graph has a cycle; `cycle` lists its nodes in edge order."""

    def __init__(self, cycle: list[str]) -> None:
        super().__init__(" -> ".join(cycle + cycle[:1]))
        self.cycle = cycle


def _in_counts(names: Sequence[str], successors: Successors) -> dict[str, int]:
    counts = dict.fromkeys(names, 0)
    for name in names:
        for succ in successors(name):
            counts[succ] += 1
    return counts


def dfs_order(names: Sequence[str], successors: Successors, types: Mapping[str, str]) -> list[str]:
    """GE's default depth-first sort.

    `names` is the node-list order (the tie-break); `successors(n)` gives GE's release order: data
    consumers by output index, then control successors. Data-like sources are taken first in list
    order, then other sources; the most recently released node is taken next.

    >>> succ = {"d": ["a", "b"], "a": [], "b": []}
    >>> dfs_order(["d", "a", "b"], succ.__getitem__, {"d": "Data", "a": "Relu", "b": "Relu"})
    ['d', 'b', 'a']
    """
    counts = _in_counts(names, successors)
    stack = _sources(names, counts, types)[::-1]
    order: list[str] = []
    while stack:
        name = stack.pop()
        order.append(name)
        for succ in successors(name):
            counts[succ] -= 1
            if counts[succ] == 0:
                stack.append(succ)
    _check_complete(order, names, successors)
    return order


def _sources(names: Sequence[str], counts: Mapping[str, int],
             types: Mapping[str, str]) -> list[str]:
    """Nodes without inputs in taking order: data-like sources first, each group in list order."""
    sources = [n for n in names if counts[n] == 0]
    return ([n for n in sources if types[n] in FIRST_SOURCE_TYPES]
            + [n for n in sources if types[n] not in FIRST_SOURCE_TYPES])


def bfs_order(names: Sequence[str], successors: Successors, types: Mapping[str, str]
              ) -> list[str]:
    """GE's breadth-first sort (training graphs, `ge.topoSortingMode` 0).

    Sources are taken as in `dfs_order`; nodes released by one taken node are queued in
    byte-wise name order; the next source is taken only when the queue is empty.
    """
    counts = _in_counts(names, successors)
    sources = deque(_sources(names, counts, types))
    queue: deque[str] = deque()
    order: list[str] = []
    while queue or sources:
        name = queue.popleft() if queue else sources.popleft()
        order.append(name)
        released = []
        for succ in successors(name):
            counts[succ] -= 1
            if counts[succ] == 0:
                released.append(succ)
        queue.extend(sorted(released, key=lambda n: n.encode("utf-8")))
    _check_complete(order, names, successors)
    return order


def _check_complete(order: list[str], names: Sequence[str], successors: Successors) -> None:
    if len(order) == len(names):
        return
    done = set(order)
    left = [n for n in names if n not in done]
    import networkx as nx  # only to name the cycle of a bad graph: not on every load
    digraph = nx.DiGraph()
    digraph.add_edges_from((n, s) for n in left for s in successors(n) if s not in done)
    raise CycleError([u for u, _ in nx.find_cycle(digraph)])
