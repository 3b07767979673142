"""Which stream-successor arcs the model may choose: a linear number of candidate pairs.

Always the transitive-reduction edges (the arcs that save an event) and the baseline's own
successor pairs (so its plan is a solution); then, per node, the `window` nearest earlier
nodes of its graph in T-order: under `full` concurrency only those that reach it (two nodes
share a stream only if one reaches the other, Nimble's setting), under `ge` any of them.
Arcs stay inside one graph unless streams may span graphs (`SolveInput.span_graphs`), as ge
mode's do: then the first two kinds join nodes of different graphs too (a subgraph's nodes
follow their parent node in T-order).

>>> from streamalloc.solver.dag import TaskDag
>>> dag = TaskDag.build(["a", "b", "c"], [("a", "c")], ["g"] * 3)
>>> sorted(candidate_arcs(dag, "full", [], 2)), sorted(candidate_arcs(dag, "ge", [], 1))
([(0, 2)], [(0, 1), (0, 2), (1, 2)])
>>> dag = TaskDag.build(["a", "b"], [("a", "b")], ["g", "h"])
>>> candidate_arcs(dag, "ge", [[0, 1]], 1), candidate_arcs(dag, "ge", [[0, 1]], 1, span=True)
([], [(0, 1)])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from streamalloc.solver.dag import TaskDag


def candidate_arcs(dag: TaskDag, concurrency: str, hint: Sequence[Sequence[int]],
                   window: int, *, span: bool = False) -> list[tuple[int, int]]:
    """Candidate (u, v) pairs, u before v in T-order, in one graph unless `span`; sorted."""
    graphs = dag.graphs
    found = {(u, v) for u, v in dag.reduction if span or graphs[u] == graphs[v]}
    for chain in hint:
        for u, v in itertools.pairwise(chain):
            if (span or graphs[u] == graphs[v]) and (concurrency != "full" or dag.reaches(u, v)):
                found.add((u, v))
    earlier: dict[str, list[int]] = {}
    for v in range(dag.size):
        members = earlier.setdefault(dag.graphs[v], [])
        taken = 0
        for u in members[:-8 * window - 1:-1]:  # a bounded look back keeps this linear
            if taken == window:
                break
            if concurrency != "full" or dag.reaches(u, v):
                found.add((u, v))
                taken += 1
        members.append(v)
    return sorted(found)
