"""Side streams for a graph's prologue: the makespan objective's candidates that take the
tasks the main input never reaches off the main streams.

GE graphs prepare their weights on the device: each convolution of a GE dump reads a Cast and
TransData of its weight and a Cast of its bias, placed just before it in T-order. Those tasks
depend on nothing the network computes, so they can run beside it; on the streams of the
network they cost their whole time on its critical path (GE dump 00026: 163 of 290 tasks,
638 us of 1137 us on one stream). The *prologue* is every task that the source with the
longest path to the end (the main input) does not reach; its *layers* are grouped by the first
reached task each feeds. A variant of a candidate's streams puts the prologue on k new side
streams (per graph), the layers dealt to them in turn, so a side stream runs the weights of
later layers ahead of them and a layer costs its stream one Recv, not its prologue's time.

Dealt in runs of g layers (g > 1), a side stream runs each run's layers last first, all before
the run's first consumer: one event then orders the whole run (the later layers' weights are
before it on the side stream, their consumers after it on theirs), so minimal sync keeps one
event per run, not per layer. That needs another execution order (`optimal/order.py`), so
those variants come with the sequence to run the nodes in. The variants compete with the
candidate they came from on the emulated makespan.

>>> from streamalloc.solver.dag import TaskDag
>>> dag = TaskDag.build(["x", "w", "a", "v", "b"],
...     [("x", "a"), ("w", "a"), ("a", "b"), ("v", "b")], ["g"] * 5)
>>> [chains for chains, _ in prologue_variants(dag, ((0, 1, 2, 3, 4),), [1, 1, 1, 1, 1])]
[((0, 2, 4), (1, 3)), ((0, 2, 4), (1,), (3,)), ((0, 2, 4), (1, 3))]
>>> prologue_variants(dag, ((0, 1, 2, 3, 4),), [1, 1, 1, 1, 1])[2][1]  # v, then w, before a
(0, 3, 1, 2, 4)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from streamalloc.optimal.evaluate import assignment_of, chains_of_assignment
from streamalloc.optimal.found import Found
from streamalloc.optimal.order import Orders
from streamalloc.solver.dag import TaskDag

# (side streams, layers per run) of each variant, from GE dump 00026 with the network on one
# stream (1137 us): 1 side stream 889 us, 2: 874, 3: 898, 4: 900; 2 streams in runs of 3
# layers 862 us and 18 events instead of 54 (runs of 2: 874, 4: 877, 6: 873)
SHAPES = ((1, 1), (2, 1), (2, 3))

Variant = tuple[tuple[tuple[int, ...], ...], tuple[int, ...] | None]  # streams; the order to
# run the nodes in (None: the candidate's own)


def prologue_variants(dag: TaskDag, chains: Sequence[Sequence[int]], durations: Sequence[int],
                      shapes: Sequence[tuple[int, int]] = SHAPES) -> list[Variant]:
    """`chains` with the prologue on side streams, one variant per (side streams, layers per
    run) of `shapes`; none when the main input reaches every task."""
    if dag.size == 0:
        return []
    _, reached = main_input(dag, durations)
    if all(reached):
        return []
    feeds = [dag.size] * dag.size  # the first reached task a prologue task leads to
    for v in reversed(range(dag.size)):
        feeds[v] = min((s if reached[s] else feeds[s] for s in dag.succs[v]), default=dag.size)
    consumers = sorted({feeds[v] for v in range(dag.size) if not reached[v]})
    number = {c: k for k, c in enumerate(consumers)}
    layer = [-1 if reached[v] else number[feeds[v]] for v in range(dag.size)]  # -1: reached
    streams = assignment_of(dag, chains)
    variants: list[Variant] = []
    for count, run in shapes:
        side: dict[tuple[str, int], int] = {}
        moved = list(streams)
        for v in range(dag.size):
            if not reached[v]:
                key = (dag.graphs[v], layer[v] // run % count)
                moved[v] = side.setdefault(key, len(chains) + len(side))
        order = None if run == 1 else _runs_last_first(dag, layer, consumers, run)
        variants.append((chains_of_assignment(moved), order))
    return variants


def main_input(dag: TaskDag, durations: Sequence[int]) -> tuple[int, list[bool]]:
    """The source with the longest path to the end (ties: the first in T-order), and per node
    whether it reaches it (False: the prologue). A non-empty dag."""
    levels = dag.bottom_levels(durations)
    root = max((v for v in range(dag.size) if not dag.preds[v]), key=lambda v: (levels[v], -v))
    return root, dag.reached_from([root])


def _runs_last_first(dag: TaskDag, layer: Sequence[int], consumers: Sequence[int], run: int
                     ) -> tuple[int, ...]:
    """A topological order that runs each run's prologue just before the run's first consumer,
    its layers last first; everything else (layer -1) in T-order."""
    key = [(v, 1, 0, v) if k < 0 else (consumers[k - k % run], 0, -k, v)
           for v, k in enumerate(layer)]
    missing = [len(p) for p in dag.preds]
    ready = [key[v] for v in range(dag.size) if not missing[v]]
    heapq.heapify(ready)
    order = []
    while ready:
        v = heapq.heappop(ready)[3]
        order.append(v)
        for s in dag.succs[v]:
            missing[s] -= 1
            if not missing[s]:
                heapq.heappush(ready, key[s])
    return tuple(order)


def with_prologues(dag: TaskDag, found: list[Found], durations: Sequence[int],
                   orders: Orders | None) -> list[Found]:
    """`found`, then each of them with its prologue on side streams (`optimal/prologue.py`;
    the variants that run it in runs of layers need their own execution order, so they start
    from T-order, and only where the search may order)."""
    variants: list[Found] = []
    for start, order in found:
        for variant, sequence in prologue_variants(dag, start, durations):
            if sequence is None:
                variants.append((variant, order))
            elif order is None and orders is not None:  # runs: from T-order, where it may
                variants.append((variant, orders.following([dag.names[v] for v in sequence])))
    return found + variants


def serial_prologues(dag: TaskDag, durations: Sequence[int], orders: Orders | None
                     ) -> list[Found]:
    """Every node on one stream per graph (the fewest events), then that stream with its
    prologue on side streams (`with_prologues`)."""
    serial = tuple(tuple(v for v in range(dag.size) if dag.graphs[v] == g)
                   for g in dict.fromkeys(dag.graphs))
    return with_prologues(dag, [(serial, None)], durations, orders)
