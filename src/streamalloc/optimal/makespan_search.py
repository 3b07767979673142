"""The makespan objective's emulated search: the critical-chain search from the fastest
start, and the numbering of the streams that runs fastest."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import msgspec

from streamalloc.background import Background, can_start_processes
from streamalloc.ir.graph import Graph
from streamalloc.optimal.bounds import makespan_bound, segment_runs
from streamalloc.optimal.critical import improvements
from streamalloc.optimal.evaluate import (
    Measured,
    assignment_of,
    breaks,
    chains_of_assignment,
    rule_guard,
)
from streamalloc.optimal.evaluator import Evaluator, evaluation_count, measured_outcome
from streamalloc.optimal.found import Found, Search
from streamalloc.optimal.makespan_budget import (
    budget_ends,
    laddered,
    over_budget_fastest,
    within_bar,
    within_budget,
)
from streamalloc.optimal.makespan_starts import (
    affordable,
    aside_starts,
    fastest,
    fastest_distinct,
    makespan_starts,
    outcomes_of,
    packed_starts,
    repaired,
)
from streamalloc.optimal.nimble import unordered_neighbours
from streamalloc.optimal.numbering import critical_first
from streamalloc.optimal.options import TIME_SCALE
from streamalloc.optimal.order import Order, Orders
from streamalloc.optimal.segment_plans import with_segment_plans
from streamalloc.rules.constraints import Constraint
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import SolveInput

CRITICAL_SHARE = 0.8  # of --time-limit for the critical-chain search
BUDGET_END_SHARE = 0.4  # for each of its runs from the ends of an event budget (`budget_ends`)
FREE_SHARE = 0.4  # for its run without the event budget, merged down to it after
FREE_RATIO = 0.5  # (`_searched_then_merged`), where the budget is at least this share of the
# events of its start: the ladder merges a few streams (the ResNet-50 training step: 206 of
# 301); from further above, the merged plans ran slower than the starts within the budget (GPT-2
# small, BERT base and T5 small within 20 of 49-54 events, Llama tiny's step within 32 of 109)


def sped_up(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
            order: Order | None, *, constraints: list[Constraint], evaluator: Evaluator,
            share: float = CRITICAL_SHARE, chains_only: bool = False,
            seed: int | None = None) -> list[Found]:
    """The critical-chain local search from the fastest candidate, in its order (moves that
    break a rule are not tried, nor, when `chains_only`, moves that put two nodes no path
    orders on one stream; the execution order changes when `evaluator.orders` allows),
    `share` of --time-limit in evaluations, its kicks seeded by `seed` (default --seed): the
    streams and orders (None: the graph's) that were its best when found, in that order."""
    guard = rule_guard(graph, dag, constraints)
    start = assignment_of(dag, chains)

    def run(streams: Sequence[int], order: Order | None) -> EmulationResult | None:
        moved = [v for v in range(dag.size) if streams[v] != start[v]]
        if chains_only and unordered_neighbours(dag, chains_of_assignment(streams)):
            return None
        return evaluator.run(streams, order) if guard(streams, moved) else None

    budget = evaluation_count(evaluator, start, evaluator.options.time_limit * share)
    found = improvements(dag, start, run, budget,
                         seed=evaluator.options.seed if seed is None else seed,
                         orders=evaluator.orders, order=order, floor_us=_floor_us(evaluator))
    own = evaluator.orders.start if evaluator.orders else None
    return [(chains_of_assignment(streams), None if order == own else order)
            for streams, order in found[1:]]


def searches(graph: Graph, dag: TaskDag, starts: Sequence[Found], *,
             constraints: list[Constraint], evaluator: Evaluator) -> list[list[Found]]:
    """The critical-chain search from `starts[0]` (the fastest start) with --seed and, with
    --workers N > 1, N - 1 more: search k from the k-th fastest start (cycling through
    `starts`) seeded --seed + k, each with the whole budget. Each one's bests (`sped_up`), in
    that order: the first is what one worker finds, so the fastest of them all is never slower
    than that. They run at once in processes forked from this one, so searching more ways
    takes about the wall time of one (on as many cores), where processes may start
    (`background.can_start_processes`); elsewhere one after the other, with the same
    results."""
    workers = evaluator.options.workers
    portfolio = (graph, dag, starts, constraints, evaluator)
    if workers == 1 or not can_start_processes():
        return [_search(portfolio, k) for k in range(workers)]
    _floor_us(evaluator)  # computed once, here: the processes inherit it
    runs = [Background(_search, portfolio, k) for k in range(workers)]
    try:
        return [run.result() for run in runs]
    finally:  # (Ctrl-C: the searches still running are stopped)
        for run in runs:
            run.cancel()


Portfolio = tuple[Graph, TaskDag, Sequence[Found], list[Constraint], Evaluator]


def _search(portfolio: Portfolio, k: int) -> list[Found]:
    """Search k of `searches`."""
    graph, dag, starts, constraints, evaluator = portfolio
    chains, order = starts[k % len(starts)]
    return sped_up(graph, dag, chains, order, constraints=constraints, evaluator=evaluator,
                   seed=evaluator.options.seed + k)


def _segments_planned(graph: Graph, dag: TaskDag, best: Found, *,
                      constraints: list[Constraint], evaluator: Evaluator) -> list[Found]:
    """The search's best with its segments planned as the sync-aware bound solved them,
    where that runs faster (`optimal/segment_plans.py`), or nothing. After the search, not
    before: from Inception v1's start a module so planned ran faster, but the search from
    there ended slower (310.2 us against 309.5)."""
    runs = segment_runs(graph, evaluator.baseline.plan, evaluator.costs)
    outcome = evaluator.outcome(assignment_of(dag, best[0]), best[1]) if runs else None
    if outcome is None:  # no segment solved (any graph above 2,000 tasks): no run to spend
        return []
    planned, _ = with_segment_plans(
        dag, best, math.ceil(outcome.makespan_us * TIME_SCALE), evaluator=evaluator,
        runs=runs, allowed=lambda streams: not breaks(graph, dag, constraints, streams))
    return [] if planned == best else [planned]


def _floor_us(evaluator: Evaluator) -> float:
    """The makespan no plan of the graph runs under (`makespan_bound`, rounded as the driver
    rounds it): the search stops there. GE dumps 00017 and 00046 reach it at their start: at
    --time-limit 10 their runs took 8.0 and 7.6 s, now 1.6 and 2.8 s."""
    return round(makespan_bound(evaluator.graph, evaluator.baseline.plan, evaluator.costs), 3)


def numbered(dag: TaskDag, found: list[Found], limit: int, evaluators: list[Evaluator],
             measured: dict[Found, Measured | None]
             ) -> tuple[tuple[tuple[int, ...], ...], Order | None, Evaluator, int]:
    """The streams and order of `found` (the start, then the search's bests) and the
    numbering of their ids (`evaluators`, by first node first) that run fastest, verified and
    within the event budget, with that makespan; the start by first node when none is under
    `limit`. `measured`: the outcomes the first evaluator ran before (the starts': on a
    100k-node graph each run takes seconds).
    The search numbers by first node (numbered otherwise it takes other paths, longer on T5
    and a GE dump), so a best it found earlier may run faster numbered critical first; ties go
    to the latest found and the first numbering."""
    best = (*found[0], evaluators[0], limit)
    budget = evaluators[0].options.event_budget
    for chains, order in reversed(found):
        numbered_as: list[tuple[tuple[int, ...], ...]] = []
        for k, evaluator in enumerate(evaluators):
            ids = evaluator.numbering(chains)
            if ids in numbered_as:  # the same plan: it runs as it did (ties keep the first)
                continue
            numbered_as.append(ids)
            outcome = measured_outcome(evaluator, measured, (chains, order)) if k == 0 \
                else evaluator.outcome(assignment_of(dag, chains), order)
            if outcome is None or (budget is not None and outcome.events > budget):
                continue
            makespan = math.ceil(outcome.makespan_us * TIME_SCALE)
            if makespan < best[3]:
                best = (chains, order, evaluator, makespan)
    return best


def fastest_plan(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...], *,
                 hint: tuple[tuple[int, ...], ...], data: SolveInput,
                 constraints: list[Constraint], evaluator: Evaluator, stream_limit: int
                 ) -> tuple[Found, Evaluator, int, float, bool]:
    """The fastest emulated plan of the makespan objective: of the starts (`chains`, CP-SAT's;
    `optimal/makespan_starts.py`) and, under an event budget, the starts brought within it
    (`optimal/makespan_budget.py`), the fastest, improved by the critical-chain searches
    (`searches`; also from the fullest and the sparest start within the budget,
    `budget_ends`), the fastest of their successive bests and of the first search's last best
    with its segments planned as the sync-aware bound solved them (`optimal/segment_plans.py`),
    their streams numbered by first node or critical first (`optimal/numbering.py`); under a
    budget and slower than ge mode x (1 + slack), ge mode's streams polished within both,
    where they are. With the evaluator that numbers its streams, its makespan in schedule units (the
    polish's bound), CP-SAT's deterministic time for the packings, and whether the plan is the
    one with its segments planned."""
    evaluator = replace(evaluator, orders=Orders.of(graph))
    packed, packing_time = packed_starts(graph, dag, evaluator)
    known: dict[Found, Measured | None] = {}
    kinded = makespan_starts(graph, dag, chains, data.durations, evaluator) \
        + [("aside", start) for start in aside_starts(graph, dag, evaluator, constraints, known)] \
        + [("packed", start) for start in packed]
    starts = affordable(graph, dag, [
        (kind, repaired(graph, dag, start, constraints, data.durations,
                        stream_limit=stream_limit)) for kind, start in kinded],
        constraints, evaluator)
    outcomes = outcomes_of(graph, dag, starts, constraints, evaluator, measured=known)
    more = within_budget(graph, dag, starts, outcomes,
                         hint=(hint, None), durations=data.durations,
                         stream_limit=stream_limit, constraints=constraints,
                         evaluator=evaluator)
    candidates = starts + more
    measured = outcomes + outcomes_of(graph, dag, more, constraints, evaluator)
    merged = _searched_then_merged(graph, dag, candidates, measured, durations=data.durations,
                                   constraints=constraints, evaluator=evaluator)
    candidates += merged
    measured += outcomes_of(graph, dag, merged, constraints, evaluator)
    chains, order, limit = fastest(candidates, measured, evaluator)
    first, *others = searches(graph, dag, [found for _, found in fastest_distinct(
        candidates, measured, evaluator)] or [(chains, order)], constraints=constraints,
        evaluator=evaluator)
    planned = _segments_planned(graph, dag, first[-1] if first else (chains, order),
                                constraints=constraints, evaluator=evaluator)
    # `numbered` gives ties to the latest found: the other workers' bests come first, so
    # they replace one worker's plan only where faster
    bests = [found for other in others for found in other] + first + planned
    searched = [(chains, order)]
    for end in budget_ends(candidates, measured, evaluator.options.event_budget):
        if end not in searched:
            searched.append(end)
            bests += [end, *sped_up(graph, dag, *end, constraints=constraints,
                                    evaluator=evaluator, share=BUDGET_END_SHARE)]
    chains, order, evaluator, limit = numbered(
        dag, [(chains, order), *bests], limit,
        [evaluator, replace(evaluator, numbering=critical_first(dag, data.durations))], known)
    if limit > evaluator.limit() and evaluator.options.event_budget is not None:
        chains, order, limit = within_bar(graph, dag, hint, constraints, evaluator) \
            or (chains, order, limit)
    return (chains, order), evaluator, limit, packing_time, (chains, order) in planned


def _searched_then_merged(graph: Graph, dag: TaskDag, candidates: list[Found],
                          outcomes: list[Measured | None], *, durations: Sequence[int],
                          constraints: list[Constraint], evaluator: Evaluator) -> list[Found]:
    """Under an event budget that binds: the critical-chain search without the budget from
    the fastest candidate (over it, `over_budget_fastest`, with at most 1 / FREE_RATIO times
    the budget's events) for FREE_SHARE of --time-limit, its best brought within the budget
    by the merge ladder. The search within the budget moves a task or a branch at a time and
    stays within it at every step, so the plans a budget a little below the fastest plan's
    events admits lie out of its reach: the ResNet-50 training step under GE's rules and the
    parallel options (its fastest plan 260 events at 4155.7 us) ran 5723.9 us within 206
    events, 4868.0 us with this start (--time-limit 10). The search without the budget trims
    the events its start needs (301 -> 282), so the ladder merges fewer streams."""
    budget = evaluator.options.event_budget
    over = over_budget_fastest(candidates, outcomes, budget)
    if over is None or budget is None or budget < FREE_RATIO * over[1].events:
        return []
    start = over[0]
    free = replace(evaluator, options=msgspec.structs.replace(evaluator.options,
                                                              event_budget=None))
    bests = sped_up(graph, dag, *start, constraints=constraints, evaluator=free,
                    share=FREE_SHARE)
    return laddered(dag, bests[-1] if bests else start, durations, evaluator,
                    guard=rule_guard(graph, dag, constraints))


def faster_chains(graph: Graph, dag: TaskDag, found: Search, *,
                  constraints: list[Constraint], evaluator: Evaluator) -> Search:
    """Under full concurrency, the makespan objective's critical-chain search from `found`'s
    streams (Nimble's chains, or CP-SAT's), every move keeping each stream a chain: its last
    best, phase `+critical` (`+reordered` in an order of its own). Inception v1 under free
    rules: 325.8 -> 316.1 us at --time-limit 10, with the same 54 events."""
    if unordered_neighbours(dag, found.chains) is not None:  # ge mode's streams: a fallback
        return found
    evaluator = replace(evaluator, orders=Orders.of(graph))
    bests = sped_up(graph, dag, found.chains, found.order, constraints=constraints,
                    evaluator=evaluator, chains_only=True)
    if not bests:
        return found
    chains, order = bests[-1]
    return replace(found, chains=chains, order=order,
                   phase=found.phase + "+critical" + ("+reordered" if order else ""))
