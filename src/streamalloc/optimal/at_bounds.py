"""Plans at the bounds, found before any search: under the events objective and `ge`
concurrency, streams whose plan has `events_bound` events on the fewest logical streams the
makespan limit allows, so no search can do better; under full concurrency without rules,
Nimble's fewest events on the fewest streams where none of them splits, and with rules,
Nimble's chains within them where they keep Nimble's minimum on as few streams as nodes of one
depth; where those chains split, cut where a cut adds no event (`cut_within`), at Nimble's
minimum, on more streams (status FEASIBLE)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

from streamalloc.facts import SYNC_UNITS
from streamalloc.ir.graph import Graph
from streamalloc.optimal.chain_model import windowed
from streamalloc.optimal.evaluate import Measured, assignment_of, breaks, chains_of_assignment
from streamalloc.optimal.evaluator import Evaluator, measured_outcome
from streamalloc.optimal.event_bound import node_capacity
from streamalloc.optimal.found import Found, Search
from streamalloc.optimal.full_conflict import widest_level
from streamalloc.optimal.model_input import hint_chains, task_durations
from streamalloc.optimal.nimble import cut_to_fit
from streamalloc.optimal.options import EPS_US
from streamalloc.optimal.order import Order, Orders
from streamalloc.optimal.prologue import main_input, serial_prologues
from streamalloc.optimal.regions import single_exit_regions
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.tasks import main_units

REGION_TRIES = 32  # single-exit regions tried beside one stream where the events bound is 2
# (Llama tiny: its second, beside the v projection's, which needs 3 events)
REGION_EVENTS = 2  # what one stream with its prologue and a region aside needs: one event
# orders the prologue, one the region


def unsearched(graph: Graph, dag: TaskDag, constraints: list[Constraint],
               evaluator: Evaluator, *, capacity: int | None, stream_limit: int,
               events_floor: int | None,
               nimble: tuple[tuple[tuple[int, ...], ...], bool] | None = None,
               full: tuple[tuple[int, ...], ...] | None = None,
               measured: dict[Found, Measured | None] | None = None,
               searched: bool = True) -> Search | None:
    """The streams where no search can do better, or None: under full concurrency without
    rules, Nimble's fewest events on the fewest streams (`nimble`: `nimble.fewest_streams`;
    exact, or on a large graph the fewest events) when they fit the stream limit and none of
    them splits (`_unsplit`), with rules those chains within them (`full`: `full_start`) at
    the bounds, and where no search follows (not `searched`) those chains anyway
    (`_full_unsearched`); under the events objective and `ge` concurrency, the first of one
    stream, the baseline's streams and (not in windows, where a run costs seconds) one
    stream with its prologue aside, or with its prologue and a single-exit region aside where
    the bound is 2, whose plan holds the rules and reaches the events bound `events_floor`
    and the streams bound (`at_floor`): GE dump 00026 under the parallel options, whose
    baseline does, 21.6 -> 0.8 s; T5 small, one stream with its prologue aside, 6.8 ->
    0.7 s; Llama tiny, with a region too, 13 -> 0.5 s."""
    options = evaluator.options
    if options.concurrency == "full" and nimble is not None:
        return _full_unsearched(graph, dag, constraints, evaluator, capacity=capacity,
                                stream_limit=stream_limit, events_floor=events_floor,
                                fewest=nimble[1], full=full,
                                measured={} if measured is None else measured,
                                searched=searched)
    if events_floor is None or options.objective != "events" or options.concurrency != "ge":
        return None
    one = one_stream(graph, dag, constraints, evaluator, events_floor)
    if one is not None:
        return one
    hint = tuple(tuple(c) for c in hint_chains(dag, evaluator.baseline.allocation))
    # (the baseline's own plan has its streams: over the bound, they need not be run)
    candidates: list[tuple[Found, str]] = [((hint, None), "hint")] \
        if evaluator.baseline.events <= events_floor else []
    if not windowed(dag, options):
        evaluator = replace(evaluator, orders=Orders.of(graph))
        durations = task_durations(graph, dag, evaluator.costs)
        # (the first of the serial prologues is every node on one stream, tried above)
        candidates += [(found, "one-stream+prologue" + ("+reordered" if found[1] else ""))
                       for found in serial_prologues(dag, durations, evaluator.orders)[1:]]
        if events_floor == REGION_EVENTS and len(set(dag.graphs)) == 1:
            candidates += regions_aside(dag, durations)
    for (chains, order), phase in candidates:
        if len(chains) <= stream_limit \
                and not breaks(graph, dag, constraints, assignment_of(dag, chains)) \
                and at_floor(evaluator, chains, order, events_floor=events_floor):
            return Search(evaluator.numbering(chains), "OPTIMAL", None, None, 0.0, phase,
                          order)
    return None


def _full_unsearched(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                     evaluator: Evaluator, *, capacity: int | None, stream_limit: int,
                     events_floor: int | None,
                     fewest: bool, full: tuple[tuple[int, ...], ...] | None,
                     measured: dict[Found, Measured | None], searched: bool) -> Search | None:
    """`unsearched` under full concurrency, from `full` (`full_start`: Nimble's chains within
    the rules and the stream limit; None where there are none): without rules those chains
    where none splits (OPTIMAL where they are the `fewest` streams); with rules, those chains
    where their plan reaches Nimble's minimum on as few streams as nodes of one depth
    (`_full_at_bounds`): BERT base under GE's rules and the parallel options, 8.4 -> 0.1 s
    of wall time at --time-limit 10 (CP-SAT found the same plan, without a proof).
    Else those chains `cut_within` the task capacity, where that plan has Nimble's minimum
    (FEASIBLE: on more streams). Where no search follows (not `searched`: the model is not
    solved above MAX_SOLVER_NODES), those chains within the stream limit are the plan
    anyway (FEASIBLE), cut where that needs fewer events. `measured`: the outcomes run, for
    the search to reuse."""
    if full is None:
        return None
    phase = "matching+rules" if constraints else "matching"
    if not constraints:
        if capacity is None or _unsplit(evaluator, full, events_floor, measured):  # else
            # cut, or the model's limits
            return Search(full, "OPTIMAL" if fewest else "FEASIBLE", None, None, 0.0, phase)
    elif _full_at_bounds(evaluator, full, events_floor, measured):
        return Search(full, "OPTIMAL", None, None, 0.0, phase)
    cut = cut_within(graph, dag, full, constraints, stream_limit=stream_limit)
    if cut is not None and _unsplit(evaluator, cut, events_floor, measured):
        return Search(cut, "FEASIBLE", None, None, 0.0, phase + "+cut")
    if searched:
        return None
    if cut is not None and _fewer_events(evaluator, measured, cut, full):
        return Search(cut, "FEASIBLE", None, None, 0.0, phase + "+cut")
    return Search(full, "FEASIBLE", None, None, 0.0, phase)


def cut_within(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
               constraints: list[Constraint], *, stream_limit: int
               ) -> tuple[tuple[int, ...], ...] | None:
    """`chains` cut where GE's split would add an event and a cut does not
    (`nimble.cut_to_fit`), where that changes them and the pieces hold the rules and the
    stream limit; else None. A generated 2,000-node layered graph without rules: Nimble's
    minimum, 1,118 events, on 12 streams in 1.1 s, where CP-SAT took 16.6 s for 1,127 on 3
    (split into 12). Under an engine cap the pieces need openers the cap may not have."""
    most = node_capacity(graph)  # (None where streams do not split)
    if most is None:
        return None
    notify = graph.option("ge.event") == "notify"
    cut = cut_to_fit(dag, chains, [main_units(graph, graph.node(n)) for n in dag.names], most,
                     send=SYNC_UNITS["SendNotify" if notify else "Send"],
                     recv=SYNC_UNITS["RecvNotify" if notify else "Recv"])
    if cut == chains or len(cut) > stream_limit \
            or breaks(graph, dag, constraints, assignment_of(dag, cut)):
        return None
    return cut


def _full_at_bounds(evaluator: Evaluator, chains: tuple[tuple[int, ...], ...],
                   events_floor: int | None, measured: dict[Found, Measured | None]) -> bool:
    """Under full concurrency: does the plan of `chains` (which hold the rules) run within
    the device limits with no more events than `events_floor` (the events bound: Nimble's
    minimum, and the events a split needs), on no more logical streams than the most nodes of
    one depth (`widest_level`: each needs its own)? Then no plan has fewer events, nor as few
    on fewer streams."""
    if events_floor is None or len(chains) > len(widest_level(evaluator.dag)):
        return False
    return _unsplit(evaluator, chains, events_floor, measured)


def _fewer_events(evaluator: Evaluator, measured: dict[Found, Measured | None],
                  chains: tuple[tuple[int, ...], ...], than: tuple[tuple[int, ...], ...]
                  ) -> bool:
    """Does the plan of `chains` run within the device limits on fewer events than the plan of
    `than` (or where that one does not)? `measured`: the outcomes run before."""
    mine = measured_outcome(evaluator, measured, (chains, None))
    theirs = measured_outcome(evaluator, measured, (than, None))
    return mine is not None and (theirs is None or mine.events < theirs.events)


def _unsplit(evaluator: Evaluator, chains: tuple[tuple[int, ...], ...],
             events_floor: int | None, measured: dict[Found, Measured | None]) -> bool:
    """Does the plan of `chains` fit the device with no more events than the bound (Nimble's
    minimum under full concurrency)? Then none of its streams splits (a split adds an
    event), so the task capacity, which only restricts plans, leaves them the best.
    `measured`: the outcomes run before (`measured_outcome`)."""
    if events_floor is None:
        return False
    outcome = measured_outcome(evaluator, measured, (chains, None))
    return outcome is not None and outcome.events <= events_floor


def regions_aside(dag: TaskDag, durations: Sequence[int]) -> list[tuple[Found, str]]:
    """One stream with its prologue and a single-exit region on a side stream
    (`optimal/regions.py`), for the first REGION_TRIES regions."""
    root, reached = main_input(dag, durations)
    phase = "one-stream+region" if all(reached) else "one-stream+prologue+region"
    found: list[tuple[Found, str]] = []
    for region in itertools.islice(single_exit_regions(dag, root, reached), REGION_TRIES):
        aside = set(region)
        streams = [1 if v in aside or not reached[v] else 0 for v in range(dag.size)]
        found.append(((chains_of_assignment(streams), None), phase))
    return found


def at_floor(evaluator: Evaluator, chains: tuple[tuple[int, ...], ...], order: Order | None,
             *, events_floor: int | None,
             measured: dict[Found, Measured | None] | None = None) -> bool:
    """Does the plan of `chains` (in `order`) run within the makespan and device limits with
    no more events than `events_floor` (the events bound), on no more logical streams than
    its tasks' time over the makespan limit asks for (a logical stream runs its tasks one at
    a time, its physical streams one after the other)? Then no plan has fewer events, nor as
    few on fewer streams. Only under the events objective and `ge` concurrency. `measured`:
    the outcomes run before (`measured_outcome`)."""
    options = evaluator.options
    if events_floor is None or options.objective != "events" or options.concurrency != "ge":
        return False
    tasks, names, limit = evaluator.tasks, evaluator.dag.names, evaluator.limit_us()
    work = [sum(tasks[names[v]][1] for v in chain) for chain in chains]
    if max(work, default=0.0) > limit + EPS_US or (
            len(chains) > 1 and len(chains) > math.ceil(sum(work) / limit - 1e-9)):
        return False  # one stream too slow, or too many streams: known without a run
    outcome = measured_outcome(evaluator, {} if measured is None else measured, (chains, order))
    return outcome is not None and outcome.events <= events_floor \
        and outcome.makespan_us <= evaluator.limit_us() + EPS_US


def one_stream(graph: Graph, dag: TaskDag, constraints: list[Constraint],
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
            or not at_floor(evaluator, one, None, events_floor=events_floor):
        return None
    return Search(one, "OPTIMAL", None, None, 0.0, "one-stream")
