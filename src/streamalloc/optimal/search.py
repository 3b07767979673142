"""The search of the optimal mode: CP-SAT's model (or the exact matching of Nimble's setting),
then the polish on the exact event count."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial

import msgspec

from streamalloc.allocation import Allocation
from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.ir.graph import Graph
from streamalloc.optimal.critical import improvements
from streamalloc.optimal.evaluate import (
    Outcome,
    assignment_of,
    breaks,
    chains_of_assignment,
    evaluate,
    matching_chains,
    optimal_allocation,
)
from streamalloc.optimal.ladder import merge_ladder
from streamalloc.optimal.list_schedule import list_schedule_chains, list_schedule_in_order
from streamalloc.optimal.numbering import Numbering, by_first_node, critical_first
from streamalloc.optimal.options import (
    CAPACITY_SHARE,
    EPS_US,
    FREE,
    POLISH_NODES_PER_SECOND,
    POLISH_PER_SECOND,
    TIME_SCALE,
    OptimalOptions,
    makespan_limit_us,
)
from streamalloc.optimal.order import Order, Orders
from streamalloc.optimal.packing import packing, streams_of_packing
from streamalloc.optimal.prologue import prologue_variants
from streamalloc.optimal.repair import within_rules, within_stream_limit
from streamalloc.optimal.waits import Assignment, latest_starts, waits_batched
from streamalloc.rules import RuleSet
from streamalloc.rules.constraints import (
    AttachedStreams,
    Constraint,
    DedicatedStream,
    StreamCap,
    constraint_nodes,
)
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.program import NodeTask, graph_node_tasks
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.solver.bound import MAX_NODES as BOUND_MAX_NODES
from streamalloc.solver.bound import relaxation_size, relaxed_bound, slot_count
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length
from streamalloc.solver.model import SolveInput, SolveOutput, build, hint_objective, solve
from streamalloc.solver.polish import Polish, polish, remembered
from streamalloc.solver.rules import add_rules
from streamalloc.solver.windows import windowed_solve
from streamalloc.sync.driver import synchronize
from streamalloc.sync.limits import limits_of, without_device_limits
from streamalloc.sync.tasks import own_units

WHOLE_PLAN = (StreamCap, DedicatedStream, AttachedStreams)  # rule forms a move of a node
# they do not name can break: it can leave a member the opener of its stream (a stream's opener
# is its first node), join a dedicated stream, or make an attached stream a main one
EVALUATION_US = 800  # wall time of one evaluation of the makespan search (sync, emulate)
TASK_US = 17  # plus this per task of its program: the fit of the medians on the 18 inputs of
# bench/ (1-35 ms each, 2-core machine, 2026-12), x 0.8 since the node tasks are computed once
# per search (the median evaluation of those inputs, old and new code in one run); the
# searches' budgets are counts derived from it, not clocks, so their plans are deterministic
CRITICAL_SHARE = 0.8  # of --time-limit for the critical-chain search
FULLER_SHARE = 0.4  # for its second run under an event budget, from the start that uses it
MAKESPAN_POLISH_SHARE = 1.0  # for the polish after it: it counts tried moves, most of them
# rejected on the event count unevaluated (0.1-6.6 s at --time-limit 10); less loses time on
# T5 and the training step, where its moves also shorten the run
CHAIN_SHARE = 0.3  # of CP-SAT's time for the chain model where the relaxation's bound may
BOUND_SHARE = 0.6  # follow (`_solved`), for that bound, and for the chain model from its streams
RESOLVE_SHARE = 0.1  # (which proves at once when they reach the bound)
RELAXATION_CLAUSES = 100_000  # per second of --time-limit: the largest relaxation stated
# (`solver.bound.relaxation_size`). Llama tiny states 20k clauses, GE dump 00026 70k: their
# proofs run from --time-limit 1 on. A SqueezeNet training step (parallel options), whose chain
# model found many split pairs, 1.8 million on 267 slots: 11 s of wall time at --time-limit 1
# (17.6 s with presolve) for no bound; 1.9 s without it, the same plan
ROUND_SHARE = 0.2  # of CP-SAT's time for each round of the chain model under the events
# objective (`_solved_in_rounds`); the polish gets what the rounds leave. Without presolve each
# round starts from its hint; with it, CP-SAT found nothing on GPT-2, T5 or the ResNet-50
# training step within 2 s, and only the hint within 13
WINDOWED_ABOVE = 2000  # streamed nodes: larger graphs' models are solved window by window
# (`solver.windows`): whole, a 3k-node layered graph's model took 296 s and 4.9 GB at
# --time-limit 10 (CP-SAT's first solution from the hint grows faster than its size)
PACKING_ROUNDS = 2  # CP-SAT's packings of the tasks on the engines' units (makespan starts),
PACKING_SHARE = 0.05  # each with this share of --time-limit. On the 18 inputs of bench/: T5
# 2062 -> 2009 us, ResNet-50 809 -> 807, the others unchanged. Three rounds of 0.1 did no
# better for more wall time; the serial schedule alone (or in the second round) left
# Inception v2 at 729 or 727 us instead of 722
PACKING_SOLVER_NODES = 2000  # streamed nodes; above, the serial schedule alone (a 10k-node
# layered graph: CP-SAT took 15.9 s of wall time for 0.32 deterministic s, its serial hint 0.15
# s, and found nothing shorter)
BUDGET_SHARE = 1.0  # of --time-limit for each start polished down to the event budget
GAP_TRIES = 8  # or, when more, this many tried moves per event it is over the budget
LADDER_SHARE = 0.2  # of --time-limit in evaluations for the merge ladder down to the budget,
LADDER_TRIES = 6  # or, when more, this many per stream of its start up to LADDER_STREAMS (a
LADDER_STREAMS = 32  # step emulates two merges and ranks the others, the last one bisects)
BUDGET_STRETCH = (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0, None)  # the schedule estimates the
# polish down to the budget allows in turn, x the start's (None: any)
MAKESPAN_SOLVER_SHARE = 0.05  # for CP-SAT under the makespan objective: its model only
# estimates the emulated makespan (on none of the 18 inputs of bench/ did its streams start
# the search); the emulated search gets the time
MAKESPAN_SOLVER_NODES = 2000  # streamed nodes; above, the makespan objective (under `ge`
# concurrency) does not solve that model, whole, at all: at --time-limit 10 a 10k-node layered
# graph took 46 s and 4.6 GB with it, 21 s and 0.7 GB without, the 48-layer transformer
# training step 18 s and 0.7 GB against 15 s and 0.3 GB, a 3k-node layered graph (limit 2) 1.3
# against 0.3 GB; each the same plan

WAITS_SLACK = (1.0, 0.25, -0.5)  # shares of what the first run left of the makespan limit
# that the runs batching waits may spend (`_waits_batched`): on the training steps under the
# parallel options the fewest events came at 1.0 (the 12-layer transformer, the T5 and
# ResNet-50 steps' AllReduces aside) and 0.25 (GPT-2 small's polished streams, 67 events); a
# negative share tightens the latest starts where the first run is over the limit

ASIDE_SHARE = 0.1  # of the task time: the engines whose nodes the orders batching waits try on
# a stream beside one of the rest (ResNet-50 training step under the parallel options: AI Core
# 28%, HCCL 72%, AI CPU and GE-local less than 5%; trying all four cost the T5 small step 8 s)
ASIDE_FOLLOWED = (0.25, 1.0)  # shares of an engine's nodes (first in T-order) whose followers
# join them aside (`_engines_aside`). Training steps under the parallel options, the
# AllReduces aside in orders batching waits: ResNet-50 at slack 0, 49 events with none
# following, 47 with the first quarter's (0.5: 48; all: 44 at 10.30 ms, over ge mode's
# 10.15, fine at slack 5%); GPT-2 small 64 -> 63; the 12-layer transformer at slack 5% 29 -> 27
WAITS_NODES = 5000  # streamed nodes; above, no orders batching waits: on a 100k-node layered
# graph their runs took 10.8 s and the plans 1.4 s each, for no fewer events

Found = tuple[tuple[tuple[int, ...], ...], Order | None]  # streams; execution order (None: the
# graph's)


@dataclass(frozen=True)
class Search:
    """The streams found, CP-SAT's report on its model, and which phases made them."""

    chains: tuple[tuple[int, ...], ...]
    status: str
    objective: float | None
    bound: float | None
    deterministic_time: float
    phase: str
    order: Order | None = None  # the execution order, when it is not the graph's


def search(graph: Graph, dag: TaskDag, baseline: Outcome, constraints: list[Constraint], *,
           options: OptimalOptions, costs: CostTable, events_floor: int | None = None
           ) -> Search:
    """Without a search where that is exact (`_unsearched`); otherwise CP-SAT's model. Then,
    under `ge` concurrency: for the makespan objective the fastest emulated plan among the
    candidates (CP-SAT's, Nimble's chains, one stream per engine, the list schedule and its
    patient variant, each also with its prologue on side streams) improved by the
    critical-chain search, the fastest of its successive bests, their streams numbered by
    first node or critical first (`optimal/numbering.py`); for both objectives the polish on
    the exact event count, and under the events objective the fewest events, then the
    fastest, of the polished streams, them and the baseline's streams in orders that batch
    their waits, and one stream with its prologue aside (`_chosen`)."""
    capacity = _capacity(graph)
    stream_limit = _stream_limit(graph, baseline)
    if options.objective == "makespan":
        options = _within_pair_limit(graph, dag, options)
    evaluator = Evaluator(graph, dag, baseline, options, costs)
    exact = _unsearched(graph, dag, constraints, evaluator, capacity=capacity,
                        stream_limit=stream_limit, events_floor=events_floor)
    if exact is not None:
        return exact
    data = _solve_input(graph, dag, baseline, capacity, options=options, costs=costs,
                        constraints=constraints)
    share = MAKESPAN_SOLVER_SHARE if options.objective == "makespan" else 1.0
    found, earlier = _solved(graph, data, constraints, time_limit=options.time_limit * share,
                             options=options, proven=partial(_at_floor, evaluator,
                                                             events_floor=events_floor))
    hint = tuple(tuple(c) for c in data.hint)
    chains = found.chains or hint
    phase = ("windows" if windowed(dag, options) else "cp-sat") if found.chains else "hint"
    deterministic = found.deterministic_time
    status, objective, bound = (found.status, found.objective, found.bound) if found.chains \
        else (found.status, None, None)
    order: Order | None = None
    if options.concurrency == "ge":
        limit = evaluator.limit()
        if options.objective == "makespan":
            evaluator = replace(evaluator, orders=Orders.of(graph))
            packed, packing_time = _packed(graph, dag, evaluator)
            deterministic += packing_time
            starts = [_repaired(graph, dag, start, constraints, data.durations,
                                stream_limit=stream_limit)
                      for start in _starts(graph, dag, chains, data.durations, evaluator)
                      + packed]
            outcomes = _outcomes(graph, dag, starts, constraints, evaluator)
            more = _within_budget(graph, dag, starts, outcomes,
                                  hint=(hint, None), durations=data.durations,
                                  stream_limit=stream_limit, constraints=constraints,
                                  evaluator=evaluator)
            candidates = starts + more
            measured = outcomes + _outcomes(graph, dag, more, constraints, evaluator)
            chains, order, limit = _fastest(candidates, measured, evaluator)
            bests = _sped_up(graph, dag, chains, order, constraints=constraints,
                             evaluator=evaluator)
            fuller = _fullest(candidates, measured, evaluator.options.event_budget)
            if fuller is not None and fuller != (chains, order):
                bests += [fuller, *_sped_up(graph, dag, *fuller, constraints=constraints,
                                            evaluator=evaluator, share=FULLER_SHARE)]
            chains, order, evaluator, limit = _numbered(
                dag, [(chains, order), *bests], limit,
                [evaluator, replace(evaluator, numbering=critical_first(dag, data.durations))])
            if limit > evaluator.limit() and options.event_budget is not None:
                chains, order, limit = _within_bar(graph, dag, hint, constraints, evaluator) \
                    or (chains, order, limit)
            phase += "+fastest+critical" + ("+reordered" if order is not None else "")
        spare = max(0.0, options.time_limit * share - found.deterministic_time) \
            if options.objective == "events" else 0.0  # what CP-SAT left of its time
        polished = [p for start in (chains, *earlier)
                    for p in _polished_both_ways(graph, dag, start, order,
                                                 constraints=constraints, evaluator=evaluator,
                                                 limit=limit, spare=spare)]
        # what the driver requires of the plan: as few events as the baseline and as fast
        # (x slack) for the events objective; the makespan objective's start is its bar
        most, within_us = (baseline.events, evaluator.limit_us()) \
            if options.objective == "events" else (options.event_budget, limit / TIME_SCALE)
        best, made, events = _chosen(graph, dag, [(p, order) for p in polished], (hint, order),
                             constraints=constraints, evaluator=evaluator, limit=limit,
                             spare=spare, within_us=within_us, most=most,
                             durations=data.durations)
        phase = made if made and not made.startswith("+") else phase + (made or "+polish")
        if found.chains and not phase.startswith(("cp-sat", "windows")):  # the model's
            status, objective, bound = "FEASIBLE", None, None  # figures are not the plan's
        chains, order = evaluator.numbering(best[0]), best[1]
        if status != "OPTIMAL" and events is not None and events_floor is not None \
                and events <= events_floor and _at_floor(
                    evaluator if order is None else replace(evaluator,
                                                            orders=Orders.of(graph)),
                    chains, order, events_floor=events_floor):
            status, objective, bound = "OPTIMAL", None, None  # proven by the bounds, not
            # by the model
    return Search(chains, status, objective, bound, round(deterministic, 3), phase, order)


def _chosen(graph: Graph, dag: TaskDag, polished: list[Found], hint: Found, *,
            constraints: list[Constraint], evaluator: Evaluator, limit: int, spare: float,
            within_us: float, most: int | None, durations: Sequence[int]
            ) -> tuple[Found, str | None, int | None]:
    """The plan to write: the fewest events, then the fastest, within `within_us` and `most`
    events, of the polished streams and, under the events objective (not in windows, where a
    run costs seconds), of every node on one stream and that stream with its prologue on side
    streams (`_serial_prologues`) where they hold the rules: no events but the stream's
    splits and one per prologue layer or run, and the prologue off the critical path (T5
    small under the parallel options: 2 events at 2263 us in runs of three layers, where the
    model's streams polished ran 3 at 2280); up to WAITS_NODES streamed nodes also of the
    polished and the baseline's streams in the orders that batch their waits (the ResNet-50
    training step under the parallel options: 98 -> 49 events); and the phase that made it
    (None: the polish of the search's streams; one that starts with "+": the search's phase
    followed by it), and its events where they were measured."""
    candidates = list(polished)
    batched: list[Found] = []
    hinted: list[Found] = []
    aside: list[Found] = []
    measured: dict[Found, Outcome | None] = {}
    if evaluator.options.objective == "events" and (
            dag.size <= WAITS_NODES or not windowed(dag, evaluator.options)):
        evaluator = replace(evaluator, orders=Orders.of(graph))
        if not windowed(dag, evaluator.options):
            candidates += [(chains, order) for chains, order
                           in _serial_prologues(dag, durations, evaluator.orders)
                           if not breaks(graph, dag, constraints, assignment_of(dag, chains))]
        if dag.size <= WAITS_NODES:
            times = [evaluator.tasks[name][1] for name in dag.names]
            batched = _waits_batched(dag, polished, evaluator, times, measured)
            hinted = _waits_batched(dag, [hint], evaluator, times, measured)
            aside = _waits_batched(dag, [(chains, None) for chains
                                         in _engines_aside(graph, dag, times)
                                         if not breaks(graph, dag, constraints,
                                                       assignment_of(dag, chains))],
                                   evaluator, times, measured)
            candidates += batched + hinted + aside
    # an assignment found twice (the polish kept the baseline's streams) is run once; its
    # phase is the first list's
    best = _fewest_events(dag, list(dict.fromkeys(candidates)), evaluator,
                          within_us=within_us, most=most, measured=measured)
    if best is None:  # none runs within the limit (the model's schedule only estimates the
        # emulated run: a cost table of wide kernels), or with as few events as the baseline
        # (the model counts split pairs). The baseline's streams do, and so do they polished.
        streams, order = hint
        return (_polished(graph, dag, streams, order, constraints=constraints,
                          evaluator=evaluator, limit=limit, spare=spare), order), \
            "hint+polish", None
    outcome = measured[best]
    events = None if outcome is None else outcome.events
    if best in polished:
        return best, None, events
    if best in batched:
        return best, "+polish+waits", events
    if best in hinted:
        return best, "hint+waits", events
    if best in aside:
        return best, "one-stream+engine+waits", events
    return best, "one-stream+prologue" + ("+reordered" if best[1] is not None else ""), events


def _engines_aside(graph: Graph, dag: TaskDag, times: Sequence[float]
                   ) -> list[tuple[tuple[int, ...], ...]]:
    """For each engine with at least ASIDE_SHARE of the task time, its nodes on one stream and
    the others on another (the AllReduces of a training step beside its compute), then its
    nodes with every node after its first ASIDE_FOLLOWED shares of them (the updates behind
    those AllReduces: no event back to the compute) unless that is every node; none for a
    model with subgraphs or a single engine."""
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
            first = set(mine[:math.ceil(share * len(mine))])
            after = [False] * dag.size
            for v in range(dag.size):  # T-order: producers first
                after[v] = v in first or any(after[p] for p in dag.preds[v])
            aside = [a or b for a, b in zip(own, after, strict=True)]
            if not all(aside):
                result.append(chains_of_assignment([int(a) for a in aside]))
    return list(dict.fromkeys(result))


def _waits_batched(dag: TaskDag, found: list[Found], evaluator: Evaluator,
                   times: Sequence[float], measured: dict[Found, Outcome | None]
                   ) -> list[Found]:
    """Each distinct assignment of `found` in the orders that batch its streams' waits
    (`optimal/waits.py`): a first run without latest starts, then runs that wait while
    WAITS_SLACK shares of what the first left of the makespan limit last; each with the most
    urgent node first and in T-order (`times`: the emulator's task time of each node). The
    first runs' outcomes go into `measured`."""
    orders = evaluator.orders
    if orders is None:
        return []
    latency = evaluator.costs.event_record_us + evaluator.costs.event_wait_us
    result: list[Found] = []
    for chains in dict.fromkeys(chains for chains, _ in found):
        streams = Assignment(dag, assignment_of(dag, chains), times, latency)
        for urgent_first in (True, False):
            first = waits_batched(streams, urgent_first=urgent_first)
            order = orders.following([dag.names[v] for v in first.placed])
            result.append((chains, order))
            outcome = measured[(chains, order)] = evaluator.outcome(streams.streams, order)
            if outcome is None:
                continue
            left = evaluator.limit_us() - outcome.makespan_us
            for share in WAITS_SLACK:
                latest = latest_starts(streams, first, first.makespan + share * left)
                run = waits_batched(streams, urgent_first=urgent_first, latest=latest)
                result.append((chains, orders.following([dag.names[v] for v in run.placed])))
    return list(dict.fromkeys(result))


def _unsearched(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                evaluator: Evaluator, *, capacity: int | None, stream_limit: int,
                events_floor: int | None) -> Search | None:
    """The streams where no search can do better, or None: under full concurrency without
    rules or capacity, a maximum matching (exact) when its streams fit; under the events
    objective and `ge` concurrency, the first of one stream, the baseline's streams and (not
    in windows, where a run costs seconds) one stream with its prologue aside whose plan
    holds the rules and reaches the events bound `events_floor` and the streams bound
    (`_at_floor`): GE dump 00026 under the parallel options, whose baseline does, 21.6 -> 0.8
    s; T5 small, one stream with its prologue aside, 6.8 -> 0.7 s."""
    options = evaluator.options
    if options.concurrency == "full" and not constraints and capacity is None:
        matched = matching_chains(dag)
        if len(matched) <= stream_limit:  # else the model states the limit
            return Search(matched, "OPTIMAL", None, None, 0.0, "matching")
    if events_floor is None or options.objective != "events" or options.concurrency != "ge":
        return None
    one = _one_stream(graph, dag, constraints, evaluator, events_floor)
    if one is not None:
        return one
    hint = tuple(tuple(c) for c in _hint_chains(dag, evaluator.baseline.allocation))
    # (the baseline's own plan has its streams: over the bound, they need not be run)
    candidates: list[tuple[Found, str]] = [((hint, None), "hint")] \
        if evaluator.baseline.events <= events_floor else []
    if not windowed(dag, options):
        evaluator = replace(evaluator, orders=Orders.of(graph))
        # (the first of the serial prologues is every node on one stream, tried above)
        candidates += [(found, "one-stream+prologue" + ("+reordered" if found[1] else ""))
                       for found in _serial_prologues(dag, _durations(graph, dag,
                                                                      evaluator.costs),
                                                      evaluator.orders)[1:]]
    for (chains, order), phase in candidates:
        if len(chains) <= stream_limit \
                and not breaks(graph, dag, constraints, assignment_of(dag, chains)) \
                and _at_floor(evaluator, chains, order, events_floor=events_floor):
            return Search(evaluator.numbering(chains), "OPTIMAL", None, None, 0.0, phase,
                          order)
    return None


def _at_floor(evaluator: Evaluator, chains: tuple[tuple[int, ...], ...], order: Order | None,
              *, events_floor: int | None) -> bool:
    """Does the plan of `chains` (in `order`) run within the makespan and device limits with
    no more events than `events_floor` (the events bound), on no more logical streams than
    its tasks' time over the makespan limit asks for (a logical stream runs its tasks one at
    a time, its physical streams one after the other)? Then no plan has fewer events, nor as
    few on fewer streams. Only under the events objective and `ge` concurrency."""
    options = evaluator.options
    if events_floor is None or options.objective != "events" or options.concurrency != "ge":
        return False
    tasks, names, limit = evaluator.tasks, evaluator.dag.names, evaluator.limit_us()
    work = [sum(tasks[names[v]][1] for v in chain) for chain in chains]
    if max(work, default=0.0) > limit + EPS_US or (
            len(chains) > 1 and len(chains) > math.ceil(sum(work) / limit - 1e-9)):
        return False  # one stream too slow, or too many streams: known without a run
    outcome = evaluator.outcome(assignment_of(evaluator.dag, chains), order)
    return outcome is not None and outcome.events <= events_floor \
        and outcome.makespan_us <= evaluator.limit_us() + EPS_US


def _one_stream(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                evaluator: Evaluator, events_floor: int) -> Search | None:
    """Every node on one stream, when its plan holds the rules and runs within the makespan
    and device limits with no more events than `events_floor`: no plan has fewer events, nor
    fewer streams, so no search can improve it (status OPTIMAL without the model's figures).
    Where one stream runs fast enough, the model's capacity and schedule estimate can keep
    CP-SAT from it (BERT base under the parallel options: 1122 task units, which the split
    puts on two physical streams with one event; the polish found it after 7 s of CP-SAT)."""
    if len(set(dag.graphs)) > 1:  # a stream stays in its graph
        return None
    one = (tuple(range(dag.size)),)
    if breaks(graph, dag, constraints, [0] * dag.size) \
            or not _at_floor(evaluator, one, None, events_floor=events_floor):
        return None
    return Search(one, "OPTIMAL", None, None, 0.0, "one-stream")


def _solved(graph: Graph, data: SolveInput, constraints: list[Constraint], *,
            time_limit: float, options: OptimalOptions,
            proven: Callable[[tuple[tuple[int, ...], ...], Order | None], bool] | None = None
            ) -> tuple[SolveOutput, tuple[tuple[tuple[int, ...], ...], ...]]:
    """The chain model's streams: on a large graph window by window (`windowed`); none under
    the makespan objective above MAKESPAN_SOLVER_NODES (`ge` concurrency). Where it
    does not prove them optimal on a graph the slot relaxation can take (`solver.bound`),
    that relaxation's bound, and the chain model once more from the relaxation's streams when
    they hold the rules and the capacity and are better: started there with the bound stated,
    it proves them optimal at once. Second: the streams the first solve found when the second
    replaced them (the model counts split pairs, the plan events, so the polish starts from
    both)."""
    dag = data.dag
    if unsolved(dag, options):  # nothing found
        return SolveOutput((), "UNKNOWN", math.inf, 0.0, 0.0, 0), ()
    seed, workers = options.seed, options.workers
    if windowed(dag, options):
        caps: list[Constraint] = [c for c in constraints if isinstance(c, StreamCap)]
        return windowed_solve(data, constraints, time_limit=time_limit, broken=partial(
            breaks, graph, dag, caps), seed=seed, workers=workers), ()
    provable = data.objective == "events" and data.makespan_limit is not None \
        and dag.size <= BOUND_MAX_NODES
    if not provable:
        return _solved_in_rounds(data, constraints, time_limit=time_limit, seed=seed,
                                 workers=workers), ()
    found = _chain_solve(data, constraints, time_limit=time_limit * CHAIN_SHARE, seed=seed,
                         workers=workers)
    if found.status != "FEASIBLE" or (proven is not None and proven(found.chains, None)):
        return found, ()  # (proven: its plan reaches the events and streams bounds)
    assert data.makespan_limit is not None
    slots = slot_count(dag, found.split_pairs)
    if relaxation_size(dag, data.durations, data.makespan_limit, slots) \
            > RELAXATION_CLAUSES * time_limit:
        return found, ()  # the polish gets the time left
    relaxed = relaxed_bound(dag, data.durations, data.makespan_limit, slots,
                            time_limit=time_limit * BOUND_SHARE, seed=options.seed)
    spent = found.deterministic_time + relaxed.deterministic_time
    lower = math.ceil(max(found.bound, relaxed.bound) - 1e-6)
    best = found
    if relaxed.chains and _fits(graph, data, constraints, relaxed.chains):
        again = _chain_solve(replace(data, hint=relaxed.chains), constraints,
                             time_limit=time_limit * RESOLVE_SHARE, at_least=lower, seed=seed,
                             workers=workers)
        spent += again.deterministic_time
        if again.chains and again.objective < best.objective:
            best = again
    status = "OPTIMAL" if best.objective <= lower else best.status
    return replace(best, status=status, bound=float(max(lower, best.bound)),
                   deterministic_time=round(spent, 3)), () if best is found else (found.chains,)


def windowed(dag: TaskDag, options: OptimalOptions) -> bool:
    """Is the model solved window by window (`solver.windows`: the events objective under
    `ge` concurrency, whose schedule limit keeps each window's parallelism)?"""
    return dag.size > WINDOWED_ABOVE and options.objective == "events" \
        and options.concurrency == "ge"


def unsolved(dag: TaskDag, options: OptimalOptions) -> bool:
    """Is the model left unsolved (the makespan objective under `ge` concurrency above
    MAKESPAN_SOLVER_NODES: the emulated search alone)?"""
    return dag.size > MAKESPAN_SOLVER_NODES and options.objective == "makespan" \
        and options.concurrency == "ge"


def _fewest_events(dag: TaskDag, candidates: list[Found], evaluator: Evaluator, *,
                   within_us: float, most: int | None,
                   measured: dict[Found, Outcome | None] | None = None) -> Found | None:
    """Of the streams whose plan (each in its order) runs within `within_us` and the device
    limits, with at most `most` events if given, those that need the fewest events, then run
    fastest (the first on a tie); None if none does. `measured`: outcomes already known, and
    where those measured here go."""
    scored = []
    for k, (chains, order) in enumerate(candidates):
        if measured is not None and (chains, order) in measured:
            outcome = measured[(chains, order)]
        else:
            outcome = evaluator.outcome(assignment_of(dag, chains), order)
            if measured is not None:
                measured[(chains, order)] = outcome
        if outcome is not None and outcome.makespan_us <= within_us + EPS_US \
                and (most is None or outcome.events <= most):
            scored.append((outcome.events, outcome.makespan_us, k))
    return candidates[min(scored)[2]] if scored else None


def _chain_solve(data: SolveInput, constraints: list[Constraint], *, time_limit: float,
                 seed: int, workers: int, at_least: int | None = None,
                 presolve: bool = True) -> SolveOutput:
    """The chain model with the rules (and a known bound of its objective) solved."""
    model = build(data)
    add_rules(model, constraints, {n: i for i, n in enumerate(data.dag.names)})
    if at_least is not None:
        model.cp.add(model.objective >= at_least)
    return solve(model, time_limit=time_limit, seed=seed, workers=workers, presolve=presolve)


def _solved_in_rounds(data: SolveInput, constraints: list[Constraint], *, time_limit: float,
                      seed: int, workers: int) -> SolveOutput:
    """The chain model under the events objective (above BOUND_MAX_NODES; CP-SAT proves most
    smaller models at once) solved in rounds of ROUND_SHARE of `time_limit`, without presolve
    so that each starts from its hint: the first from the baseline's streams, each next one
    from the streams the last found. The rounds stop at a proof, at the first that makes no
    progress (nothing better than its hint) or at the limit. A hint over the event or stream
    limit is no start: CP-SAT then gets the whole limit to repair it."""
    at_hint = hint_objective(data)
    if data.objective != "events" or data.dag.size <= BOUND_MAX_NODES or at_hint is None:
        return _chain_solve(data, constraints, time_limit=time_limit, seed=seed,
                            workers=workers)
    best: SolveOutput | None = None
    spent, bound = 0.0, 0.0
    while spent < time_limit - 1e-9:
        found = _chain_solve(data, constraints, seed=seed, workers=workers, presolve=False,
                             time_limit=min(time_limit * ROUND_SHARE, time_limit - spent))
        spent += found.deterministic_time
        bound = max(bound, found.bound)
        progress = bool(found.chains) and found.objective < at_hint
        if best is None or progress or found.status in ("OPTIMAL", "INFEASIBLE"):
            best = found
        if not progress or found.status != "FEASIBLE":
            break
        at_hint = found.objective
        data = replace(data, hint=[list(c) for c in found.chains])
    assert best is not None
    return replace(best, bound=max(bound, best.bound), deterministic_time=round(spent, 3))


def _fits(graph: Graph, data: SolveInput, constraints: list[Constraint],
          chains: Sequence[Sequence[int]]) -> bool:
    """Do streams stay in one graph and hold the rules and the capacity (the relaxation knows
    none of these)?"""
    graphs = data.dag.graphs
    if any(graphs[v] != graphs[chain[0]] for chain in chains for v in chain):
        return False
    if data.capacity is not None and any(
            sum(data.units[v] for v in chain) > data.capacity for chain in chains):
        return False
    streams = assignment_of(data.dag, chains)
    return not breaks(graph, data.dag, constraints, streams)


@dataclass(frozen=True)
class Evaluator:
    """The verified, emulated plan of a stream assignment (makespan in schedule units), its
    streams numbered by `numbering`, synchronized in an execution order (`orders`: the search
    may change it; None: always the graph's T-order)."""

    graph: Graph
    dag: TaskDag
    baseline: Outcome
    options: OptimalOptions
    costs: CostTable
    numbering: Numbering = by_first_node
    orders: Orders | None = None

    @cached_property
    def tasks(self) -> dict[str, NodeTask]:
        """The graph's node tasks, computed once: the plans differ, the tasks do not."""
        return graph_node_tasks(self.graph, self.costs)

    @cached_property
    def lifted(self) -> Graph:
        """The graph without its stream, event and notify limits."""
        return without_device_limits(self.graph)

    def outcome(self, streams: Sequence[int], order: Order | None = None) -> Outcome | None:
        """None when the plan is over a device limit."""
        try:
            return evaluate(self.graph, self._allocation(streams), None, self.options.sync,
                            self.costs, in_order=self._in_order(order), tasks=self.tasks)
        except AllocationInfeasible:
            return None

    def makespan(self, streams: Sequence[int], order: Order | None = None) -> int:
        """Emulated makespan of the unverified run (infinite over the task capacity): the
        polish's probe, as `run` is the search's (the driver verifies the plan it writes).
        The polish only lowers the events and the streams, so the event budget and the
        device's stream, event and notify limits are checked on its result, not here: from a
        start over one it comes within step by step."""
        result = self.run(streams, order, budgeted=False, lifted=True)
        if result is None:
            return math.inf  # type: ignore[return-value]
        return math.ceil(result.makespan_us * TIME_SCALE)

    def run(self, streams: Sequence[int], order: Order | None = None, *,
            budgeted: bool = True, lifted: bool = False) -> EmulationResult | None:
        """The emulated run of an assignment's plan, unverified (the search's probe; None
        over a device limit or, when `budgeted`, over the makespan objective's event
        budget); `lifted`: with the stream, event and notify limits lifted."""
        budget = self.options.event_budget if budgeted else None
        graph = self._in_order(order)
        try:
            plan = synchronize(without_device_limits(graph) if lifted else graph,
                               self._allocation(streams), sync=self.options.sync)
            if budget is not None and plan.event_count + plan.notify_count > budget:
                return None
            return emulate(self.lifted if lifted else self.graph, plan.to_json(),
                           costs=self.costs, tasks=self.tasks)
        except AllocationInfeasible:
            return None

    def _allocation(self, streams: Sequence[int]) -> Allocation:
        return optimal_allocation(self.graph, self.baseline.allocation, self.dag,
                                  self.numbering(chains_of_assignment(streams)),
                                  rules=RuleSet(FREE, "static", ()), constraints=[])

    def _in_order(self, order: Order | None) -> Graph:
        """The graph in `order` (None: its own order)."""
        return self.graph if order is None or self.orders is None \
            else self.orders.graph_in(order)

    def limit(self) -> int:
        """The baseline's makespan x (1 + slack), in schedule units rounded down (the
        searches compare run lengths rounded up)."""
        return math.floor(self.limit_us() * TIME_SCALE)

    def limit_us(self) -> float:
        """The baseline's makespan x (1 + slack) in us, as the driver checks the plan."""
        return makespan_limit_us(self.baseline.makespan_us, self.options.makespan_slack)


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


def _starts(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
            durations: Sequence[int], evaluator: Evaluator) -> list[Found]:
    """The makespan objective's starting points: `chains` (CP-SAT's), `_candidates`, the list
    schedules, and each of them with its prologue on side streams (`optimal/prologue.py`; the
    variants that run it in runs of layers need their own execution order, so they start
    from the candidates in T-order, and only where the search may order)."""
    found: list[Found] = [(c, None) for c in (chains, *_candidates(graph, dag))]
    found += _list_schedules(graph, dag, evaluator.costs, evaluator.orders)
    return _with_prologues(dag, found, durations, evaluator.orders)


def _with_prologues(dag: TaskDag, found: list[Found], durations: Sequence[int],
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


def _packed(graph: Graph, dag: TaskDag, evaluator: Evaluator) -> tuple[list[Found], float]:
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
        packed = packing(dag, tasks, costs, time_limit=options.time_limit * share,
                         seed=options.seed, workers=options.workers, delays=delays)
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


def _repaired(graph: Graph, dag: TaskDag, start: Found, constraints: list[Constraint],
              durations: Sequence[int], *, stream_limit: int) -> Found:
    """`start` with nodes moved and streams merged within the rules, then within the
    device's stream limit (`optimal/repair.py`); as it is when they cannot be (the rules or
    the limit then reject it)."""
    chains, order = start
    repaired = within_rules(graph, dag, chains, constraints, durations)
    limited = None if repaired is None else within_stream_limit(
        graph, dag, repaired, limit=stream_limit, constraints=constraints, durations=durations)
    return start if limited is None else (limited, order)


def _outcomes(graph: Graph, dag: TaskDag, candidates: list[Found],
              constraints: list[Constraint], evaluator: Evaluator) -> list[Outcome | None]:
    """Each candidate's verified, emulated plan; None where it breaks a rule or a device
    limit."""
    found: list[Outcome | None] = []
    for chains, order in candidates:
        streams = assignment_of(dag, chains)
        if breaks(graph, dag, constraints, streams):
            found.append(None)
        else:
            found.append(evaluator.outcome(streams, order))
    return found


def _fastest(candidates: list[Found], outcomes: list[Outcome | None], evaluator: Evaluator
             ) -> tuple[tuple[tuple[int, ...], ...], Order | None, int]:
    """The candidate with the shortest emulated makespan (its outcome given; within the event
    budget), and that makespan as the polish's bound."""
    budget = evaluator.options.event_budget
    best: tuple[int, int, Found] | None = None
    for k, (found, outcome) in enumerate(zip(candidates, outcomes, strict=True)):
        if outcome is None or (budget is not None and outcome.events > budget):
            continue
        score = (math.ceil(outcome.makespan_us * TIME_SCALE), k)
        if best is None or score < best[:2]:
            best = (*score, found)
    if best is None:
        return *candidates[0], evaluator.limit()
    return *best[2], best[0]


def _within_budget(graph: Graph, dag: TaskDag, starts: list[Found],
                   outcomes: list[Outcome | None], *, hint: Found, durations: Sequence[int],
                   stream_limit: int, constraints: list[Constraint], evaluator: Evaluator
                   ) -> list[Found]:
    """More starts under the makespan objective's event budget (none without one): the
    baseline's streams and the fastest start (`outcomes`: the starts'; one over a device
    limit, measured with the limits lifted, counts as over the budget), when it is over the
    budget and faster than every start within it, each polished down to the budget
    (`_reduced`), the fastest also by merging whole streams (`optimal/ladder.py`); and one
    stream per graph (the fewest events), also with its prologue on side streams (repaired
    within the rules). The critical search then shortens the run within the budget."""
    budget = evaluator.options.event_budget
    if budget is None:
        return []
    over = [(o.makespan_us, k) for k, o in enumerate(outcomes) if o and o.events > budget]
    for k, (chains, order) in enumerate(starts):  # over a device limit: as over the budget
        if outcomes[k] is None and not breaks(graph, dag, constraints,
                                              streams := assignment_of(dag, chains)):
            probe = _lifted_run(evaluator, streams, order)
            if probe is not None and probe[0] > budget:
                over.append((probe[1], k))
    kept = min((o.makespan_us for o in outcomes if o and o.events <= budget), default=math.inf)
    fastest = [starts[min(over)[1]]] if over and min(over)[0] < kept else []
    guard = _rule_guard(graph, dag, constraints)
    found = []
    for chains, order in [hint, *fastest]:
        reduced = _reduced(dag, chains, order, durations, evaluator, guard=guard)
        found += [reduced] if reduced is not None else []
    for chains, order in fastest:
        streams = assignment_of(dag, chains)
        evaluations = max(_evaluations(evaluator, streams, evaluator.options.time_limit
                                       * LADDER_SHARE),
                          LADDER_TRIES * min(len(chains), LADDER_STREAMS))
        laddered = merge_ladder(dag, streams, budget=budget, allowed=guard,
                                probe=partial(_lifted_run, evaluator, order=order),
                                durations=durations, evaluations=evaluations)
        found += [] if laddered is None else [(chains_of_assignment(laddered), order)]
    return found + [_repaired(graph, dag, start, constraints, durations,
                              stream_limit=stream_limit)
                    for start in _serial_prologues(dag, durations, evaluator.orders)]


def _serial_prologues(dag: TaskDag, durations: Sequence[int], orders: Orders | None
                      ) -> list[Found]:
    """Every node on one stream per graph (the fewest events), then that stream with its
    prologue on side streams (`_with_prologues`)."""
    serial = tuple(tuple(v for v in range(dag.size) if dag.graphs[v] == g)
                   for g in dict.fromkeys(dag.graphs))
    return _with_prologues(dag, [(serial, None)], durations, orders)


def _reduced(dag: TaskDag, chains: tuple[tuple[int, ...], ...], order: Order | None,
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
                GAP_TRIES * (event_count(dag, streams) - budget))
    for stretch in BUDGET_STRETCH:
        limit = None if stretch is None else math.ceil(start * stretch)
        while tries > 0:
            step = Polish(dag, length, limit, guard, tries, streams, target, round_trips=False)
            streams, tries = step.run(), step.budget
            probe = _lifted_run(evaluator, streams, order)
            if probe is None:
                return None
            if probe[0] <= budget:
                return chains_of_assignment(streams), order
            if step.events > target:
                break  # none of the polish's moves fits this limit
            target -= probe[0] - budget
    return None


def _lifted_run(evaluator: Evaluator, streams: Sequence[int], order: Order | None
                ) -> tuple[int, float] | None:
    """The events (and notifies) and the emulated makespan of an assignment's plan with the
    device's stream, event and notify limits lifted (None over the task capacity): a plan
    over the event limit is polished down to the budget as one over the budget is."""
    result = evaluator.run(streams, order, budgeted=False, lifted=True)
    if result is None:
        return None
    return result.program.event_count + result.program.notify_count, result.makespan_us


def _within_bar(graph: Graph, dag: TaskDag, hint: tuple[tuple[int, ...], ...],
                constraints: list[Constraint], evaluator: Evaluator
                ) -> tuple[tuple[tuple[int, ...], ...], None, int] | None:
    """Under an event budget, when the fastest plan the search found within it is slower
    than ge mode's x (1 + slack): ge mode's streams with the events objective's polish (on
    the exact event count, each move's plan emulated within that bar, its whole budget of
    moves), when that brings them
    within the budget; with the plan's makespan. The ResNet-50 training step under the
    parallel options, budget 110, `--time-limit 2`: the search's best ran 11701 us, over ge
    mode's 10148, and the plan fell back; this polish gives 110 events at 10144 us."""
    chains = _polished(graph, dag, hint, None, constraints=constraints, evaluator=evaluator,
                       limit=evaluator.limit(), events_first=True)
    outcome = evaluator.outcome(assignment_of(dag, chains))
    budget = evaluator.options.event_budget
    if outcome is None or budget is None or outcome.events > budget:
        return None
    makespan = math.ceil(outcome.makespan_us * TIME_SCALE)
    return (chains, None, makespan) if makespan <= evaluator.limit() else None


def _fullest(candidates: list[Found], outcomes: list[Outcome | None], budget: int | None
             ) -> Found | None:
    """Under an event budget, the fastest candidate of those with the most events within
    it: the critical search moves only within the budget, so from the fastest candidate, when
    it has events to spare, a move that needs two more may be out of reach (the example
    training step under free rules and a budget of 1: from one stream and no event at 345.9
    us, no move fits; from a start with its one event, 325.9 us)."""
    if budget is None:
        return None
    scored = [(-o.events, o.makespan_us, k) for k, o in enumerate(outcomes)
              if o is not None and o.events <= budget]
    return candidates[min(scored)[2]] if scored else None


def _sped_up(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
             order: Order | None, *, constraints: list[Constraint], evaluator: Evaluator,
             share: float = CRITICAL_SHARE) -> list[Found]:
    """The critical-chain local search from the fastest candidate, in its order (moves that
    break a rule are not tried; the execution order changes when `evaluator.orders` allows),
    `share` of --time-limit in evaluations: the streams and orders (None: the graph's) that
    were its best when found, in that order."""
    guard = _rule_guard(graph, dag, constraints)
    start = assignment_of(dag, chains)

    def run(streams: Sequence[int], order: Order | None) -> EmulationResult | None:
        moved = [v for v in range(dag.size) if streams[v] != start[v]]
        return evaluator.run(streams, order) if guard(streams, moved) else None

    budget = _evaluations(evaluator, start, evaluator.options.time_limit * share)
    found = improvements(dag, start, run, budget, seed=evaluator.options.seed,
                         orders=evaluator.orders, order=order)
    own = evaluator.orders.start if evaluator.orders else None
    return [(chains_of_assignment(streams), None if order == own else order)
            for streams, order in found[1:]]


def _numbered(dag: TaskDag, found: list[Found], limit: int, evaluators: list[Evaluator]
              ) -> tuple[tuple[tuple[int, ...], ...], Order | None, Evaluator, int]:
    """The streams and order of `found` (the start, then the search's bests) and the
    numbering of their ids (`evaluators`, by first node first) that run fastest, verified and
    within the event budget, with that makespan; the start by first node when none is under
    `limit`.
    The search numbers by first node (numbered otherwise it takes other paths, longer on T5
    and a GE dump), so a best it found earlier may run faster numbered critical first; ties go
    to the latest found and the first numbering."""
    best = (*found[0], evaluators[0], limit)
    budget = evaluators[0].options.event_budget
    for chains, order in reversed(found):
        for evaluator in evaluators:
            outcome = evaluator.outcome(assignment_of(dag, chains), order)
            if outcome is None or (budget is not None and outcome.events > budget):
                continue
            makespan = math.ceil(outcome.makespan_us * TIME_SCALE)
            if makespan < best[3]:
                best = (chains, order, evaluator, makespan)
    return best


def _polished(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
              order: Order | None, *, constraints: list[Constraint], evaluator: Evaluator,
              limit: int, events_first: bool = False, spare: float = 0.0
              ) -> tuple[tuple[int, ...], ...]:
    """The polish on the exact event count (in execution order `order`); a move that needs
    fewer events is kept when the emulated makespan of its plan stays within `limit`
    (`events_first`: with the events objective's budget of moves under the makespan's). It
    tries moves for --time-limit and the `spare` seconds CP-SAT left; round trips under the
    events objective only (`Polish.round_trips`)."""
    streams = assignment_of(dag, chains)
    result = polish(dag, streams, length=partial(evaluator.makespan, order=order), limit=limit,
                    allowed=_rule_guard(graph, dag, constraints),
                    budget=_polish_budget(evaluator, streams, spare, events_first=events_first),
                    round_trips=evaluator.options.objective == "events")
    return chains_of_assignment(result)


def _polished_both_ways(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                        order: Order | None, *, constraints: list[Constraint],
                        evaluator: Evaluator, limit: int, spare: float
                        ) -> list[tuple[tuple[int, ...], ...]]:
    """`_polished`, and under the events objective, when it ends at a local optimum with
    tries left, the polish from the same start that visits the event edges last to first,
    with those tries: each greedy pass keeps the first move that helps, so the two end at
    different optima (the ResNet-50 training step at --time-limit 10: 105 -> 98 events)."""
    if evaluator.options.objective != "events":
        return [_polished(graph, dag, chains, order, constraints=constraints,
                          evaluator=evaluator, limit=limit, spare=spare)]
    streams = assignment_of(dag, chains)
    budget = _polish_budget(evaluator, streams, spare)
    length = remembered(partial(evaluator.makespan, order=order))  # shared by both passes
    found = []
    for reverse in (False, True):
        run = Polish(dag, length, limit,
                     _rule_guard(graph, dag, constraints), budget, list(streams),
                     reverse=reverse)
        found.append(chains_of_assignment(run.run()))
        budget = run.budget
        if budget <= 0:
            break
    return found


def _polish_budget(evaluator: Evaluator, streams: Sequence[int], spare: float, *,
                   events_first: bool = False) -> int:
    """The polish's tries: --time-limit and `spare` seconds, as many per second as the graph's
    size allows; under the makespan objective (unless `events_first`) at most the
    evaluations of MAKESPAN_POLISH_SHARE of --time-limit."""
    per_second = min(POLISH_PER_SECOND, POLISH_NODES_PER_SECOND / max(1, evaluator.dag.size))
    budget = max(1, int((evaluator.options.time_limit + spare) * per_second))
    if evaluator.options.objective == "makespan" and not events_first:  # events second
        budget = min(budget, _evaluations(evaluator, streams, evaluator.options.time_limit
                                          * MAKESPAN_POLISH_SHARE))
    return budget


def _evaluations(evaluator: Evaluator, streams: Sequence[int], seconds: float) -> int:
    """How many evaluations of plans like that of `streams` take about `seconds` of wall time
    (its program's tasks, Sends and Recvs included, decide the cost)."""
    result = evaluator.run(streams, budgeted=False)
    tasks = result.program.task_count() if result is not None else evaluator.dag.size
    return max(1, int(seconds * 1e6 / (EVALUATION_US + TASK_US * tasks)))


def _rule_guard(graph: Graph, dag: TaskDag, constraints: list[Constraint]
                ) -> Callable[[Sequence[int], Sequence[int]], bool]:
    """Do the constraints a move can break still hold: those naming a moved node, and on
    every move those that also depend on nodes they do not name (`WHOLE_PLAN`)?"""
    by_node: dict[int, list[Constraint]] = {}
    index = {n: i for i, n in enumerate(dag.names)}
    always = [c for c in constraints if isinstance(c, WHOLE_PLAN)]
    for c in constraints:
        for name in constraint_nodes(c):
            if name in index and not isinstance(c, WHOLE_PLAN):
                by_node.setdefault(index[name], []).append(c)

    def allowed(trial: Sequence[int], moved: Sequence[int]) -> bool:
        touched = always + list({id(c): c for w in moved for c in by_node.get(w, [])}.values())
        if not touched:
            return True
        return not breaks(graph, dag, touched, trial)

    return allowed


def _solve_input(graph: Graph, dag: TaskDag, baseline: Outcome, capacity: int | None, *,
                 options: OptimalOptions, costs: CostTable,
                 constraints: Sequence[Constraint] = ()) -> SolveInput:
    """The model's data; its hint is the baseline's streams, merged within the stream limit
    when ge mode's plan is over it (`within_stream_limit`, keeping `constraints`)."""
    durations = _durations(graph, dag, costs)
    stream_limit = _stream_limit(graph, baseline)
    given = _hint_chains(dag, baseline.allocation)
    hint = [list(c) for c in within_stream_limit(
        graph, dag, tuple(tuple(c) for c in given), limit=stream_limit,
        constraints=constraints, durations=durations) or given]
    limit = None
    if options.objective == "events" and options.concurrency == "ge":
        limit = math.ceil(schedule_length(dag, durations, assignment_of(dag, hint))
                          * (1 + options.makespan_slack / 100))
    units = [own_units(graph, graph.node(n)) for n in dag.names]
    if capacity is not None:  # the hint's streams must fit: GE's split may fill them more
        capacity = max([capacity] + [sum(units[v] for v in chain) for chain in hint])
    pairs = _pair_limit(graph)
    return SolveInput(dag=dag, units=units, durations=durations, capacity=capacity,
                      concurrency=options.concurrency, hint=hint, objective=options.objective,
                      makespan_limit=limit,
                      event_limit=pairs if options.event_budget is None
                      else min(pairs, options.event_budget),
                      stream_limit=stream_limit, window=options.window)


def _pair_limit(graph: Graph) -> int:
    """The device's limit on dependencies between streams: a dependency is a notify in
    notify mode (`ge.event: notify`), else an event."""
    device = limits_of(graph)
    return device.max_notifies if graph.option("ge.event") == "notify" else device.max_events


def _within_pair_limit(graph: Graph, dag: TaskDag, options: OptimalOptions) -> OptimalOptions:
    """The makespan objective's event budget, at most the device's event (or notify) limit
    where the graph has more dependencies than it may count: a start over the limit is then
    polished down to it, as one over a budget, instead of being rejected. The 12-layer
    transformer training step in notify mode under 150 notifies: 16.6 -> 7.6 ms at
    `--time-limit 5` (free rules, parallel options; 6.1 ms with 177 notifies, unlimited).
    The budget counts events and notifies together, so in notify mode it also counts the
    split's events: within it, the plan is within the limit."""
    pairs = _pair_limit(graph)
    if len(dag.reduction) <= pairs or (options.event_budget is not None
                                       and options.event_budget <= pairs):
        return options
    return msgspec.structs.replace(options, event_budget=pairs)


def _stream_limit(graph: Graph, baseline: Outcome) -> int:
    """The main streams a plan may use: the device's limit less the attached streams and the
    caller's stream, for which the runtime's pool keeps slot 0 (`runtime_emu.streams`)."""
    attached = baseline.allocation.total_stream_num - baseline.allocation.main_stream_num
    return max(1, limits_of(graph).max_streams - 1 - attached)


def _durations(graph: Graph, dag: TaskDag, costs: CostTable) -> list[int]:
    model = CostModel(graph, costs)
    launch = costs.launch_us
    return [max(1, round((model.kernel(graph.node(n))[0] + launch) * TIME_SCALE))
            for n in dag.names]


def _capacity(graph: Graph) -> int | None:
    if graph.option(UNLIMITED_DEPTH) == "true":
        return None
    return int((limits_of(graph).max_task_per_stream - RESERVED_UNITS) * CAPACITY_SHARE)


def _hint_chains(dag: TaskDag, allocation: Allocation) -> list[list[int]]:
    """The baseline's logical streams (they satisfy the rules) as chains in T-order."""
    chains: dict[int, list[int]] = {}
    for i, name in enumerate(dag.names):
        chains.setdefault(allocation.stream(name), []).append(i)
    return [c for _, c in sorted(chains.items())]


