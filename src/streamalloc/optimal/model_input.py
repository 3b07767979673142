"""The chain model's data for a graph: integer task durations, the stream capacity, the
device's stream and event (or notify) limits, and the baseline's streams as its hint."""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from streamalloc.allocation import Allocation
from streamalloc.facts import RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import Outcome, assignment_of
from streamalloc.optimal.nimble import chain_events, grouped_cover, unordered_neighbours
from streamalloc.optimal.options import CAPACITY_SHARE, TIME_SCALE, OptimalOptions
from streamalloc.optimal.repair import within_rules, within_stream_limit
from streamalloc.rules.constraints import Constraint, SameStream
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length
from streamalloc.solver.model import SolveInput
from streamalloc.sync.limits import limits_of
from streamalloc.sync.tasks import own_units


def solve_input(graph: Graph, dag: TaskDag, baseline: Outcome, capacity: int | None, *,
                options: OptimalOptions, costs: CostTable,
                constraints: Sequence[Constraint] = (),
                full: tuple[tuple[int, ...], ...] | None = None) -> SolveInput:
    """The model's data; its hint is the baseline's streams, merged within the stream limit
    when ge mode's plan is over it (`within_stream_limit`, keeping `constraints`), or under
    full concurrency `full` where there is one (`full_start`: Nimble's chains within the
    rules and the stream limit)."""
    durations = task_durations(graph, dag, costs)
    stream_limit = main_stream_limit(graph, baseline)
    given = hint_chains(dag, baseline.allocation)
    if full is not None:  # (under full concurrency) ge mode's streams put
        # unordered nodes on one stream, which full concurrency forbids: no solution to start
        # from, and a fallback where CP-SAT finds none in its time
        given = [list(c) for c in full]
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
    pairs = pair_limit(graph)
    return SolveInput(dag=dag, units=units, durations=durations, capacity=capacity,
                      concurrency=options.concurrency, hint=hint, objective=options.objective,
                      makespan_limit=limit,
                      event_limit=pairs if options.event_budget is None
                      else min(pairs, options.event_budget),
                      stream_limit=stream_limit, window=options.window)


def full_start(graph: Graph, dag: TaskDag, nimble: tuple[tuple[int, ...], ...],
               constraints: Sequence[Constraint], *, durations: Sequence[int],
               stream_limit: int) -> tuple[tuple[int, ...], ...] | None:
    """A plan under full concurrency to start from: of the starts below that the repair
    brings within the rules and the stream limit and keeps chains, the one with the fewest
    events, then streams (the first of equals); None where none does. The starts: Nimble's
    chains; with `same-stream` groups (a stream label's nodes, say; the repair puts a group
    on its first member's stream, among nodes it may not be ordered with), also the chains
    of `nimble.grouped_cover`, each group's members joined on one chain first, and Nimble's
    chains with each group on a stream of its own. A generated 3,000-node graph with stream
    labels under GE's rules and the parallel options: Nimble's minimum, 1,686 events, where
    the repaired Nimble's chains are no chains and the groups apart need 2,191."""
    index = {name: v for v, name in enumerate(dag.names)}
    groups = [tuple(sorted(index[n] for n in c.nodes if n in index))
              for c in constraints if isinstance(c, SameStream)]
    starts: list[tuple[tuple[int, ...], ...] | None] = [nimble]
    if any(groups):
        starts += [grouped_cover(dag, groups), _groups_apart(nimble, groups)]
    fits = []
    for start in starts:
        full = None if start is None else within_rules(graph, dag, start, constraints,
                                                       durations)
        if full is not None and len(full) <= stream_limit \
                and unordered_neighbours(dag, full) is None:
            fits.append(full)
    return min(fits, key=lambda full: (chain_events(dag, full), len(full)), default=None)


def _groups_apart(chains: tuple[tuple[int, ...], ...], groups: Sequence[tuple[int, ...]]
                  ) -> tuple[tuple[int, ...], ...]:
    """`chains` less the nodes of `groups`, which get a stream each (still a chain where no
    path leaves two of them unordered)."""
    grouped = {v for group in groups for v in group}
    rest = (tuple(v for v in chain if v not in grouped) for chain in chains)
    return tuple(sorted([chain for chain in rest if chain] + [g for g in groups if g]))


def pair_limit(graph: Graph) -> int:
    """The device's limit on dependencies between streams: a dependency is a notify in
    notify mode (`ge.event: notify`), else an event."""
    device = limits_of(graph)
    return device.max_notifies if graph.option("ge.event") == "notify" else device.max_events


def within_pair_limit(graph: Graph, dag: TaskDag, options: OptimalOptions) -> OptimalOptions:
    """The makespan objective's event budget, at most the device's event (or notify) limit
    where the graph has more dependencies than it may count: a start over the limit is then
    polished down to it, as one over a budget, instead of being rejected. The 12-layer
    transformer training step in notify mode under 150 notifies: 16.6 -> 7.6 ms at
    `--time-limit 5` (free rules, parallel options; 6.1 ms with 177 notifies, unlimited).
    The budget counts events and notifies together, so in notify mode it also counts the
    split's events: within it, the plan is within the limit."""
    pairs = pair_limit(graph)
    if len(dag.reduction) <= pairs or (options.event_budget is not None
                                       and options.event_budget <= pairs):
        return options
    return msgspec.structs.replace(options, event_budget=pairs)


def main_stream_limit(graph: Graph, baseline: Outcome) -> int:
    """The main streams a plan may use: the model's (`Limits.model_streams`) less the
    attached streams."""
    attached = baseline.allocation.total_stream_num - baseline.allocation.main_stream_num
    return max(1, limits_of(graph).model_streams - attached)


def task_durations(graph: Graph, dag: TaskDag, costs: CostTable) -> list[int]:
    """Each streamed node's kernel time and launch in schedule units (at least one)."""
    model = CostModel(graph, costs)
    launch = costs.launch_us
    return [max(1, round((model.kernel(graph.node(n))[0] + launch) * TIME_SCALE))
            for n in dag.names]


def stream_capacity(graph: Graph) -> int | None:
    """The task units the model lets a stream hold (CAPACITY_SHARE of a physical stream's,
    less the reserved units); None where the runtime does not split streams."""
    if graph.option(UNLIMITED_DEPTH) == "true":
        return None
    return int((limits_of(graph).max_task_per_stream - RESERVED_UNITS) * CAPACITY_SHARE)


def hint_chains(dag: TaskDag, allocation: Allocation) -> list[list[int]]:
    """The baseline's logical streams (they satisfy the rules) as chains in T-order."""
    chains: dict[int, list[int]] = {}
    for i, name in enumerate(dag.names):
        chains.setdefault(allocation.stream(name), []).append(i)
    return [c for _, c in sorted(chains.items())]
