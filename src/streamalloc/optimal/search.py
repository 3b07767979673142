"""The search of the optimal mode, phase by phase: plans at the bounds before any search
(`at_bounds`: one stream, the baseline's streams, the exact matching of Nimble's setting;
`aside_first`: a heavy engine's nodes beside the rest, in orders that batch their waits),
CP-SAT on the chain model (`chain_model`), under the makespan objective the emulated search
from the fastest start (`makespan_search`), the polish on the exact event count (`polishing`)
and the choice of the plan to write (`fewest_events`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from streamalloc.ir.graph import Graph
from streamalloc.optimal.aside_first import aside_first
from streamalloc.optimal.at_bounds import at_floor, unsearched
from streamalloc.optimal.chain_model import solved, windowed
from streamalloc.optimal.evaluate import Measured, Outcome
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.fewest_events import chosen
from streamalloc.optimal.found import Chains, Found, Search
from streamalloc.optimal.makespan_search import faster_chains, fastest_plan
from streamalloc.optimal.model_input import (
    full_start,
    main_stream_limit,
    solve_input,
    stream_capacity,
    task_durations,
    within_pair_limit,
)
from streamalloc.optimal.options import MAX_SOLVER_NODES, TIME_SCALE, OptimalOptions
from streamalloc.optimal.order import Order, Orders
from streamalloc.optimal.polishing import polish_both_ways
from streamalloc.rules.constraints import Constraint
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import SolveInput, Unsolvable

MAKESPAN_SOLVER_SHARE = 0.05  # of --time-limit for CP-SAT under the makespan objective and
# full concurrency (under `ge` the emulated search alone decides: `chain_model.unsolved`)


@dataclass(frozen=True)
class _Run:
    """What the phases after the model share: the graph, its DAG and rules, the probe, the
    events bound, the main stream limit, the outcomes already run and the orders batching
    waits already found (`aside_first`)."""

    graph: Graph
    dag: TaskDag
    constraints: list[Constraint]
    evaluator: Evaluator
    events_floor: int | None
    stream_limit: int
    measured: dict[Found, Measured | None]
    batched: dict[Chains, list[Found]]


def search(graph: Graph, dag: TaskDag, baseline: Outcome, constraints: list[Constraint], *,
           options: OptimalOptions, costs: CostTable, events_floor: int | None = None,
           nimble: tuple[tuple[tuple[int, ...], ...], bool] | None = None) -> Search:
    """Without a search where that is exact (`unsearched`); otherwise CP-SAT's model. Then,
    under `ge` concurrency: for the makespan objective the fastest emulated plan among the
    candidates (CP-SAT's, Nimble's chains, one stream per engine, the list schedule and its
    patient variant, each also with its prologue on side streams) improved by the
    critical-chain search, the fastest of its successive bests, their streams numbered by
    first node or critical first (`optimal/numbering.py`); for both objectives the polish on
    the exact event count, and under the events objective the fewest events, then the
    fastest, of the polished streams, them and the baseline's streams in orders that batch
    their waits, and one stream with its prologue aside (`chosen`). Under the makespan
    objective and full concurrency, the critical-chain search within chains last. `nimble`:
    under full concurrency Nimble's chains (`nimble.fewest_streams`), the plan where they fit,
    else, within the rules (`full_start`, once: with stream labels it is a min-cost flow of
    its own), the model's start."""
    capacity = stream_capacity(graph)
    stream_limit = main_stream_limit(graph, baseline)
    if options.objective == "makespan":
        options = within_pair_limit(graph, dag, options)
    evaluator = Evaluator(graph, dag, baseline, options, costs)
    measured: dict[Found, Measured | None] = {}
    unmodelled = options.concurrency == "full" and dag.size > MAX_SOLVER_NODES  # whole, the
    # model takes gigabytes: Nimble's chains, within the rules, are the plan
    full = None if options.concurrency != "full" or nimble is None else full_start(
        graph, dag, nimble[0], constraints, stream_limit=stream_limit,
        durations=task_durations(graph, dag, costs))
    exact = unsearched(graph, dag, constraints, evaluator, capacity=capacity,
                       stream_limit=stream_limit, events_floor=events_floor, nimble=nimble,
                       full=full, measured=measured, searched=not unmodelled)
    if exact is not None:
        return _within_chains(graph, dag, exact, constraints, evaluator)
    if unmodelled:
        raise Unsolvable(f"under --concurrency full Nimble's chains do not fit the stream "
                         f"limit{' within the rules' if constraints else ''}, and the "
                         f"model is not solved above {MAX_SOLVER_NODES} streamed nodes")
    run = _Run(graph, dag, constraints, evaluator, events_floor, stream_limit, measured, {})
    early = aside_first(graph, dag, constraints, evaluator, events_floor=events_floor,
                        measured=run.measured, batched=run.batched)
    if early is not None:
        return early
    data = solve_input(graph, dag, baseline, capacity, options=options, costs=costs,
                       constraints=constraints, full=full)
    share = MAKESPAN_SOLVER_SHARE if options.objective == "makespan" else 1.0
    found, earlier = solved(graph, data, constraints, time_limit=options.time_limit * share,
                            options=options, proven=partial(at_floor, evaluator,
                                                            events_floor=events_floor))
    hint = tuple(tuple(c) for c in data.hint)
    modelled = Search(
        found.chains or hint, found.status, found.objective if found.chains else None,
        found.bound if found.chains else None, found.deterministic_time,
        ("windows" if windowed(dag, options) else "cp-sat") if found.chains else "hint")
    if options.concurrency == "ge":
        spare = max(0.0, options.time_limit * share - found.deterministic_time) \
            if options.objective == "events" else 0.0  # what CP-SAT left of its time
        modelled = _finished(run, modelled, earlier, hint=hint, data=data, spare=spare)
    return _within_chains(graph, dag, replace(
        modelled, deterministic_time=round(modelled.deterministic_time, 3)), constraints,
        evaluator)


def _within_chains(graph: Graph, dag: TaskDag, found: Search, constraints: list[Constraint],
                   evaluator: Evaluator) -> Search:
    """`found`, under the makespan objective and full concurrency improved by the
    critical-chain search with every stream kept a chain."""
    options = evaluator.options
    if options.concurrency == "full" and options.objective == "makespan":
        return faster_chains(graph, dag, found, constraints=constraints, evaluator=evaluator)
    return found


def _finished(run: _Run, modelled: Search, earlier: tuple[tuple[tuple[int, ...], ...], ...],
              *, hint: tuple[tuple[int, ...], ...], data: SolveInput, spare: float
              ) -> Search:
    """Under `ge` concurrency, from the model's streams (`modelled`; `earlier`: those its
    first solve found when a second replaced them): under the makespan objective the
    fastest plan (`fastest_plan`), then the polish of each start and the choice of the plan
    (`chosen`), its streams numbered, its status OPTIMAL where it reaches the events bound."""
    evaluator, chains, order = run.evaluator, modelled.chains, None
    options, phase = evaluator.options, modelled.phase
    deterministic = modelled.deterministic_time
    limit = evaluator.limit()
    if options.objective == "makespan":
        (chains, order), evaluator, limit, packing_time, segments = fastest_plan(
            run.graph, run.dag, chains, hint=hint, data=data, constraints=run.constraints,
            evaluator=evaluator, stream_limit=run.stream_limit)
        deterministic += packing_time
        phase += "+fastest+critical" + ("+segments" if segments else "") \
            + ("+reordered" if order is not None else "")
    polished = [p for start in (chains, *earlier)
                for p in polish_both_ways(run.graph, run.dag, start, order,
                                          constraints=run.constraints, evaluator=evaluator,
                                          limit=limit, spare=spare)]
    # what the driver requires of the plan: as few events as the baseline and as fast
    # (x slack) for the events objective; the makespan objective's start is its bar
    most, within_us = (evaluator.baseline.events, evaluator.limit_us()) \
        if options.objective == "events" else (options.event_budget, limit / TIME_SCALE)
    # the makespan objective's start stays a candidate: the polish counts events in T-order,
    # so in the start's own order (a training step's large tasks grouped) its streams may need
    # more than the budget (the ResNet-50 step, budget 42: the start's 42 became 45, and the
    # plan fell back to ge mode's 159)
    kept = [(chains, order)] if options.objective == "makespan" else []
    best, made, events = chosen(run.graph, run.dag, [(p, order) for p in polished] + kept,
                                (hint, order), constraints=run.constraints,
                                evaluator=evaluator, limit=limit, spare=spare,
                                within_us=within_us, most=most, durations=data.durations,
                                measured=run.measured, batched=run.batched)
    if best not in kept or best[0] in polished:
        phase = made if made and not made.startswith("+") else phase + (made or "+polish")
    status, objective, bound = modelled.status, modelled.objective, modelled.bound
    if modelled.phase != "hint" and not phase.startswith(("cp-sat", "windows")):  # the
        status, objective, bound = "FEASIBLE", None, None  # model's figures are not the plan's
    chains, order = evaluator.numbering(best[0]), best[1]
    if status != "OPTIMAL" and events is not None and _at_floor(run, evaluator, chains, order,
                                                                 events):
        status, objective, bound = "OPTIMAL", None, None  # proven by the bounds, not by
        # the model
    return Search(chains, status, objective, bound, deterministic, phase, order)


def _at_floor(run: _Run, evaluator: Evaluator, chains: tuple[tuple[int, ...], ...],
              order: Order | None, events: int) -> bool:
    """Do the plan's `events` reach the events bound, within the limits (`at_floor`, in the
    graph's orders when the plan has its own)?"""
    if run.events_floor is None or events > run.events_floor:
        return False
    probe = evaluator if order is None else replace(evaluator, orders=Orders.of(run.graph))
    return at_floor(probe, chains, order, events_floor=run.events_floor)
