"""`--mode optimal`: the CP-SAT allocator composed with the baseline, sync, verifier, emulator.

The baseline is ge mode under the same rule set (GE's, or a rule file that usually extends it;
for the built-in rule set `free`: GE's default rule set); its plan is the solver's hint and the
fallback. The solver's streams go through the shared sync layer, the verifier (with the rules)
and the emulator; the written plan runs within the baseline's emulated makespan x (1 + slack)
(under `--concurrency ge`) with no more events than the baseline (events objective) or the
event budget (makespan objective, when given), or the baseline is kept with status FALLBACK
and a reason. A
baseline over a device limit (streams, events, notifies) is measured with the limits lifted:
still the bar and the hint, never the plan written (LimitExceeded when nothing else fits).
The events bound of plans within the limits (`event_bound.py`) is reported with the plan, and
the search stops at once where one stream reaches it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol

import msgspec

from streamalloc.allocation import Allocation
from streamalloc.errors import AllocationInfeasible, LimitExceeded
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal.bounds import makespan_bound
from streamalloc.optimal.chain_model import unsolved, windowed
from streamalloc.optimal.evaluate import (
    Outcome,
    evaluate,
    evaluate_in_order,
    optimal_allocation,
    task_dag,
)
from streamalloc.optimal.event_bound import events_bound, events_only
from streamalloc.optimal.found import Search
from streamalloc.optimal.full_conflict import full_concurrency_conflict
from streamalloc.optimal.nimble import chain_events, fewest_streams, unordered_neighbours
from streamalloc.optimal.options import (
    EPS_US,
    MAX_SOLVER_NODES,
    MAX_WINDOWED_NODES,
    OptimalOptions,
    SolverReport,
    makespan_limit_us,
)
from streamalloc.optimal.search import search
from streamalloc.optimal.stream_bound import (
    events_needed,
    split_streams_needed,
    streams_needed,
)
from streamalloc.optimal.way_out import fastest_within_limits, way_out, with_fewer_events
from streamalloc.rules import RuleSet, default_rule_set, ge_rules_for
from streamalloc.rules.constraints import Constraint, rule_constraints
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import Unsolvable
from streamalloc.sync.limits import limits_of, without_device_limits
from streamalloc.sync.result import SyncPlan


def allocate_optimal(graph: Graph, rules: RuleSet | None, options: OptimalOptions
                     ) -> tuple[SyncPlan, SolverReport]:
    """The best plan the solver finds under the rules and limits, never worse than GE's."""
    costs = options.costs or default_cost_table()
    base_rules = ge_rules_for(rules, graph)
    baseline, over = _baseline(graph, base_rules, options, costs)
    constraints = solver_constraints(graph, rules)
    dag = task_dag(graph, baseline.allocation)
    if over:
        _check_streams_needed(graph, dag, constraints, baseline, over)
        if events_only(graph):  # (an activated stream waits without an event)
            _check_events_needed(graph, dag, constraints, over)
    most = _most_nodes(dag, options, chains_alone=options.concurrency == "full")
    floor = partial(events_bound, graph, dag, costs=costs, limit_us=None
                    if options.concurrency == "full" else
                    makespan_limit_us(baseline.makespan_us, options.makespan_slack))
    if dag.size > most:
        return _fallback(baseline, over, f"the graph has {dag.size} streamed nodes, over "
                                         f"the solver's {most}; the ge-mode plan is kept", None,
                         fewest=floor(), searched=False)
    chains = fewest_streams(dag) if options.concurrency == "full" else None  # Nimble's
    nimble = None if chains is None else chain_events(dag, chains[0])  # minimum, once
    if chains is not None and len(chains[0]) > 1 \
            and graph.option("ge.enableSingleStream") == "true":
        return _fallback(baseline, over, "single-stream mode (ge.enableSingleStream) keeps "
                                         "every node on one stream, and --concurrency full "
                                         "keeps nodes no path orders apart; the ge-mode plan "
                                         "is kept", nimble, fewest=None, searched=False)
    conflict = None if chains is None else full_concurrency_conflict(
        graph, dag, constraints, baseline.allocation.total_stream_num
        - baseline.allocation.main_stream_num,
        streams=len(chains[0]))
    if conflict:  # a proof CP-SAT may spend its whole time limit on
        return _fallback(baseline, over, "no plan under --concurrency full holds the rules "
                                         "and the device limits (proven before any search): "
                                         f"{conflict}", nimble, fewest=None, searched=False)
    fewest = floor(nimble=nimble)
    rescue = partial(_rescue, graph, dag, baseline, constraints, rules=rules or base_rules,
                     options=options, costs=costs)
    if fewest is not None and ((over and fewest > _most_events(graph))
                               or (options.budget is not None and options.budget < fewest)):
        return _below_bound(graph, baseline, over, floor, fewest, options=options,
                            nimble=nimble, rescue=rescue)
    try:
        found = search(graph, dag, baseline, constraints, options=options, costs=costs,
                       events_floor=fewest, nimble=chains)
        allocation = optimal_allocation(graph, baseline.allocation, dag, found.chains,
                                        rules=rules or base_rules, constraints=constraints)
    except Unsolvable as exc:  # a model too large to state, or no plan
        return _fallback(baseline, over, str(exc), nimble, fewest=fewest)
    shared = unordered_neighbours(dag, found.chains) if options.concurrency == "full" \
        else None
    if shared is not None:  # CP-SAT found no plan, and its start is ge mode's streams: the
        # events bound (Nimble's minimum) is for full concurrency, so none is reported
        return _fallback(baseline, over, _no_full_plan(found.status, shared), nimble,
                         found.deterministic_time, fewest=None)
    return _checked(graph, found, allocation, baseline, over, options=options, costs=costs,
                    nimble=nimble, fewest=fewest, rescue=rescue)


def _fewest_anyway(floor: Callable[..., int | None], fewest: int, options: OptimalOptions,
                   nimble: int | None) -> int:
    """The events bound of plans of any makespan (`fewest`: that of plans within the makespan
    limit; under `--concurrency full` there is none, and the two are one)."""
    if options.concurrency == "full":
        return fewest
    anyway = floor(limit_us=None, nimble=nimble)
    assert anyway is not None  # (None only where events are not the only ordering)
    return anyway


def _bound_why(nimble: int | None) -> str:
    """What the events bound of plans of any makespan counts."""
    return "the events bound: the streams the nodes' task units fill, joined by events" + \
        (f"; under --concurrency full at least Nimble's minimum, {nimble}" if nimble is not None
         else "")


def _below_bound(graph: Graph, baseline: Outcome, over: str, floor: Callable[..., int | None],
                 fewest: int, *, options: OptimalOptions, nimble: int | None, rescue: Rescue
                 ) -> tuple[SyncPlan, SolverReport]:
    """Before any search, where the events bound of plans within the makespan limit
    (`fewest`) is over the device's event limit (ge mode's plan is `over` it) or the makespan
    objective's event budget: no search can keep both (a training step under a budget of 0
    searched for 15 s at --time-limit 3 to say so). Where plans slower than ge mode's may,
    the reason names the slack, and over a device limit the rescue looks for one; where
    every plan needs more events, whatever its makespan, the error or reason says so."""
    anyway = _fewest_anyway(floor, fewest, options, nimble)
    most = _most_events(graph)
    if over and fewest > most:
        if anyway > most:  # no slack makes room: the rescue's search would find nothing
            raise _no_plan(over, f"and so is every plan: it needs at least {anyway} events "
                                 f"whatever its makespan ({_bound_why(nimble)}), over the "
                                 f"device's {most}; raise the limit")
        return _fallback(baseline, over, f"it was not run: every plan within the makespan "
                                         f"limit needs {fewest} events or more, over the "
                                         f"device's {most}", nimble, fewest=fewest,
                         rescue=rescue, bound_named=True)
    budget = options.budget
    if budget is not None and budget < anyway:
        return _fallback(baseline, over, f"it was not run: every plan needs {anyway} events or "
                                         f"more whatever its makespan ({_bound_why(nimble)}), "
                                         f"over the budget of {budget} events", nimble,
                         fewest=fewest, searched=False, bound_named=True)
    return _fallback(baseline, over, f"it was not run: every plan within the baseline's "
                                     f"{baseline.makespan_us:.1f} us x (1 + "
                                     f"{options.makespan_slack}%) needs {fewest} events or "
                                     f"more, over the budget of {budget} events; a "
                                     "--makespan-slack may let plans trade makespan for "
                                     "events", nimble, fewest=fewest, rescue=rescue,
                     bound_named=True)


def _check_streams_needed(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                          baseline: Outcome, over: str) -> None:
    """LimitExceeded, before any search, where the rules or the nodes' task units need more
    streams than the device's stream limit leaves (`stream_bound`): no makespan slack or time
    makes room."""
    needed = streams_needed(dag, constraints)
    units = split_streams_needed(graph, dag)
    if units is not None and units.streams > needed.streams:
        needed = units
    attached = baseline.allocation.total_stream_num - baseline.allocation.main_stream_num
    device = limits_of(graph)
    if needed.streams + attached <= device.model_streams:
        return
    given = f" and the {attached} attached streams its nodes ask for (GE's attached-stream " \
        f"pass gives them, whatever the main streams), {needed.streams + attached} in all" \
        if attached else ""
    raise _no_plan(
        over, f"and so is every plan: it needs at least {needed.streams} "
        f"stream{'s' if needed.streams > 1 else ''} ({needed.why}){given}, over the limit of "
        f"{device.model_streams} (option streamalloc.max_streams: {device.max_streams} slots, "
        "less the caller's stream); raise the limit, or relax the rules or the stream depth")


def _check_events_needed(graph: Graph, dag: TaskDag, constraints: list[Constraint],
                         over: str) -> None:
    """LimitExceeded, before any search, where the rules need more events than the device
    allows (`stream_bound.events_needed`)."""
    needed, why = events_needed(dag, constraints)
    most = _most_events(graph)
    if needed > most:
        raise _no_plan(over, f"and so is every plan under the rules: it needs at least {needed} "
                             f"events ({why}), over the device's {most}; raise the limit or "
                             "relax the rules")


def _no_plan(over: str, rest: str) -> LimitExceeded:
    """The error where no plan fits the device limits: ge mode's is over them (`over`), and
    `rest` says what of the others."""
    return LimitExceeded(f"no plan within the device limits: the ge-mode plan is over them "
                         f"({over}), {rest}")


def _most_nodes(dag: TaskDag, options: OptimalOptions, *, chains_alone: bool) -> int:
    """The most streamed nodes the search takes: the windows' limit where the model is
    solved window by window, not at all, or not needed (`chains_alone`: Nimble's chains
    without rules, where they fit the limits: `at_bounds.unsearched`); else the whole
    model's."""
    return MAX_WINDOWED_NODES if windowed(dag, options) or unsolved(options) or chains_alone \
        else MAX_SOLVER_NODES


def _checked(graph: Graph, found: Search, allocation: Allocation, baseline: Outcome,
             over: str, *, options: OptimalOptions, costs: CostTable, nimble: int | None,
             fewest: int | None, rescue: Rescue) -> tuple[SyncPlan, SolverReport]:
    """The search's plan synchronized, verified and emulated, with its report; the baseline
    (FALLBACK) where it is over a device limit or worse than the baseline."""
    try:
        outcome = evaluate_in_order(graph, allocation, found.order, options.sync, costs)
    except AllocationInfeasible as exc:  # over a limit, or one of GE's error cases
        what = "over a device limit" if isinstance(exc, LimitExceeded) else "infeasible"
        return _fallback(baseline, over, f"its plan is {what}: {exc}", nimble,
                         found.deterministic_time, fewest=fewest, rescue=rescue)
    reason = _worse(outcome, baseline, options, nimble)
    if reason:
        return _fallback(baseline, over, reason, nimble, found.deterministic_time,
                         fewest=fewest, rescue=rescue, slower=outcome)
    status, objective, bound = found.status, found.objective, found.bound
    if options.objective == "makespan" and found.phase != "hint":  # (a bare hint: under
        # full concurrency CP-SAT found nothing, and its answer says so)
        status, objective, bound = _makespan_result(graph, outcome, costs)
    written = outcome.plan, SolverReport(
        status, objective, bound, outcome.events, found.deterministic_time, nimble, "",
        baseline.events, baseline.makespan_us, outcome.makespan_us, found.phase, over, fewest)
    return _fewer_rescued(written, over=over, options=options, fewest=fewest, rescue=rescue)


def _fewer_rescued(written: Written, *, over: str, options: OptimalOptions, fewest: int | None,
                   rescue: Rescue) -> Written:
    """Under the events objective and `ge` concurrency, where ge mode's plan is `over` a
    device limit: the search's plan (`written`), or the rescue's where it needs fewer events,
    or as few and runs faster (`_rescue`: the makespan objective's fastest plan within the
    device limits, and one under an event budget below both plans' events). The search
    starts from ge mode's streams brought within the limits, and its model keeps each stream
    in one graph where it can, while the makespan objective's moves join graphs and a budget
    asks for fewer events: a graph with While and If nodes under 3 stream slots
    (`control_flow_graph(2)` of the tests) got 3 events at 236 us with 5 events allowed,
    0 events at 184 us with 2."""
    events = written[1].events_final
    if not over or not _may_need_fewer(events, options, fewest):
        return written
    return _better(written, rescue(None, over=over, fewest=fewest, beat=events))


def _may_need_fewer(events: int, options: OptimalOptions, fewest: int | None) -> bool:
    """Might a plan of the events objective under `ge` concurrency need fewer than `events`
    (more than the events bound, `fewest`, or than 0)?"""
    return options.objective == "events" and options.concurrency == "ge" \
        and events > (fewest or 0)


def _better(written: Written, other: Written | str) -> Written:
    """`other` where it is a plan with fewer events than `written`'s, or as few and faster,
    its deterministic time then both searches'; else `written`."""
    report = written[1]
    if isinstance(other, str) or (other[1].events_final, other[1].makespan_us) >= \
            (report.events_final, report.makespan_us):
        return written
    return other[0], msgspec.structs.replace(other[1], deterministic_time=round(
        other[1].deterministic_time + report.deterministic_time, 3))


def _no_full_plan(status: str, shared: tuple[str, str]) -> str:
    """Why no plan under --concurrency full was written (CP-SAT's `status`)."""
    found = "no plan under --concurrency full holds the rules and the device limits" \
        if status == "INFEASIBLE" else \
        "CP-SAT found no plan under --concurrency full within --time-limit"
    return (f"{found} (status {status}); ge mode's plan puts {shared[0]!r} and {shared[1]!r}, "
            "which no path orders, on one stream" + ("" if status == "INFEASIBLE" else
                                                      "; a longer --time-limit may find one"))


def _most_events(graph: Graph) -> int:
    """The events and notifies a plan may have: its events, and in notify mode (dependencies
    between streams are notifies, a split's are events) its notifies too. (Attached streams
    reserve notifies in event mode too, but a graph with them has no events bound.)"""
    device = limits_of(graph)
    return device.max_events + (device.max_notifies if graph.option("ge.event") == "notify"
                                else 0)


def solver_constraints(graph: Graph, rules: RuleSet | None) -> list[Constraint]:
    """The constraints the optimal mode keeps: those of `rules` (GE's when None; none under
    `free`, and only its own under a set built on it)."""
    if rules is not None and not rules.rules:  # `free`: nothing to derive
        return []
    return rule_constraints(rules or default_rule_set(graph), graph)


def _baseline(graph: Graph, rules: RuleSet, options: OptimalOptions, costs: CostTable
              ) -> tuple[Outcome, str]:
    """The ge-mode plan, and "" or why it is over a device limit (streams, events,
    notifies). Over one, it is evaluated with them lifted: its streams still hint the search
    and its events and makespan are still the plan's bar, but it cannot be the fallback."""
    try:
        allocation = allocate_ge(graph, rules)
        try:
            return evaluate(graph, allocation, rules, options.sync, costs), ""
        except LimitExceeded as exc:
            lifted = without_device_limits(graph)
            return evaluate(lifted, allocation, rules, options.sync, costs), str(exc)
    except AllocationInfeasible as exc:  # one of GE's error cases: nothing to start from
        raise type(exc)("optimal mode starts from the ge-mode plan (its baseline and "
                        f"fallback), and ge mode fails: {exc}") from exc


def _makespan_result(graph: Graph, outcome: Outcome, costs: CostTable
                     ) -> tuple[str, float, float]:
    """Status, objective and bound of the makespan objective, in us of the emulated run: the
    CP-SAT model only estimates it (and gets a twentieth of the time), so its own figures
    would say nothing about the plan; the bound holds for every plan (`makespan_bound`, read
    from this one's program)."""
    makespan = round(outcome.makespan_us, 3)
    bound = round(makespan_bound(graph, outcome.plan, costs), 3)
    return "OPTIMAL" if makespan <= bound else "FEASIBLE", makespan, bound


def _fallback(baseline: Outcome, over: str, reason: str, nimble: int | None,
              deterministic: float = 0.0, *, fewest: int | None, searched: bool = True,
              rescue: Rescue | None = None, slower: Outcome | None = None,
              bound_named: bool = False) -> tuple[SyncPlan, SolverReport]:
    """The baseline plan with status FALLBACK and `reason`; LimitExceeded when it is over a
    device limit (`over`): then no plan fits, and the error says what might let one
    (`searched`: the solver ran; `nimble`: Nimble's minimum, under `--concurrency full`,
    which has no makespan to trade; `rescue`: the fastest plan within the limits, and the
    slack that admits it, given the search's plan when it is within them but `slower`;
    `fewest`: the events bound of the plan, named unless `reason` names it)."""
    if over:
        floor = "" if fewest is None or bound_named else \
            f" (the events bound of plans within the makespan limit is {fewest})"
        if not searched:
            way_out = ""
        elif nimble is not None:
            way_out = (f"; under --concurrency full a plan needs at least Nimble's minimum of "
                       f"{nimble} events, and a stream for each of the most nodes no path "
                       "orders")
        elif rescue is not None:
            rescued = rescue(slower, over=over, fewest=fewest)
            if not isinstance(rescued, str):
                return rescued
            way_out = rescued + floor
        else:  # (a reason about the event budget names the slack already)
            way_out = "" if "--makespan-slack" in reason else \
                f"; a --makespan-slack may let it trade makespan for events and streams{floor}"
        raise _no_plan(over, f"and the solver's does not replace it ({reason}){way_out}")
    return baseline.plan, SolverReport("FALLBACK", None, None, baseline.events, deterministic,
                                       nimble, reason, baseline.events, baseline.makespan_us,
                                       baseline.makespan_us, events_bound=fewest)


Written = tuple[SyncPlan, SolverReport]


class Rescue(Protocol):
    """`_rescue` with the graph, its rules and the options given."""

    def __call__(self, outcome: Outcome | None, *, over: str, fewest: int | None,
                 beat: int | None = None) -> Written | str: ...


def _rescue(graph: Graph, dag: TaskDag, baseline: Outcome, constraints: list[Constraint],
            outcome: Outcome | None, *, over: str, fewest: int | None, rules: RuleSet,
            options: OptimalOptions, costs: CostTable, beat: int | None = None,
            most: int | None = None) -> Written | str:
    """Where ge mode's plan is `over` a device limit and no plan the search found fits (or,
    from `_fewer_rescued`, its plan may need fewer events): the fastest plan within the
    device limits, `outcome` where it is the makespan objective's within its
    budget, else the makespan objective's without a makespan limit (a second search). That
    plan, where it keeps the makespan limit and the budget after all (the events objective
    found none within them, and the makespan objective's search did: a graph with While and
    If nodes under 3 stream slots, 2 events at 198 us where ge mode needs 7 streams and runs
    243 us, used to be an error naming `--objective makespan`), status FEASIBLE, under the
    events objective polished for fewer events within the limit (`with_fewer_events`); else
    the way out the error names (`way_out`). Under the events objective and `ge` concurrency,
    where that plan needs more events than the events bound (or 0), one more search within
    an event budget one below its events, and below `beat` (the events of a plan the caller
    has): its plan where it is better (`_better`). `most`: that budget (no third search).
    Each search after a plan is found gets at most `way_out.BETTER_TIME` of the time limit.
    Each search alone misses plans the other finds: over 160 control-flow runs, the first
    alone wrote 100 events in all, budgets alone 75 but more on 2 runs, both 64."""
    budget = options.budget
    found = None
    if outcome is None or options.objective != "makespan" or \
            (budget is not None and outcome.events > budget):
        fastest = fastest_within_limits(graph, dag, baseline, constraints, rules=rules,
                                        options=options, costs=costs,
                                        budget=most,
                                        better=beat is not None or most is not None)
        outcome, found = fastest or (None, None)
    if outcome is None:
        return ("; without a makespan limit the search finds no plan within them either "
                "(a longer --time-limit may)")
    if found is None or _worse(outcome, baseline, options, None):
        return way_out(outcome, baseline, options)
    status, objective, bound = "FEASIBLE", None, None
    if options.objective == "makespan":
        status, objective, bound = _makespan_result(graph, outcome, costs)
    else:
        outcome, found = with_fewer_events(graph, dag, baseline, constraints,
                                           (outcome, found), rules=rules, options=options,
                                           costs=costs)
    written = outcome.plan, SolverReport(
        status, objective, bound, outcome.events, found.deterministic_time, None, "",
        baseline.events, baseline.makespan_us, outcome.makespan_us, found.phase, over, fewest)
    events = outcome.events if beat is None else min(outcome.events, beat)
    if most is not None or not _may_need_fewer(events, options, fewest):
        return written
    return _better(written, _rescue(graph, dag, baseline, constraints, None, over=over,
                                    fewest=fewest, rules=rules, options=options, costs=costs,
                                    most=events - 1))


def _worse(outcome: Outcome, baseline: Outcome, options: OptimalOptions,
           nimble: int | None) -> str:
    """Why the solver's plan may not replace the baseline ("" when it may)."""
    budget = options.budget
    if options.concurrency == "full":  # Nimble's setting: the parallelism floor is the
        # concurrency itself; only a budget bounds the events
        if budget is not None and outcome.events > budget:
            return (f"no plan found within the budget of {budget} events (the best found "
                    f"needs {outcome.events}; under --concurrency full none needs fewer than "
                    f"Nimble's minimum, {nimble})")
        return ""
    limit = makespan_limit_us(baseline.makespan_us, options.makespan_slack)
    if outcome.makespan_us > limit + EPS_US:
        return (f"its emulated makespan {outcome.makespan_us:.1f} us is over the baseline's "
                f"{baseline.makespan_us:.1f} us x (1 + {options.makespan_slack}%)")
    if options.objective == "events" and outcome.events > baseline.events:
        return f"it needs {outcome.events} events, the baseline {baseline.events}"
    if budget is not None and outcome.events > budget:
        return (f"no plan found within the budget of {budget} events runs "
                f"within the baseline's {baseline.makespan_us:.1f} us x (1 + "
                f"{options.makespan_slack}%) (the best found needs {outcome.events}); a "
                "--makespan-slack may let plans trade makespan for events")
    return ""


