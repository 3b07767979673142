"""The events objective's choice of the plan to write: the fewest events, then the fastest,
of the polished streams, one stream with its prologue aside, and assignments in orders that
batch their waits (`optimal/waits.py`); the chosen one with its large tasks grouped and its
waits for one stream merged where that needs fewer events (`optimal/merged_waits.py`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from streamalloc.ir.graph import Graph
from streamalloc.optimal.chain_model import windowed
from streamalloc.optimal.evaluate import Measured, assignment_of, breaks, chains_of_assignment
from streamalloc.optimal.evaluator import Evaluator, measured_outcome
from streamalloc.optimal.filled import rebalanced
from streamalloc.optimal.found import Chains, Found
from streamalloc.optimal.merged_waits import arrangement, merged
from streamalloc.optimal.options import EPS_US
from streamalloc.optimal.order import Orders
from streamalloc.optimal.polishing import polish_streams
from streamalloc.optimal.prologue import serial_prologues
from streamalloc.optimal.waits import Assignment, latest_starts, waits_batched
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag

WAITS_SLACK = (1.0, 0.25, -0.5)  # shares of what the first run left of the makespan limit
# that the runs batching waits may spend (`orders_batching_waits`): on the training steps under the
# parallel options the fewest events came at 1.0 (the 12-layer transformer, the T5 and
# ResNet-50 steps' AllReduces aside) and 0.25 (GPT-2 small's polished streams, 67 events); a
# negative share tightens the latest starts where the first run is over the limit
ASIDE_SHARE = 0.1  # of the task time: the engines whose nodes the orders batching waits try on
# a stream beside one of the rest (ResNet-50 training step under the parallel options: AI Core
# 28%, HCCL 72%, AI CPU and GE-local less than 5%; trying all four cost the T5 small step 8 s)
ASIDE_FOLLOWED = (0.25, 1.0)  # shares of an engine's nodes (first in T-order) whose followers
# join them aside (`engines_aside`). Training steps under the parallel options, the
# AllReduces aside in orders batching waits: ResNet-50 at slack 0, 49 events with none
# following, 47 with the first quarter's (0.5: 48; all: 44 at 10.30 ms, over ge mode's
# 10.15, fine at slack 5%); GPT-2 small 64 -> 63; the 12-layer transformer at slack 5% 29 -> 27
ASIDE_LEADS = range(1, 10)  # tenths of an engine's nodes (first in T-order) put aside with
# every node after them, its later nodes left with the others: the first AllReduces and their
# updates beside the rest of the backward pass, which runs the last AllReduces itself. Training
# steps under the parallel options at slack 0, in orders batching waits: ResNet-50 47 -> 45
# events, GPT-2 small 63 -> 60, BERT base 69 -> 68, the 12- and 48-layer transformers 28 -> 27
# and 109 -> 105
GROUPED_SPAN = 3  # events above the fewest: the candidates also tried with each stream's large
REBALANCED_CANDIDATES = 4  # grouped and filled runs (the fewest events, then the fastest) whose
# last large tasks `rebalanced` moves (the ResNet-50 step: 42 events at 7.0 ms, 7.3 from the best)
GROUPED_TRIES = 48  # tasks back to back (`_grouped`), at most this many, the fastest first
# (the ResNet-50 training step under the parallel options: a candidate with 47 events at 7091
# us needs 43 so, where the fewest, 45 at 9796 us, need 43 at the same time; so the runs at
# larger slacks find it too. The GPT-2 small step: its best, 60 events, stays; 61 need 59)
WAITS_NODES = 5000  # streamed nodes; above, no orders batching waits: on a 100k-node layered
# graph their runs took 10.8 s and the plans 1.4 s each, for no fewer events


def chosen(graph: Graph, dag: TaskDag, polished: list[Found], hint: Found, *,
           constraints: list[Constraint], evaluator: Evaluator, limit: int, spare: float,
           within_us: float, most: int | None, durations: Sequence[int],
           measured: dict[Found, Measured | None] | None = None,
           batched: dict[Chains, list[Found]] | None = None
           ) -> tuple[Found, str | None, int | None]:
    """The plan to write: the fewest events, then the fastest, within `within_us` and `most`
    events, of the polished streams and, under the events objective (not in windows, where a
    run costs seconds), of every node on one stream and that stream with its prologue on side
    streams (`serial_prologues`) where they hold the rules: no events but the stream's
    splits and one per prologue layer or run, and the prologue off the critical path (T5
    small under the parallel options: 2 events at 2263 us in runs of three layers, where the
    model's streams polished ran 3 at 2280); up to WAITS_NODES streamed nodes also of the
    polished and the baseline's streams in the orders that batch their waits (the ResNet-50
    training step under the parallel options: 98 -> 49 events); that plan with its large
    tasks grouped (`grouped_near`) and its waits merged (`merged_waits.merged`) where that
    needs fewer events; and the phase that made it (None: the polish of the search's
    streams; one that starts with "+": the search's phase followed by it), and its events
    where they were measured. `measured` and `batched`: the
    outcomes and orders batching waits found before (`aside_first`)."""
    candidates = list(polished)
    waited: list[Found] = []
    hinted: list[Found] = []
    aside: list[Found] = []
    measured = {} if measured is None else measured
    batched = {} if batched is None else batched
    if evaluator.options.objective == "events" and (
            dag.size <= WAITS_NODES or not windowed(dag, evaluator.options)):
        evaluator = replace(evaluator, orders=Orders.of(graph))
        if not windowed(dag, evaluator.options):
            candidates += [(chains, order) for chains, order
                           in serial_prologues(dag, durations, evaluator.orders)
                           if not breaks(graph, dag, constraints, assignment_of(dag, chains))]
        if dag.size <= WAITS_NODES:
            times = [evaluator.tasks[name][1] for name in dag.names]
            waited = orders_batching_waits(dag, polished, evaluator, times, measured,
                                           batched=batched)
            hinted = orders_batching_waits(dag, [hint], evaluator, times, measured,
                                           batched=batched)
            aside = orders_batching_waits(dag, [(chains, None) for chains
                                          in engines_aside(graph, dag, times)
                                          if not breaks(graph, dag, constraints,
                                                        assignment_of(dag, chains))],
                                          evaluator, times, measured, batched=batched)
            candidates += waited + hinted + aside
    # an assignment found twice (the polish kept the baseline's streams) is run once; its
    # phase is the first list's
    unique = list(dict.fromkeys(candidates))
    best = fewest_events(dag, unique, evaluator, within_us=within_us, most=most,
                         measured=measured)
    if best is None:  # none runs within the limit (the model's schedule only estimates the
        # emulated run: a cost table of wide kernels), or with as few events as the baseline
        # (the model counts split pairs). The baseline's streams do, and so do they polished.
        streams, order = hint
        return (polish_streams(graph, dag, streams, order, constraints=constraints,
                               evaluator=evaluator, limit=limit, spare=spare), order), \
            "hint+polish", None
    outcome = measured[best]
    events = None if outcome is None else outcome.events
    made = _made(best, polished, waited, hinted, aside)
    if evaluator.options.objective == "events" and dag.size <= WAITS_NODES \
            and events is not None:
        better = grouped_near(graph, dag, unique, evaluator, measured, within_us=within_us,
                              most=most, events=events, constraints=constraints)
        if better is not None:
            source, best, events = better
            made = (_made(source, polished, waited, hinted, aside) or "+polish") + "+grouped"
        again = None if evaluator.orders is None else merged(
            graph, dag, best, evaluator, measured, within_us=within_us, most=most)
        if again is not None:
            (best, outcome), made = again, (made or "+polish") + "+merged"
            events = outcome.events
    return best, made, events


def _made(best: Found, polished: list[Found], batched: list[Found], hinted: list[Found],
          aside: list[Found]) -> str | None:
    """The phase that made `best` (None: the polish of the search's streams; one that starts
    with "+": the search's phase followed by it)."""
    if best in polished:
        return None
    if best in batched:
        return "+polish+waits"
    if best in hinted:
        return "hint+waits"
    if best in aside:
        return "one-stream+engine+waits"
    return "one-stream+prologue" + ("+reordered" if best[1] is not None else "")


def grouped_near(graph: Graph, dag: TaskDag, candidates: list[Found], evaluator: Evaluator,
                 measured: dict[Found, Measured | None], *, within_us: float, most: int | None,
                 events: int, constraints: list[Constraint]) -> tuple[Found, Found, int] | None:
    """`_grouped` over the GROUPED_TRIES fastest `candidates` (their outcomes `measured`)
    within `within_us`, `most` events and GROUPED_SPAN of the fewest, `events`."""
    ranked = sorted((o.makespan_us, k) for k, found in enumerate(candidates)
                    if (o := measured.get(found)) is not None
                    and o.makespan_us <= within_us + EPS_US
                    and o.events <= events + GROUPED_SPAN
                    and (most is None or o.events <= most))
    near = [candidates[k] for _, k in ranked]
    return _grouped(graph, dag, near[:GROUPED_TRIES], evaluator, measured, within_us=within_us,
                    fewer_than=events, constraints=constraints)


def fewest_or_grouped(graph: Graph, dag: TaskDag, candidates: list[Found],
                      evaluator: Evaluator, measured: dict[Found, Measured | None], *,
                      within_us: float, most: int | None, constraints: list[Constraint],
                      enough: int = -1) -> tuple[Found, bool] | None:
    """Of `candidates`, the fewest events, then the fastest, within `within_us` and `most`
    (`fewest_events`); where that needs more than `enough` events, the arrangement of the
    candidates near it with their large tasks grouped that needs fewer (`grouped_near`)
    instead; with whether it is that. None when no candidate runs within the limits, or
    when the grouping is needed and none needs fewer."""
    best = fewest_events(dag, candidates, evaluator, within_us=within_us, most=most,
                         measured=measured)
    if best is None or (outcome := measured[best]) is None:
        return None
    if outcome.events <= enough:
        return best, False
    better = grouped_near(graph, dag, candidates, evaluator, measured, within_us=within_us,
                          most=most, events=outcome.events, constraints=constraints)
    return None if better is None else (better[1], True)


def _grouped(graph: Graph, dag: TaskDag, near: list[Found], evaluator: Evaluator,
             measured: dict[Found, Measured | None], *, within_us: float, fewer_than: int,
             constraints: list[Constraint]) -> tuple[Found, Found, int] | None:
    """Of `near` (candidates that run within `within_us`) in the order that runs each
    stream's large tasks back to back (`optimal/grouped.py`) with small tasks in the room
    their physical streams leave (`optimal/filled.py`), and of the REBALANCED_CANDIDATES
    best of those with their last large tasks on another stream (`rebalanced`), the one with
    the fewest events, then the fastest, where it needs fewer than `fewer_than`: the
    candidate, it in that order and its events; else None. The outcomes go into
    `measured`: the choice after the search groups the plans at the bounds again."""
    orders = evaluator.orders
    arranged = None if orders is None else arrangement(graph, dag, orders)
    if orders is None or arranged is None:
        return None
    runs: list[tuple[int, float, Found, Found]] = []
    for chains, order in near:
        streams = assignment_of(dag, chains)
        start = order if order is not None else orders.start
        moved = arranged(streams, start)
        if moved == start:
            continue
        scored = _scored(evaluator, measured, (chains, order), (chains, moved),
                         within_us=within_us)
        if scored is not None:
            runs.append(scored)
    runs.sort(key=lambda run: run[:2])
    for _, _, source, (chains, shown) in runs[:REBALANCED_CANDIDATES]:
        start = source[1] if source[1] is not None else orders.start
        moves = rebalanced(dag, assignment_of(dag, chains), shown or start, arranged.units,
                           capacity=arranged.capacity, large=arranged.large)
        # (a move may part the nodes a rule keeps together)
        for streams in filter(lambda s: not breaks(graph, dag, constraints, s), moves):
            again = (chains_of_assignment(streams), arranged(streams, start))
            scored = _scored(evaluator, measured, source, again, within_us=within_us)
            if scored is not None:
                runs.append(scored)
    best = min(runs, key=lambda run: run[:2], default=None)
    if best is None or best[0] >= fewer_than:
        return None
    return best[2], best[3], best[0]


def _scored(evaluator: Evaluator, measured: dict[Found, Measured | None], source: Found,
            found: Found, *, within_us: float) -> tuple[int, float, Found, Found] | None:
    """(events, makespan, `source`, `found`) of `found`'s plan (made from `source`), or None
    over `within_us` or a device limit."""
    outcome = measured_outcome(evaluator, measured, found)
    if outcome is None or outcome.makespan_us > within_us + EPS_US:
        return None
    return outcome.events, outcome.makespan_us, source, found


def engines_aside(graph: Graph, dag: TaskDag, times: Sequence[float]
                  ) -> list[tuple[tuple[int, ...], ...]]:
    """For each engine with at least ASIDE_SHARE of the task time, its nodes on one stream and
    the others on another (the AllReduces of a training step beside its compute), then its
    nodes with every node after its first ASIDE_FOLLOWED shares of them (the updates behind
    those AllReduces: no event back to the compute), then its first ASIDE_LEADS tenths of them
    with every node after them (its later nodes stay on the other stream), each unless that
    is every node; none for a model with subgraphs or a single engine."""
    if len(set(dag.graphs)) > 1:  # a stream stays in its graph
        return []
    engines = [graph.node(name).engine for name in dag.names]
    work: dict[str | None, float] = {}
    for engine, time in zip(engines, times, strict=True):
        work[engine] = work.get(engine, 0.0) + time
    total = sum(work.values())
    result = []
    for heavy, spent in work.items():
        if len(work) < 2 or spent < ASIDE_SHARE * total:
            continue
        own = [e == heavy for e in engines]
        result.append(chains_of_assignment([int(a) for a in own]))
        mine = [v for v in range(dag.size) if own[v]]
        for share in ASIDE_FOLLOWED:
            after = dag.reached_from(mine[:math.ceil(share * len(mine))])
            aside = [a or b for a, b in zip(own, after, strict=True)]
            if not all(aside):
                result.append(chains_of_assignment([int(a) for a in aside]))
        for tenths in ASIDE_LEADS:
            aside = dag.reached_from(mine[:-(-tenths * len(mine) // 10)])
            if not all(aside):
                result.append(chains_of_assignment([int(a) for a in aside]))
    return list(dict.fromkeys(result))



def orders_batching_waits(dag: TaskDag, found: list[Found], evaluator: Evaluator,
                          times: Sequence[float], measured: dict[Found, Measured | None], *,
                          batched: dict[Chains, list[Found]] | None = None) -> list[Found]:
    """Each distinct assignment of `found` in the orders that batch its streams' waits
    (`optimal/waits.py`): a first run without latest starts, then runs that wait while
    WAITS_SLACK shares of what the first left of the makespan limit last; each with the most
    urgent node first and in T-order (`times`: the emulator's task time of each node). The
    first runs' outcomes go into `measured`; `batched`: each assignment's orders found before
    with the same evaluator and times, where those found here go (the choice after the
    search meets `aside_first`'s assignments again: on the DenseNet-121 training step their
    simulations were half of 232)."""
    orders = evaluator.orders
    if orders is None:
        return []
    latency = evaluator.costs.event_record_us + evaluator.costs.event_wait_us
    batched = {} if batched is None else batched
    result: list[Found] = []
    for chains in dict.fromkeys(chains for chains, _ in found):
        if chains not in batched:
            streams = Assignment(dag, assignment_of(dag, chains), times, latency)
            batched[chains] = _batched(chains, streams, orders, evaluator, measured)
        result += batched[chains]
    return list(dict.fromkeys(result))


def _batched(chains: Chains, streams: Assignment, orders: Orders, evaluator: Evaluator,
             measured: dict[Found, Measured | None]) -> list[Found]:
    """`chains` (whose `streams` the simulation runs) in the orders `orders_batching_waits`
    describes."""
    dag = streams.dag
    result: list[Found] = []
    for urgent_first in (True, False):
        first = waits_batched(streams, urgent_first=urgent_first)
        order = orders.following([dag.names[v] for v in first.placed])
        result.append((chains, order))
        outcome = measured_outcome(evaluator, measured, (chains, order))
        if outcome is None:
            continue
        left = evaluator.limit_us() - outcome.makespan_us
        for share in WAITS_SLACK:
            latest = latest_starts(streams, first, first.makespan + share * left)
            run = waits_batched(streams, urgent_first=urgent_first, latest=latest)
            result.append((chains, orders.following([dag.names[v] for v in run.placed])))
    return list(dict.fromkeys(result))


def fewest_events(dag: TaskDag, candidates: list[Found], evaluator: Evaluator, *,
                  within_us: float, most: int | None,
                  measured: dict[Found, Measured | None] | None = None) -> Found | None:
    """Of the streams whose plan (each in its order) runs within `within_us` and the device
    limits, with at most `most` events if given, those that need the fewest events, then run
    fastest (the first on a tie); None if none does. `measured`: outcomes already known, and
    where those measured here go."""
    scored = []
    measured = {} if measured is None else measured
    for k, found in enumerate(candidates):
        outcome = measured_outcome(evaluator, measured, found)
        if outcome is not None and outcome.makespan_us <= within_us + EPS_US \
                and (most is None or outcome.events <= most):
            scored.append((outcome.events, outcome.makespan_us, k))
    return candidates[min(scored)[2]] if scored else None
