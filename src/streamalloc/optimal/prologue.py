"""Side streams for a graph's prologue: the makespan objective's candidates that take the
tasks the main input never reaches off the main streams.

GE graphs prepare their weights on the device: each convolution of a GE dump reads a Cast and
TransData of its weight and a Cast of its bias, placed just before it in T-order. Those tasks
depend on nothing the network computes, so they can run beside it; on the streams of the
network they cost their whole time on its critical path (GE dump 00026: 163 of 290 tasks,
638 us of 1137 us on one stream). The *prologue* is every task that the source with the
longest path to the end (the main input) does not reach. A variant of a candidate's streams
puts it on k new side streams (per graph), grouped by the first reached task each feeds, in
T-order, the groups dealt to the side streams in turn: a side stream then runs the weights of
consecutive layers ahead of them, and each layer costs its stream one Recv, not its prologue's
time. The variants compete with the candidate they came from on the emulated makespan.

>>> from streamalloc.solver.dag import TaskDag
>>> dag = TaskDag.build(["x", "w", "a", "v", "b"],
...     [("x", "a"), ("w", "a"), ("a", "b"), ("v", "b")], ["g"] * 5)
>>> prologue_variants(dag, ((0, 1, 2, 3, 4),), [1, 1, 1, 1, 1], (1, 2))
[((0, 2, 4), (1, 3)), ((0, 2, 4), (1,), (3,))]
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.optimal.evaluate import assignment_of, chains_of_assignment
from streamalloc.solver.dag import TaskDag

SIDE_STREAMS = (1, 2)  # side streams per variant: GE dump 00026's plan from the fastest
# candidate: 1 -> 889 us, 2 -> 874 us, 3 -> 898 us, 4 -> 900 us (the candidate: 1137 us)


def prologue_variants(dag: TaskDag, chains: Sequence[Sequence[int]], durations: Sequence[int],
                      side_streams: Sequence[int] = SIDE_STREAMS
                      ) -> list[tuple[tuple[int, ...], ...]]:
    """`chains` with the prologue on k side streams, for each k of `side_streams`; none when
    the main input reaches every task."""
    if dag.size == 0:
        return []
    levels = dag.bottom_levels(durations)
    root = max((v for v in range(dag.size) if not dag.preds[v]), key=lambda v: (levels[v], -v))
    reached = [False] * dag.size
    reached[root] = True
    for v in range(dag.size):  # T-order: producers first
        reached[v] = reached[v] or any(reached[p] for p in dag.preds[v])
    if all(reached):
        return []
    feeds = [dag.size] * dag.size  # the first reached task a prologue task leads to
    for v in reversed(range(dag.size)):
        feeds[v] = min((s if reached[s] else feeds[s] for s in dag.succs[v]), default=dag.size)
    groups = {c: k for k, c in enumerate(sorted({feeds[v] for v in range(dag.size)
                                                 if not reached[v]}))}
    streams = assignment_of(dag, chains)
    variants = []
    for count in side_streams:
        side: dict[tuple[str, int], int] = {}
        moved = list(streams)
        for v in range(dag.size):
            if not reached[v]:
                key = (dag.graphs[v], groups[feeds[v]] % count)
                moved[v] = side.setdefault(key, len(chains) + len(side))
        variants.append(chains_of_assignment(moved))
    return variants
