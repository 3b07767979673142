"""The polish on the exact event count (`solver.polish`) run on the emulated plan: its budget
of tried moves, and the events objective's two passes."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import assignment_of, chains_of_assignment, rule_guard
from streamalloc.optimal.evaluator import Evaluator, evaluation_count
from streamalloc.optimal.options import POLISH_NODES_PER_SECOND, POLISH_PER_SECOND
from streamalloc.optimal.order import Order
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count
from streamalloc.solver.polish import Polish, Remembered, polish

MAKESPAN_POLISH_SHARE = 1.0  # for the polish after it: it counts tried moves, most of them
# rejected on the event count unevaluated (0.1-6.6 s at --time-limit 10); less loses time on
# T5 and the training step, where its moves also shorten the run


def polish_streams(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                   order: Order | None, *, constraints: list[Constraint], evaluator: Evaluator,
                   limit: int, events_first: bool = False, spare: float = 0.0
                   ) -> tuple[tuple[int, ...], ...]:
    """The polish on the exact event count (in execution order `order`); a move that needs
    fewer events is kept when the emulated makespan of its plan stays within `limit`
    (`events_first`: with the events objective's budget of moves under the makespan's). It
    tries moves for --time-limit and the `spare` seconds CP-SAT left; round trips under the
    events objective only (`Polish.round_trips`)."""
    streams = assignment_of(dag, chains)
    events = evaluator.options.objective == "events"
    result = polish(dag, streams, length=partial(evaluator.makespan, order=order), limit=limit,
                    allowed=rule_guard(graph, dag, constraints),
                    budget=polish_budget(evaluator, streams, spare, events_first=events_first),
                    round_trips=events,
                    lengths=polish_runs(evaluator, streams, spare) if events else None)
    return chains_of_assignment(result)


def polish_both_ways(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                     order: Order | None, *, constraints: list[Constraint],
                     evaluator: Evaluator, limit: int, spare: float
                     ) -> list[tuple[tuple[int, ...], ...]]:
    """`polish_streams`, and under the events objective, when it ends at a local optimum with
    tries left, the polish from the same start that visits the event edges last to first,
    with those tries: each greedy pass keeps the first move that helps, so the two end at
    different optima (the ResNet-50 training step at --time-limit 10: 105 -> 98 events)."""
    if evaluator.options.objective != "events":
        return [polish_streams(graph, dag, chains, order, constraints=constraints,
                               evaluator=evaluator, limit=limit, spare=spare)]
    streams = assignment_of(dag, chains)
    budget = polish_budget(evaluator, streams, spare)
    length = Remembered(partial(evaluator.makespan, order=order),  # shared by both passes,
                        polish_runs(evaluator, streams, spare))
    count = Remembered(partial(event_count, dag))  # as the event counts are
    found = []
    for reverse in (False, True):
        run = Polish(dag, length, limit,
                     rule_guard(graph, dag, constraints), budget, list(streams),
                     reverse=reverse, count=count)
        found.append(chains_of_assignment(run.run()))
        budget = run.budget
        if budget <= 0:
            break
    return found


def polish_budget(evaluator: Evaluator, streams: Sequence[int], spare: float, *,
                  events_first: bool = False) -> int:
    """The polish's tries: --time-limit and `spare` seconds, as many per second as the graph's
    size allows; under the makespan objective (unless `events_first`) at most the
    evaluations of MAKESPAN_POLISH_SHARE of --time-limit."""
    per_second = min(POLISH_PER_SECOND, POLISH_NODES_PER_SECOND / max(1, evaluator.dag.size))
    budget = max(1, int((evaluator.options.time_limit + spare) * per_second))
    if evaluator.options.objective == "makespan" and not events_first:  # events second
        budget = min(budget, evaluation_count(evaluator, streams, evaluator.options.time_limit
                                              * MAKESPAN_POLISH_SHARE))
    return budget


def polish_runs(evaluator: Evaluator, streams: Sequence[int], spare: float) -> int:
    """The most emulated runs of the events objective's polish: those of --time-limit and the
    `spare` seconds CP-SAT left. Its tries are counted per move, most of them rejected on the
    event count alone; on a large capacity-bound graph most are kept and each costs a run
    (the DenseNet-121 training step under the parallel options: 326 runs of about 75 ms,
    24 s at --time-limit 10 for a start that lost to the others by 340 events)."""
    return evaluation_count(evaluator, streams, evaluator.options.time_limit + spare)
