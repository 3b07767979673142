"""CP-SAT on the chain model (`solver.model`): whole, in rounds, window by window, or with
the slot relaxation's bound (`solver.bound`) to prove its streams optimal."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import assignment_of, breaks
from streamalloc.optimal.options import OptimalOptions
from streamalloc.optimal.order import Order
from streamalloc.rules.constraints import Constraint, StreamCap
from streamalloc.solver.bound import MAX_NODES as BOUND_MAX_NODES
from streamalloc.solver.bound import relaxation_size, relaxed_bound, slot_count
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import SolveInput, build, hint_objective
from streamalloc.solver.rules import add_rules
from streamalloc.solver.run import SolveOutput, solve
from streamalloc.solver.windows import windowed_solve

CHAIN_SHARE = 0.3  # of CP-SAT's time for the chain model where the relaxation's bound may
BOUND_SHARE = 0.6  # follow (`solved`), for that bound, and for the chain model from its streams
RESOLVE_SHARE = 0.1  # (which proves at once when they reach the bound)
RELAXATION_CLAUSES = 100_000  # per second of --time-limit: the largest relaxation stated
# (`solver.bound.relaxation_size`). Llama tiny states 20k clauses, GE dump 00026 70k: their
# proofs run from --time-limit 1 on. A SqueezeNet training step (parallel options), whose chain
# model found many split pairs, 1.8 million on 267 slots: 11 s of wall time at --time-limit 1
# (17.6 s with presolve) for no bound; 1.9 s without it, the same plan
RELAXATION_MOST = 1_000_000  # clauses at any --time-limit: the SqueezeNet step's 1.8 million
# found no bound at 1 or 30 (18 deterministic s, 60 s of wall time of its 75), and its plan came
# from another phase at both, with the same events
ROUND_SHARE = 0.2  # of CP-SAT's time for each round of the chain model under the events
# objective (`solved_in_rounds`); the polish gets what the rounds leave. Without presolve each
# round starts from its hint; with it, CP-SAT found nothing on GPT-2, T5 or the ResNet-50
# training step within 2 s, and only the hint within 13
WINDOWED_ABOVE = 2000  # streamed nodes: larger graphs' models are solved window by window
# (`solver.windows`): whole, a 3k-node layered graph's model took 296 s and 4.9 GB at
# --time-limit 10 (CP-SAT's first solution from the hint grows faster than its size)


def solved(graph: Graph, data: SolveInput, constraints: list[Constraint], *,
           time_limit: float, options: OptimalOptions,
           proven: Callable[[tuple[tuple[int, ...], ...], Order | None], bool] | None = None
           ) -> tuple[SolveOutput, tuple[tuple[tuple[int, ...], ...], ...]]:
    """The chain model's streams: on a large graph window by window (`windowed`); none under
    the makespan objective and `ge` concurrency (`unsolved`). Where it
    does not prove them optimal on a graph the slot relaxation can take (`solver.bound`),
    that relaxation's bound, and the chain model once more from the relaxation's streams when
    they hold the rules and the capacity and are better: started there with the bound stated,
    it proves them optimal at once. Second: the streams the first solve found when the second
    replaced them (the model counts split pairs, the plan events, so the polish starts from
    both)."""
    dag = data.dag
    if unsolved(options):  # nothing found
        return SolveOutput((), "UNKNOWN", math.inf, 0.0, 0.0, 0), ()
    seed, workers = options.seed, options.workers
    if windowed(dag, options):
        caps: list[Constraint] = [c for c in constraints if isinstance(c, StreamCap)]
        return windowed_solve(data, constraints, time_limit=time_limit, broken=partial(
            breaks, graph, dag, caps), seed=seed, workers=workers), ()
    provable = data.objective == "events" and data.makespan_limit is not None \
        and dag.size <= BOUND_MAX_NODES
    if not provable:
        return solved_in_rounds(data, constraints, time_limit=time_limit, seed=seed,
                                workers=workers), ()
    found = chain_solve(data, constraints, time_limit=time_limit * CHAIN_SHARE, seed=seed,
                        workers=workers)
    if found.status != "FEASIBLE" or (proven is not None and proven(found.chains, None)):
        return found, ()  # (proven: its plan reaches the events and streams bounds)
    if _spans(dag, found.chains):  # the retry's model (`chain_solve`): the resolve's too
        data = replace(data, span_graphs=True)
    assert data.makespan_limit is not None
    slots = slot_count(dag, found.split_pairs)
    if relaxation_size(dag, data.durations, data.makespan_limit, slots) \
            > min(RELAXATION_CLAUSES * time_limit, RELAXATION_MOST):
        return found, ()  # the polish gets the time left
    relaxed = relaxed_bound(dag, data.durations, data.makespan_limit, slots,
                            time_limit=time_limit * BOUND_SHARE, seed=options.seed)
    spent = found.deterministic_time + relaxed.deterministic_time
    lower = math.ceil(max(found.bound, relaxed.bound) - 1e-6)
    best = found
    if relaxed.chains and _fits(graph, data, constraints, relaxed.chains):
        again = chain_solve(replace(data, hint=relaxed.chains), constraints,
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


def unsolved(options: OptimalOptions) -> bool:
    """Is the model left unsolved? Under the makespan objective and `ge` concurrency the
    emulated search decides, and the model's schedule only estimates the emulated run: on
    the 18 inputs of bench/ (free rules), 10 runs under GE's rules and 8 under event budgets
    at --time-limit 10, its streams never led to a faster plan (the same plans without it;
    GE dump 00026 under GE's rules 830.9 -> 826.0 us), while it cost 0.8-2.8 s of wall time
    per run (15.5 -> 13.8 s on the ResNet-50 training step), and whole on large graphs
    gigabytes (a 10k-node layered graph: 4.6 GB with it, 0.7 without)."""
    return options.objective == "makespan" and options.concurrency == "ge"


def chain_solve(data: SolveInput, constraints: list[Constraint], *, time_limit: float,
                seed: int, workers: int, at_least: int | None = None,
                presolve: bool = True) -> SolveOutput:
    """The chain model with the rules (and a known bound of its objective) solved; where it
    has no solution with each stream in one graph, solved again, in the time left, with
    streams that span graphs (`SolveInput.span_graphs`). Only then: that model is larger
    (each graph's engine caps over every node), and CP-SAT did worse in it where the model in
    one graph has solutions (a control-flow graph of 85 nodes in 13 graphs under GE's rules:
    5 events in 2 s where that model proves 2)."""
    model = build(data)
    add_rules(model, constraints, {n: i for i, n in enumerate(data.dag.names)})
    if at_least is not None:
        model.cp.add(model.objective >= at_least)
    found = solve(model, time_limit=time_limit, seed=seed, workers=workers, presolve=presolve)
    left = time_limit - found.deterministic_time
    if found.status != "INFEASIBLE" or data.span_graphs or len(set(data.dag.graphs)) == 1 \
            or left <= 0:
        return found
    spanning = chain_solve(replace(data, span_graphs=True), constraints, time_limit=left,
                           seed=seed, workers=workers, at_least=at_least, presolve=presolve)
    return replace(spanning, deterministic_time=round(
        found.deterministic_time + spanning.deterministic_time, 3))


def solved_in_rounds(data: SolveInput, constraints: list[Constraint], *, time_limit: float,
                     seed: int, workers: int) -> SolveOutput:
    """The chain model under the events objective (above BOUND_MAX_NODES; CP-SAT proves most
    smaller models at once) solved in rounds of ROUND_SHARE of `time_limit`, without presolve
    so that each starts from its hint: the first from the baseline's streams, each next one
    from the streams the last found. The rounds stop at a proof, at the first that makes no
    progress (nothing better than its hint) or at the limit. A hint over the event or stream
    limit is no start: CP-SAT then gets the whole limit to repair it."""
    at_hint = hint_objective(data)
    if data.objective != "events" or data.dag.size <= BOUND_MAX_NODES or at_hint is None:
        return chain_solve(data, constraints, time_limit=time_limit, seed=seed,
                           workers=workers)
    best: SolveOutput | None = None
    spent, bound = 0.0, 0.0
    while spent < time_limit - 1e-9:
        found = chain_solve(data, constraints, seed=seed, workers=workers, presolve=False,
                            time_limit=min(time_limit * ROUND_SHARE, time_limit - spent))
        spent += found.deterministic_time
        bound = max(bound, found.bound)
        progress = bool(found.chains) and found.objective < at_hint
        if best is None or progress or found.status in ("OPTIMAL", "INFEASIBLE"):
            best = found
        if not progress or found.status != "FEASIBLE":
            break
        at_hint = found.objective
        data = replace(data, hint=[list(c) for c in found.chains],
                       span_graphs=data.span_graphs or _spans(data.dag, found.chains))
    assert best is not None
    return replace(best, bound=max(bound, best.bound), deterministic_time=round(spent, 3))


def _fits(graph: Graph, data: SolveInput, constraints: list[Constraint],
          chains: Sequence[Sequence[int]]) -> bool:
    """Do streams stay in one graph (unless they may span graphs) and hold the rules and the
    capacity (the relaxation knows none of these)?"""
    if not data.span_graphs and _spans(data.dag, chains):
        return False
    if data.capacity is not None and any(
            sum(data.units[v] for v in chain) > data.capacity for chain in chains):
        return False
    streams = assignment_of(data.dag, chains)
    return not breaks(graph, data.dag, constraints, streams)


def _spans(dag: TaskDag, chains: Sequence[Sequence[int]]) -> bool:
    """Does a stream take nodes of several graphs (so a model hinted with `chains` must let
    streams span graphs, where the first solve's retry did: `chain_solve`)?"""
    graphs = dag.graphs
    return any(graphs[v] != graphs[chain[0]] for chain in chains for v in chain)
