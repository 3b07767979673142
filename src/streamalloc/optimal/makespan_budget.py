"""The makespan objective under an event budget: starts polished or merged down to it, the
fullest and the sparest start within it, and ge mode's streams polished within its
makespan."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from streamalloc.ir.graph import Graph
from streamalloc.optimal.at_bounds import REGION_EVENTS, regions_aside
from streamalloc.optimal.evaluate import (
    Measured,
    assignment_of,
    breaks,
    chains_of_assignment,
    rule_guard,
)
from streamalloc.optimal.evaluator import Evaluator, evaluation_count, lifted_run
from streamalloc.optimal.found import Found
from streamalloc.optimal.ladder import merge_ladder
from streamalloc.optimal.makespan_starts import repaired
from streamalloc.optimal.options import POLISH_NODES_PER_SECOND, POLISH_PER_SECOND, TIME_SCALE
from streamalloc.optimal.order import Order
from streamalloc.optimal.polishing import polish_streams
from streamalloc.optimal.prologue import serial_prologues
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length
from streamalloc.solver.polish import Polish

BUDGET_SHARE = 1.0  # of --time-limit for each start polished down to the event budget
GAP_TRIES = 8  # or, when more, this many tried moves per event it is over the budget, up to
GAP_NODE_TRIES = 10_000_000  # this many divided by the streamed nodes (a move's event count
# and schedule estimate walk the whole graph, 1.6 us per node: a 20k-node generated graph 9.5k
# events over a budget was given 76k tries, and its polish ran more than 6 minutes; capped,
# about 16 s; on the bench's largest input, the ResNet-50 training step's 786 streamed
# nodes, it binds past 1,590 events over)
LADDER_SHARE = 0.2  # of --time-limit in evaluations for the merge ladder down to the budget,
LADDER_TRIES = 6  # or, when more, this many per stream of its start up to LADDER_STREAMS (a
LADDER_STREAMS = 32  # step emulates two merges and ranks the others, the last one bisects)
BUDGET_STRETCH = (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0, None)  # the schedule estimates the
# polish down to the budget allows in turn, x the start's (None: any)


def within_budget(graph: Graph, dag: TaskDag, starts: list[Found],
                  outcomes: list[Measured | None], *, hint: Found, durations: Sequence[int],
                  stream_limit: int, constraints: list[Constraint], evaluator: Evaluator
                  ) -> list[Found]:
    """More starts under the makespan objective's event budget, where it binds (none without
    one, nor where every start runs within it): the baseline's streams and the fastest start
    (`outcomes`: the starts'; one over a device limit, measured with the limits lifted, counts
    as over the budget), when it is over the budget and faster than every start within it,
    each polished down to the budget (`reduced_to_budget`), the fastest also by merging whole
    streams (`optimal/ladder.py`); and one stream per graph (the fewest events), also with its
    prologue on side streams, and within a budget of REGION_EVENTS or more with its prologue
    and a single-exit region aside (the events objective's plans at its bound; repaired
    within the rules). The critical search then shortens the run within the budget."""
    budget = evaluator.options.event_budget
    if budget is None:
        return []
    over = [(o.makespan_us, k) for k, o in enumerate(outcomes) if o and o.events > budget]
    for k, (chains, order) in enumerate(starts):  # over a device limit: as over the budget
        if outcomes[k] is None and not breaks(graph, dag, constraints,
                                              streams := assignment_of(dag, chains)):
            probe = lifted_run(evaluator, streams, order)
            if probe is not None and probe[0] > budget:
                over.append((probe[1], k))
    if not over:  # the budget does not bind (the device's event limit on a large graph): the
        return []  # plans of fewest events would cost their runs (a 100k-node graph: 40 s)
    kept = min((o.makespan_us for o in outcomes if o and o.events <= budget), default=math.inf)
    fastest = [starts[min(over)[1]]] if min(over)[0] < kept else []
    guard = rule_guard(graph, dag, constraints)
    found = []
    for chains, order in [hint, *fastest]:
        reduced = reduced_to_budget(dag, chains, order, durations, evaluator, guard=guard)
        found += [reduced] if reduced is not None else []
    for start in fastest:
        found += laddered(dag, start, durations, evaluator, guard=guard)
    fewest = serial_prologues(dag, durations, evaluator.orders)
    if budget >= REGION_EVENTS and len(set(dag.graphs)) == 1:
        fewest += [start for start, _ in regions_aside(dag, durations)]
    return found + [repaired(graph, dag, start, constraints, durations,
                             stream_limit=stream_limit) for start in fewest]


def laddered(dag: TaskDag, start: Found, durations: Sequence[int], evaluator: Evaluator, *,
             guard: Callable[[Sequence[int], Sequence[int]], bool]) -> list[Found]:
    """`start` brought within the event budget by the merge ladder (`optimal/ladder.py`), in
    its order; none where no merge gets it there."""
    budget = evaluator.options.event_budget
    assert budget is not None
    chains, order = start
    streams = assignment_of(dag, chains)
    evaluations = max(evaluation_count(evaluator, streams, evaluator.options.time_limit
                                       * LADDER_SHARE),
                      LADDER_TRIES * min(len(chains), LADDER_STREAMS))
    merged = merge_ladder(dag, streams, budget=budget, allowed=guard,
                          probe=partial(lifted_run, evaluator, order=order),
                          durations=durations, evaluations=evaluations)
    return [] if merged is None else [(chains_of_assignment(merged), order)]


def over_budget_fastest(candidates: list[Found], outcomes: list[Measured | None],
                        budget: int | None) -> tuple[Found, Measured] | None:
    """The fastest of `candidates` (`outcomes`: theirs) where it is over the event budget and
    faster than every one within it, with its outcome: the start the search without the
    budget runs from (None without a budget, or where it does not bind)."""
    if budget is None:
        return None
    over = min(((o.makespan_us, k) for k, o in enumerate(outcomes) if o and o.events > budget),
               default=None)
    kept = min((o.makespan_us for o in outcomes if o and o.events <= budget), default=math.inf)
    if over is None or over[0] >= kept:
        return None
    outcome = outcomes[over[1]]
    assert outcome is not None
    return candidates[over[1]], outcome


def reduced_to_budget(dag: TaskDag, chains: tuple[tuple[int, ...], ...], order: Order | None,
                      durations: Sequence[int], evaluator: Evaluator, *,
                      guard: Callable[[Sequence[int], Sequence[int]], bool]) -> Found | None:
    """`chains` polished on the event count down to the event budget, None when their plan
    stays over it. The polish first keeps the length of the start's schedule estimate
    (dependencies and stream order, no contention: cheap enough for every move), then allows
    it longer step by step (BUDGET_STRETCH), so the events that cost least go first. The
    polish counts the events of minimal sync in T-order; when the plan needs more, its target
    drops by the difference. The polishes of a start share BUDGET_SHARE of --time-limit in
    tried moves (as many per second as the polish after the search)."""
    budget = evaluator.options.event_budget
    assert budget is not None
    streams = assignment_of(dag, chains)
    length = partial(schedule_length, dag, durations)
    start, target = length(streams), budget
    tries = max(int(evaluator.options.time_limit * BUDGET_SHARE
                    * min(POLISH_PER_SECOND, POLISH_NODES_PER_SECOND / max(1, dag.size))),
                min(GAP_TRIES * (event_count(dag, streams) - budget),
                    GAP_NODE_TRIES // max(1, dag.size)))
    for stretch in BUDGET_STRETCH:
        limit = None if stretch is None else math.ceil(start * stretch)
        while tries > 0:
            step = Polish(dag, length, limit, guard, tries, streams, target, round_trips=False)
            streams, tries = step.run(), step.budget
            probe = lifted_run(evaluator, streams, order)
            if probe is None:
                return None
            if probe[0] <= budget:
                return chains_of_assignment(streams), order
            if step.events > target:
                break  # none of the polish's moves fits this limit
            target -= probe[0] - budget
    return None


def within_bar(graph: Graph, dag: TaskDag, hint: tuple[tuple[int, ...], ...],
               constraints: list[Constraint], evaluator: Evaluator
               ) -> tuple[tuple[tuple[int, ...], ...], None, int] | None:
    """Under an event budget, when the fastest plan the search found within it is slower
    than ge mode's x (1 + slack): ge mode's streams with the events objective's polish (on
    the exact event count, each move's plan emulated within that bar, its whole budget of
    moves), when that brings them
    within the budget; with the plan's makespan. The ResNet-50 training step under the
    parallel options, budget 110, `--time-limit 2`: the search's best ran 11701 us, over ge
    mode's 10148, and the plan fell back; this polish gives 110 events at 10144 us."""
    chains = polish_streams(graph, dag, hint, None, constraints=constraints, evaluator=evaluator,
                            limit=evaluator.limit(), events_first=True)
    outcome = evaluator.outcome(assignment_of(dag, chains))
    budget = evaluator.options.event_budget
    if outcome is None or budget is None or outcome.events > budget:
        return None
    makespan = math.ceil(outcome.makespan_us * TIME_SCALE)
    return (chains, None, makespan) if makespan <= evaluator.limit() else None


def budget_ends(candidates: list[Found], outcomes: list[Measured | None], budget: int | None
                ) -> list[Found]:
    """Under an event budget, the fastest candidate of those with the most events within it,
    then the fastest of those with the fewest (none without a budget): the critical search
    also runs from each, as its moves stay within the budget.

    * From the fastest candidate, when it has events to spare, a move that needs two more may
      be out of reach (the example training step under free rules and a budget of 1: from
      one stream and no event at 345.9 us, no move fits; from a start with its one event,
      325.9 us).
    * From the fastest candidate the search may end slower than from the one a smaller budget
      makes the fastest (the Llama tiny training step under the parallel options,
      `--time-limit 2`: within 16 events 3341.5 us from 13 events, within 32 3543.3 us
      before the search also ran from there)."""
    if budget is None:
        return []
    within = [(o.events, o.makespan_us, k) for k, o in enumerate(outcomes)
              if o is not None and o.events <= budget]
    if not within:
        return []
    fullest = min((-events, makespan, k) for events, makespan, k in within)[2]
    return [candidates[fullest], candidates[min(within)[2]]]
