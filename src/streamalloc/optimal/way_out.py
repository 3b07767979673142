"""Where ge mode's plan is over a device limit and the search found no plan within the limits
that runs within the makespan limit: the fastest plan the makespan objective finds within
them when the makespan is not limited. Where it keeps the options' makespan limit and event
budget after all, it is the plan (the driver writes it); else the error names it and the
--makespan-slack that admits it, so a user knows what to ask for, instead of trying slacks
one by one."""

from __future__ import annotations

import math
from dataclasses import replace

import msgspec

from streamalloc.errors import AllocationInfeasible
from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import Outcome, evaluate_in_order, optimal_allocation
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.found import Search
from streamalloc.optimal.options import EPS_US, OptimalOptions
from streamalloc.optimal.polishing import polish_streams
from streamalloc.optimal.search import search
from streamalloc.rules import RuleSet
from streamalloc.rules.constraints import Constraint
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import Unsolvable

UNLIMITED_SLACK = 1e6  # percent: a makespan limit no plan comes near
BETTER_TIME = 2.0  # the most of --time-limit each search for a better plan than one found
# gets (the events objective over a device limit, `driver._fewer_rescued`): the example
# training step under the parallel options and max_streams=3 took 20 s of wall time at the
# default 10 with the whole limit for each, against 0.9 s without them; at 2, 4.8 s


def fastest_within_limits(graph: Graph, dag: TaskDag, baseline: Outcome,
                          constraints: list[Constraint], *, rules: RuleSet,
                          options: OptimalOptions, costs: CostTable,
                          budget: int | None = None, better: bool = False
                          ) -> tuple[Outcome, Search] | None:
    """The plan of the makespan objective without a makespan limit (under the event budget if
    the makespan objective was given one: where none is found within it, the plan may be
    over it), verified with the device limits and emulated, and its search; None where it is
    over one. `budget`: an event budget instead, where the events objective asks for fewer
    events than a plan it has; `better`: a plan is found already, and the search gets at most
    BETTER_TIME of the time limit."""
    unlimited = msgspec.structs.replace(options, objective="makespan",
                                        event_budget=options.budget if budget is None
                                        else budget,
                                        makespan_slack=UNLIMITED_SLACK,
                                        time_limit=min(options.time_limit, BETTER_TIME)
                                        if better else options.time_limit)
    try:
        found = search(graph, dag, baseline, constraints, options=unlimited, costs=costs)
        allocation = optimal_allocation(graph, baseline.allocation, dag, found.chains,
                                        rules=rules, constraints=constraints)
        return evaluate_in_order(graph, allocation, found.order, options.sync, costs), found
    except (Unsolvable, AllocationInfeasible):
        return None


def with_fewer_events(graph: Graph, dag: TaskDag, baseline: Outcome,
                      constraints: list[Constraint], fastest: tuple[Outcome, Search], *,
                      rules: RuleSet, options: OptimalOptions, costs: CostTable
                      ) -> tuple[Outcome, Search]:
    """`fastest` (the makespan objective's plan, which the events objective writes) polished
    on the exact event count within the events objective's makespan limit, phase `+polish`;
    `fastest` itself where that needs no fewer events or breaks a device limit. A graph with
    While and If nodes under 3 stream slots and 5 events (`control_flow_graph(1)` of the
    tests): the fastest plan needs 2 events at 187 us, the polished one 1 at 189 us, within
    ge mode's 199."""
    outcome, found = fastest
    evaluator = Evaluator(graph, dag, baseline, options, costs)
    chains = polish_streams(graph, dag, found.chains, found.order, constraints=constraints,
                            evaluator=evaluator, limit=evaluator.limit())
    try:
        allocation = optimal_allocation(graph, baseline.allocation, dag, chains, rules=rules,
                                        constraints=constraints)
        polished = evaluate_in_order(graph, allocation, found.order, options.sync, costs)
    except AllocationInfeasible:  # over a device limit: the polish probes without them
        return fastest
    if polished.events >= outcome.events or polished.makespan_us > evaluator.limit_us() + EPS_US:
        return fastest
    return polished, replace(found, chains=chains, phase=f"{found.phase}+polish")


def slack_admitting(makespan_us: float, baseline_us: float) -> int:
    """The least whole --makespan-slack (percent) whose limit a plan of `makespan_us` keeps."""
    return max(0, math.ceil(round((makespan_us / baseline_us - 1) * 100, 9)))


def way_out(outcome: Outcome, baseline: Outcome, options: OptimalOptions) -> str:
    """What the error adds: `outcome`'s events and makespan against ge mode's, and the
    options that admit it (a plan these options admit is written instead: under the events
    objective, the makespan objective is named, which does not ask for ge mode's events or
    fewer)."""
    budget = options.budget
    slack = slack_admitting(outcome.makespan_us, baseline.makespan_us)
    flags = [] if options.objective == "makespan" else ["--objective makespan"]
    flags += [f"--event-budget {outcome.events}"] if budget is not None and \
        outcome.events > budget else []
    flags += [f"--makespan-slack {slack}"] if slack > options.makespan_slack else []
    return (f"; the best plan found within them without a makespan limit needs "
            f"{outcome.events} events and runs {outcome.makespan_us:.1f} us, ge mode's "
            f"{baseline.makespan_us:.1f} us x {outcome.makespan_us / baseline.makespan_us:.3f}"
            f": {' '.join(flags)} admits it")
