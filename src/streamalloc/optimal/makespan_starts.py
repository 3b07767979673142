"""The makespan objective's starting points: CP-SAT's streams, Nimble's chains, one stream
per engine, the list schedules, each also with its prologue aside; CP-SAT's packings; each
heavy engine beside the rest, also in orders that batch its waits. Each is repaired within the
rules and the stream limit and emulated; the fastest comes first."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import Measured, assignment_of, breaks
from streamalloc.optimal.evaluator import Evaluator, measured_outcome, plan_evaluation_count
from streamalloc.optimal.fewest_events import (
    WAITS_NODES,
    engines_aside,
    fewest_or_grouped,
    orders_batching_waits,
)
from streamalloc.optimal.found import Found
from streamalloc.optimal.list_schedule import list_schedule_chains, list_schedule_in_order
from streamalloc.optimal.nimble import matching_chains
from streamalloc.optimal.options import TIME_SCALE
from streamalloc.optimal.order import Order, Orders
from streamalloc.optimal.packing import packing, streams_of_packing
from streamalloc.optimal.prologue import with_prologues
from streamalloc.optimal.repair import within_rules, within_stream_limit
from streamalloc.rules.constraints import Constraint
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.limits import limits_of

ASIDE_BATCHED = 1  # the fastest assignments of `aside_starts` also tried in the orders that
# batch their waits: on five training steps (BERT base, DenseNet-121, GPT-2 small, Llama tiny,
# ResNet-50) the fastest in the graph's order always gave the fastest batched order, and
# batching all 13 cost up to 8 s more (DenseNet-121) for the same plans
Kinded = tuple[str, Found]  # a start and its kind, one of START_KINDS

START_KINDS = ("list", "packed", "hint", "aside", "prologue", "nimble", "engine")  # the order
# `affordable` runs them in where not all fit: the kind of the fastest start on the 18 inputs
# of bench/ (free rules) was a list schedule on 9, a packing on 6, ge mode's streams on 5
# (ties), a prologue variant on GE dump 00026; under GE's rules on training steps, an aside
STARTS_SHARE = 0.5  # of --time-limit in evaluations for the starts' runs, or STARTS_SECONDS
STARTS_SECONDS = 5.0  # when more (below, a short limit would cut the starts of a small graph,
# such as the events objective's plan that a training step's event budget needs), and at
MIN_STARTS = 4  # least this many runs: a 100k-node layered graph's 28 distinct starts took
# 137 s at --time-limit 10, where its search had 45 s
PACKING_ROUNDS = 2  # CP-SAT's packings of the tasks on the engines' units (makespan starts),
PACKING_SHARE = 0.05  # each with this share of --time-limit. On the 18 inputs of bench/: T5
# 2062 -> 2009 us, ResNet-50 809 -> 807, the others unchanged. Three rounds of 0.1 did no
# better for more wall time; the serial schedule alone (or in the second round) left
# Inception v2 at 729 or 727 us instead of 722
PACKING_MOST = 0.5  # deterministic s each at most (the share at the default --time-limit):
# a longer limit then keeps the same starts and only searches longer from the fastest, so it
# is never slower on the 18 inputs of bench/ (at 30: four faster, none slower); with the share
# alone GPT-2 small ran 1737.6 us at 30 against 1726.5 at 10, its longer packing a worse start
PACKING_SOLVER_NODES = 2000  # streamed nodes; above, the serial schedule alone (a 10k-node
# layered graph: CP-SAT took 15.9 s of wall time for 0.32 deterministic s, its serial hint 0.15
# s, and found nothing shorter)


def _patience(costs: CostTable) -> float:
    """How long the patient list schedule waits for its producer's stream: what an event on
    the edge costs instead (record and wait latency, its Send and its Recv), and a launch."""
    return 2 * (costs.event_record_us + costs.event_wait_us) + costs.launch_us


def _candidates(graph: Graph, dag: TaskDag) -> list[tuple[tuple[int, ...], ...]]:
    """Starting points for the makespan objective: Nimble's chains (only ordered nodes share
    a stream: the most parallel plan) and one stream per graph and engine."""
    per_engine: dict[tuple[str, str], list[int]] = {}
    for v, name in enumerate(dag.names):
        per_engine.setdefault((dag.graphs[v], graph.node(name).engine), []).append(v)
    return [matching_chains(dag), tuple(tuple(c) for c in per_engine.values())]


def makespan_starts(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                    durations: Sequence[int], evaluator: Evaluator) -> list[Kinded]:
    """The makespan objective's starting points, each with its kind: `chains` (the model's,
    "hint": ge mode's streams, as CP-SAT is not solved), `_candidates`, the list schedules,
    and each of them with its prologue on side streams (`optimal/prologue.py`; the variants
    that run it in runs of layers need their own execution order, so they start from the
    candidates in T-order, and only where the search may order)."""
    nimble, per_engine = _candidates(graph, dag)
    kinded: list[Kinded] = [("hint", (chains, None)), ("nimble", (nimble, None)),
                            ("engine", (per_engine, None))]
    kinded += [("list", found)
               for found in _list_schedules(graph, dag, evaluator.costs, evaluator.orders)]
    found = [start for _, start in kinded]
    return kinded + [("prologue", variant) for variant in
                     with_prologues(dag, found, durations, evaluator.orders)[len(found):]]


def affordable(graph: Graph, dag: TaskDag, starts: list[Kinded],
               constraints: list[Constraint], evaluator: Evaluator) -> list[Found]:
    """The starts whose runs fit STARTS_SHARE of --time-limit, or STARTS_SECONDS, in
    evaluations (as many as ge mode's plan takes; at least MIN_STARTS), each in its place:
    every one on the bench's inputs, whose runs take milliseconds. Where fewer fit, one start
    of each kind in the order of START_KINDS, then a second of each, and so on; the same start
    twice, or one that breaks a rule or a device limit (not run), costs nothing."""
    seconds = max(evaluator.options.time_limit * STARTS_SHARE, STARTS_SECONDS)
    count = max(MIN_STARTS, plan_evaluation_count(evaluator.baseline.plan, seconds))
    if len({found for _, found in starts}) <= count:  # (the rule checks are
        return [found for _, found in starts]  # `outcomes_of`'s then, not made twice)
    runnable: dict[Found, str] = {}
    for kind, found in starts:
        if found not in runnable and not breaks(graph, dag, constraints,
                                                assignment_of(dag, found[0])):
            runnable[found] = kind
    if len(runnable) <= count:
        return [found for _, found in starts]
    by_kind = {kind: [found for found, of in runnable.items() if of == kind]
               for kind in START_KINDS}
    ranked = [found for round_ in itertools.zip_longest(*by_kind.values())
              for found in round_ if found is not None]
    kept = set(ranked[:count])
    return [found for _, found in starts if found in kept or found not in runnable]


def aside_starts(graph: Graph, dag: TaskDag, evaluator: Evaluator,
                 constraints: list[Constraint], measured: dict[Found, Measured | None]
                 ) -> list[Found]:
    """Each heavy engine's nodes beside the rest (`fewest_events.engines_aside`: a training
    step's AllReduces beside its compute) and, where the search may order (up to WAITS_NODES
    streamed nodes), the ASIDE_BATCHED fastest of them in the orders that batch their waits,
    or under an event budget all of them so and the events objective's plan among them
    (`_fewest_asides`); the outcomes run go into `measured`."""
    times = [evaluator.tasks[name][1] for name in dag.names]
    asides: list[Found] = [(chains, None) for chains in engines_aside(graph, dag, times)]
    if evaluator.orders is None or dag.size > WAITS_NODES:
        return asides
    if evaluator.options.event_budget is not None:
        return asides + _fewest_asides(graph, dag, asides, evaluator, constraints=constraints,
                                       times=times, measured=measured)
    outcomes = outcomes_of(graph, dag, asides, constraints, evaluator, measured=measured)
    ranked = sorted((o.makespan_us, k) for k, o in enumerate(outcomes) if o is not None)
    fastest = [asides[k] for _, k in ranked[:ASIDE_BATCHED]]
    return asides + orders_batching_waits(dag, fastest, evaluator, times, measured)


def _fewest_asides(graph: Graph, dag: TaskDag, asides: list[Found], evaluator: Evaluator, *,
                   constraints: list[Constraint], times: Sequence[float],
                   measured: dict[Found, Measured | None]) -> list[Found]:
    """`asides` in the orders that batch their waits and, of those, what the events objective
    tries before its search (`aside_first`): the fewest events within ge mode's makespan x
    (1 + slack), their large tasks grouped where that needs fewer. The fewest events of a
    training step come from there, and neither the polish nor the merge ladder reaches them
    from the other starts: the ResNet-50 step under the parallel options within a budget of
    42 (the events objective's plan, 7022.8 us) fell back to ge mode's 159 events."""
    batched = orders_batching_waits(dag, asides, evaluator, times, measured)
    found = fewest_or_grouped(graph, dag, batched, evaluator, measured,
                              within_us=evaluator.limit_us(), most=evaluator.baseline.events,
                              constraints=constraints)
    return batched + ([] if found is None else [found[0]])  # (grouped: `enough` is -1)


def packed_starts(graph: Graph, dag: TaskDag, evaluator: Evaluator) -> tuple[list[Found], float]:
    """Streams from CP-SAT's packings (`optimal/packing.py`; above PACKING_SOLVER_NODES the
    serial schedules), run in the packing's order where the search may order, and CP-SAT's
    deterministic time for them. The first packing ignores sync; the next one delays each
    dependency that the streams before it put on two streams by an event's record and wait,
    so it packs with the sync those streams pay."""
    options, costs, orders = evaluator.options, evaluator.costs, evaluator.orders
    tasks = [evaluator.tasks[name] for name in dag.names]
    latency = math.ceil((costs.event_record_us + costs.event_wait_us) * TIME_SCALE)
    found: list[Found] = []
    delays: dict[tuple[int, int], int] = {}
    spent = 0.0
    share = PACKING_SHARE if dag.size <= PACKING_SOLVER_NODES else 0.0
    for _ in range(PACKING_ROUNDS):
        packed = packing(dag, tasks, costs, time_limit=min(options.time_limit * share,
                                                           PACKING_MOST),
                         seed=options.seed, delays=delays)
        spent += packed.deterministic_time
        dealt = streams_of_packing(dag, packed, limits_of(graph).max_streams,
                                   in_t_order=orders is None)
        if dealt is None:
            break
        chains, sequence = dealt
        found.append((chains, None if orders is None
                      else orders.following([dag.names[v] for v in sequence])))
        streams = assignment_of(dag, chains)
        delays = {(u, v): latency for u, v in dag.reduction if streams[u] != streams[v]}
    return found, spent


def _list_schedules(graph: Graph, dag: TaskDag, costs: CostTable, orders: Orders | None
                    ) -> list[Found]:
    """The list schedule and its patient variant; when the search may order, also both with
    streams that take any idle task, run in the order the schedule placed them."""
    max_streams = limits_of(graph).max_streams
    found: list[Found] = []
    for patience in (0.0, _patience(costs)):
        found.append((list_schedule_chains(graph, dag, costs, max_streams, patience), None))
    if orders is not None:
        for patience in (0.0, _patience(costs)):
            chains, placed = list_schedule_in_order(graph, dag, costs, max_streams, patience)
            found.append((chains, orders.following([dag.names[v] for v in placed])))
    return found


def repaired(graph: Graph, dag: TaskDag, start: Found, constraints: list[Constraint],
             durations: Sequence[int], *, stream_limit: int) -> Found:
    """`start` with nodes moved and streams merged within the rules, then within the
    device's stream limit (`optimal/repair.py`); as it is when they cannot be (the rules or
    the limit then reject it)."""
    chains, order = start
    repaired = within_rules(graph, dag, chains, constraints, durations)
    limited = None if repaired is None else within_stream_limit(
        graph, dag, repaired, limit=stream_limit, constraints=constraints, durations=durations)
    return start if limited is None else (limited, order)


def outcomes_of(graph: Graph, dag: TaskDag, candidates: list[Found],
                constraints: list[Constraint], evaluator: Evaluator, *,
                measured: dict[Found, Measured | None] | None = None) -> list[Measured | None]:
    """Each candidate's emulated outcome (`measured`: those already run, and where
    those run here go); None where it breaks a rule or a device limit."""
    known: dict[Found, Measured | None] = {} if measured is None else measured
    return [None if breaks(graph, dag, constraints, assignment_of(dag, chains))
            else measured_outcome(evaluator, known, (chains, order))
            for chains, order in candidates]


def fastest(candidates: list[Found], outcomes: list[Measured | None], evaluator: Evaluator
            ) -> tuple[tuple[tuple[int, ...], ...], Order | None, int]:
    """The candidate with the shortest emulated makespan (its outcome given; within the event
    budget), and that makespan as the polish's bound."""
    found = fastest_distinct(candidates, outcomes, evaluator)
    if not found:
        return *candidates[0], evaluator.limit()
    return *found[0][1], found[0][0]


def fastest_distinct(candidates: list[Found], outcomes: list[Measured | None],
                     evaluator: Evaluator) -> list[tuple[int, Found]]:
    """The candidates within the event budget, fastest first, one per emulated makespan (the
    first in `candidates` of those that run as long), with that makespan in schedule units."""
    budget = evaluator.options.event_budget
    best: dict[int, tuple[int, Found]] = {}
    for k, (found, outcome) in enumerate(zip(candidates, outcomes, strict=True)):
        if outcome is None or (budget is not None and outcome.events > budget):
            continue
        best.setdefault(math.ceil(outcome.makespan_us * TIME_SCALE), (k, found))
    return [(makespan, found) for makespan, (_, found) in sorted(best.items())]
