"""Orders that wait once where a plan waits twice: two events from one logical stream into
another, the later receiver run first.

Where a stream receives two events from one other stream, at a and then at b, b's Send comes
after a's on the sending stream (events in one direction between two streams keep their
order), so the Recv before b also orders a's dependency when b runs before a: a's event goes.
`merged` tries that for each such pair of a plan (`Orders.before`: b, and its ancestors
between the two, run just before a), as it stands and with its large tasks grouped and its
physical streams filled again (`arrangement`: the split counts the new order), and keeps the
first order whose plan needs fewer events within the makespan limit, until no pair gives one.
a then waits for b's producer: the run may get longer, which the limit bounds.

The training steps under the parallel options, whose plans wait twice for the backward pass
beside it: Inception v2 91 -> 90 events (the events bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import Measured, assignment_of
from streamalloc.optimal.evaluator import Evaluator, measured_outcome
from streamalloc.optimal.event_bound import node_capacity
from streamalloc.optimal.filled import filled
from streamalloc.optimal.found import Found
from streamalloc.optimal.grouped import LARGE_SHARE, grouped
from streamalloc.optimal.options import EPS_US
from streamalloc.optimal.order import Order, Orders
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.result import SyncEvent
from streamalloc.sync.tasks import main_units

MERGE_RUNS = 32  # emulated runs of the tried orders at most, per plan (two per pair)

@dataclass(frozen=True)
class Arrangement:
    """The order that runs each stream's large tasks (`large` units or more: LARGE_SHARE of a
    physical stream's `capacity`) back to back (`grouped`) with small tasks in the room their
    physical streams leave (`filled`), of an assignment from a start order."""

    orders: Orders
    names: tuple[str, ...]
    units: dict[str, int]
    capacity: int
    large: int

    def __call__(self, streams: Sequence[int], start: Order) -> Order:
        names = self.names
        stream_of = {name: streams[v] for v, name in enumerate(names)}
        heavy = {name: streams[v] for v, name in enumerate(names)
                 if self.units[name] >= self.large}
        return filled(self.orders, grouped(self.orders, start, heavy), stream_of, self.units,
                      capacity=self.capacity, large=self.large)


def arrangement(graph: Graph, dag: TaskDag, orders: Orders) -> Arrangement | None:
    """The `Arrangement` of `dag`'s nodes; None where streams are not split."""
    capacity = node_capacity(graph)
    if capacity is None:
        return None
    units = {name: main_units(graph, graph.node(name)) for name in dag.names}
    return Arrangement(orders, dag.names, units, capacity, math.ceil(LARGE_SHARE * capacity))


def merged(graph: Graph, dag: TaskDag, found: Found, evaluator: Evaluator,
           measured: dict[Found, Measured | None], *, within_us: float, most: int | None
           ) -> tuple[Found, Measured] | None:
    """`found` in the order described above, with its outcome, where that needs fewer events
    than `found` within `within_us` and `most` events; else None. `evaluator` has the graph's
    `orders`; `measured`: the outcomes run before, where those run here go."""
    orders = evaluator.orders
    assert orders is not None, "an evaluator that reorders"
    chains, order = found
    order = orders.start if order is None else order
    outcome = measured_outcome(evaluator, measured, found)
    if outcome is None:
        return None
    arranged = arrangement(graph, dag, orders)
    streams = assignment_of(dag, chains)
    runs, best = MERGE_RUNS, None
    while runs > 0:
        better = None
        for first, second in _wait_pairs(evaluator, streams, order):
            moved = orders.before(order, second.recv, first.recv)
            if moved is None or moved == order:
                continue
            for trial in (moved, *(() if arranged is None else (arranged(streams, moved),))):
                if runs <= 0:
                    break
                runs -= (chains, trial) not in measured
                tried = measured_outcome(evaluator, measured, (chains, trial))
                if tried is not None and tried.events < outcome.events \
                        and tried.makespan_us <= within_us + EPS_US \
                        and (most is None or tried.events <= most):
                    better = (trial, tried)
                    break
            if better is not None or runs <= 0:
                break
        if better is None:
            break
        order, outcome = better
        best = ((chains, order), outcome)
    return best


def _wait_pairs(evaluator: Evaluator, streams: Sequence[int], order: Order
                ) -> list[tuple[SyncEvent, SyncEvent]]:
    """The events of the plan of `streams` in `order` from one logical stream into another,
    each with the next one between the same two streams (by its receiver's place in
    `order`), in the order of the receiving and the sending stream."""
    plan = evaluator.synchronized(streams, order)
    logical = plan.split_to_logic
    place = {name: k for k, name in enumerate(order)}
    between: dict[tuple[int, int], list[SyncEvent]] = {}
    for event in plan.events:
        into = logical.get(event.recv_stream, event.recv_stream)
        out = logical.get(event.send_stream, event.send_stream)
        if into != out and event.send in place and event.recv in place:
            between.setdefault((into, out), []).append(event)
    pairs = []
    for _, events in sorted(between.items()):
        events.sort(key=lambda e: place[e.recv])
        pairs += list(pairwise(events))
    return pairs
