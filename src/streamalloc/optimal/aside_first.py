"""Before CP-SAT, under the events objective: the nodes of each heavy engine beside the rest
(`fewest_events.engines_aside`) in orders that batch their waits, and the best of them with
their large tasks grouped and filled, and then with its waits merged
(`optimal/merged_waits.py`). Where one reaches the events bound on the fewest
logical streams the makespan limit allows (`at_bounds.at_floor`), no search can do better
and it is written at once (with as few events and streams as any plan; the search might
have chosen another such plan, faster); else its runs are kept for the choice after the
search, which tries the same candidates among others, so the plan is the search's.

The training steps under the parallel options, whose AllReduces beside the compute reach
their bounds: ResNet-50 15.7 -> 5.4 s of wall time, the 48-layer transformer 54 -> 21 s.
"""

from __future__ import annotations

from dataclasses import replace

from streamalloc.ir.graph import Graph
from streamalloc.optimal.at_bounds import at_floor
from streamalloc.optimal.evaluate import Measured, assignment_of, breaks
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.fewest_events import (
    WAITS_NODES,
    engines_aside,
    fewest_or_grouped,
    orders_batching_waits,
)
from streamalloc.optimal.found import Chains, Found, Search
from streamalloc.optimal.merged_waits import merged
from streamalloc.optimal.order import Orders
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag

PHASE = "one-stream+engine+waits"


def aside_first(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                evaluator: Evaluator, *, events_floor: int | None,
                measured: dict[Found, Measured | None], batched: dict[Chains, list[Found]]
                ) -> Search | None:
    """The plan described above where it reaches the bounds, else None (its runs stay in
    `measured`, its orders in `batched`, for the choice after the search)."""
    options = evaluator.options
    if events_floor is None or options.objective != "events" or options.concurrency != "ge" \
            or dag.size > WAITS_NODES:
        return None
    evaluator = replace(evaluator, orders=Orders.of(graph))
    if evaluator.orders is None:
        return None
    times = [evaluator.tasks[name][1] for name in dag.names]
    within_us, most = evaluator.limit_us(), evaluator.baseline.events
    candidates = orders_batching_waits(
        dag, [(chains, None) for chains in engines_aside(graph, dag, times)
              if not breaks(graph, dag, constraints, assignment_of(dag, chains))],
        evaluator, times, measured, batched=batched)
    found = fewest_or_grouped(graph, dag, candidates, evaluator, measured, within_us=within_us,
                              most=most, constraints=constraints, enough=events_floor)
    if found is None:
        return None
    (chains, order), grouped = found
    phase = PHASE + ("+grouped" if grouped else "")
    if not at_floor(evaluator, chains, order, events_floor=events_floor, measured=measured):
        again = merged(graph, dag, (chains, order), evaluator, measured, within_us=within_us,
                       most=most)
        if again is None:
            return None
        (chains, order), phase = again[0], phase + "+merged"
        if not at_floor(evaluator, chains, order, events_floor=events_floor,
                        measured=measured):
            return None
    return Search(evaluator.numbering(chains), "OPTIMAL", None, None, 0.0, phase, order)
