"""`--mode optimal`: the CP-SAT allocator composed with the baseline, sync, verifier, emulator.

The baseline is ge mode under GE's rule set plus the user's rules (for the built-in rule set
`free`: GE's default rule set); its plan is the solver's hint and the fallback. The solver's
streams go through the shared sync layer, the verifier (with the rules) and the emulator; the
written plan has events <= the baseline's at an emulated makespan <= baseline x (1 + slack)
(under `--concurrency ge`), or the baseline is kept with status FALLBACK and a reason.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import networkx as nx

from streamalloc.allocation import Allocation, NodeStream
from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import INVALID, RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.rules import RuleSet, default_rule_set
from streamalloc.rules.check import Placement, broken
from streamalloc.rules.constraints import Constraint, PinnedStream, rule_constraints
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length
from streamalloc.solver.model import SolveInput, build, chains_of, solve
from streamalloc.solver.polish import polish
from streamalloc.solver.rules import add_rules
from streamalloc.sync.context import SyncModel
from streamalloc.sync.driver import synchronize
from streamalloc.sync.insert import insert_cross_stream_pairs
from streamalloc.sync.limits import limits_of
from streamalloc.sync.model import SyncMaps
from streamalloc.sync.result import SyncPlan
from streamalloc.sync.tasks import own_units
from streamalloc.verify import verify_plan

FREE = "free"
POLISH_PER_SECOND = 400  # polish evaluations per second of --time-limit (deterministic)
TIME_SCALE = 10  # schedule time unit: 0.1 us
CAPACITY_SHARE = 0.9  # of a stream's free units: room for the Send/Recv tasks events add


@dataclass(frozen=True)
class OptimalOptions:
    """The optimal mode's settings (CLI: --objective, --concurrency, ...)."""

    objective: str = "events"
    concurrency: str = "ge"
    makespan_slack: float = 0.0
    event_budget: int | None = None
    time_limit: float = 10.0
    seed: int = 0
    workers: int = 1
    sync: str = "minimal"
    costs: CostTable | None = None
    window: int = 8


@dataclass(frozen=True)
class SolverReport:
    """The plan's `solver` block (formats: plan file)."""

    status: str
    objective: float | None
    bound: float | None
    events_final: int
    deterministic_time: float
    nimble_min_events: int | None
    reason: str = ""
    baseline_events: int = 0
    baseline_makespan_us: float = 0.0
    makespan_us: float = 0.0
    phase: str = ""

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (0 when proven optimal)."""
        if self.objective is None or self.bound is None:
            return None
        return round(abs(self.objective - self.bound) / max(1.0, abs(self.objective)), 6)

    def to_json(self) -> dict[str, Any]:
        """The plan file's `solver` block; wall time is never written (reproducible files)."""
        block: dict[str, Any] = {
            "status": self.status, "objective": self.objective, "bound": self.bound,
            "gap": self.gap, "events_final": self.events_final,
            "deterministic_time": self.deterministic_time,
            "nimble_min_events": self.nimble_min_events,
            "baseline_events": self.baseline_events,
            "baseline_makespan_us": round(self.baseline_makespan_us, 3),
            "makespan_us": round(self.makespan_us, 3), "phase": self.phase}
        if self.reason:
            block["reason"] = self.reason
        return block


@dataclass(frozen=True)
class Outcome:
    """A verified, emulated plan."""

    allocation: Allocation
    plan: SyncPlan
    events: int
    makespan_us: float


def allocate_optimal(graph: Graph, rules: RuleSet | None, options: OptimalOptions
                     ) -> tuple[SyncPlan, SolverReport]:
    """The best plan the solver finds under the rules and limits, never worse than GE's."""
    costs = options.costs or default_cost_table()
    base_rules = default_rule_set(graph) if rules is None or rules.name == FREE else rules
    baseline = _outcome(graph, allocate_ge(graph, base_rules), base_rules, options.sync, costs)
    constraints = [] if rules is not None and rules.name == FREE else \
        rule_constraints(base_rules, graph)
    dag = task_dag(graph, baseline.allocation)
    nimble = nimble_min_events(dag) if options.concurrency == "full" else None
    try:
        search = _search(graph, dag, baseline, constraints, options=options, costs=costs)
        allocation = optimal_allocation(graph, baseline.allocation, dag, search.chains,
                                        rules=rules or base_rules, constraints=constraints)
    except ValueError as exc:  # a model too large to state, or no plan
        return _fallback(baseline, str(exc), nimble)
    outcome = _outcome(graph, allocation, None, options.sync, costs)
    reason = _worse(outcome, baseline, options)
    if reason:
        return _fallback(baseline, reason, nimble, search.deterministic_time)
    return outcome.plan, SolverReport(
        search.status, search.objective, search.bound, outcome.events,
        search.deterministic_time, nimble, "", baseline.events, baseline.makespan_us,
        outcome.makespan_us, search.phase)


def _outcome(graph: Graph, allocation: Allocation, rules: RuleSet | None, sync: str,
             costs: CostTable) -> Outcome:
    plan = synchronize(graph, allocation, sync=sync)
    document = plan.to_json()
    verify_plan(graph, document, rules=rules).raise_for_failure()
    result = emulate(graph, document, costs=costs)
    return Outcome(allocation, plan, plan.event_count + plan.notify_count, result.makespan_us)


def _fallback(baseline: Outcome, reason: str, nimble: int | None,
              deterministic: float = 0.0) -> tuple[SyncPlan, SolverReport]:
    return baseline.plan, SolverReport("FALLBACK", None, None, baseline.events, deterministic,
                                       nimble, reason, baseline.events, baseline.makespan_us,
                                       baseline.makespan_us)


def _worse(outcome: Outcome, baseline: Outcome, options: OptimalOptions) -> str:
    """Why the solver's plan may not replace the baseline ("" when it may)."""
    if options.concurrency == "full":
        return ""  # Nimble's setting: the parallelism floor is the concurrency itself
    limit = baseline.makespan_us * (1 + options.makespan_slack / 100)
    if outcome.makespan_us > limit + 1e-6:
        return (f"its emulated makespan {outcome.makespan_us:.1f} us is over the baseline's "
                f"{baseline.makespan_us:.1f} us x (1 + {options.makespan_slack}%)")
    if options.objective == "events" and outcome.events > baseline.events:
        return f"it needs {outcome.events} events, the baseline {baseline.events}"
    if options.objective == "makespan" and options.event_budget is not None \
            and outcome.events > max(options.event_budget, baseline.events):
        return f"it needs {outcome.events} events, over the budget of {options.event_budget}"
    return ""


def task_dag(graph: Graph, allocation: Allocation) -> TaskDag:
    """The nodes the allocation gives a stream, in T-order, and the dependencies the sync layer
    orders between them (every such pair is cross-stream when each node has its own stream)."""
    names = [n.name for n in graph.all_nodes() if allocation.stream(n.name) != INVALID]
    unique = {n: i for i, n in enumerate(names)}
    maps = SyncMaps()
    insert_cross_stream_pairs(SyncModel.of(graph, {}),
                              {n: unique.get(n, INVALID) for n in allocation.nodes}, {}, maps)
    senders, receivers = maps.senders(), maps.receivers()
    pairs = [(senders[x], receivers[x]) for x in sorted(senders)]
    return TaskDag.build(names, pairs, [graph.node(n).graph for n in names])


def nimble_min_events(dag: TaskDag) -> int:
    """|E_TR| - |maximum matching on E_TR|: Nimble's minimum number of events."""
    return len(dag.reduction) - (dag.size - len(matching_chains(dag)))


@dataclass(frozen=True)
class Search:
    """The streams found, CP-SAT's report on its model, and which phases made them."""

    chains: tuple[tuple[int, ...], ...]
    status: str
    objective: float | None
    bound: float | None
    deterministic_time: float
    phase: str


def _search(graph: Graph, dag: TaskDag, baseline: Outcome, constraints: list[Constraint], *,
            options: OptimalOptions, costs: CostTable) -> Search:
    """Full concurrency without rules or capacity is a matching (exact); otherwise CP-SAT's
    model, then (under `ge` concurrency) the polish on the exact event count."""
    capacity = _capacity(graph)
    if options.concurrency == "full" and not constraints and capacity is None:
        return Search(matching_chains(dag), "OPTIMAL", None, None, 0.0, "matching")
    data = _solve_input(graph, dag, baseline, capacity, options=options, costs=costs)
    model = build(data)
    add_rules(model, constraints, {n: i for i, n in enumerate(dag.names)})
    found = solve(model, time_limit=options.time_limit, seed=options.seed,
                  workers=options.workers)
    chains = found.chains or tuple(tuple(c) for c in data.hint)
    phase = "cp-sat" if found.chains else "hint"
    if options.concurrency == "ge" and options.objective == "events":
        chains = _polished(graph, dag, chains, constraints=constraints,
                           context=(baseline, options, costs))
        phase += "+polish"
    objective = found.objective if found.chains else None
    bound = found.bound if found.chains else None
    return Search(chains, found.status, objective, bound, found.deterministic_time, phase)


def _polished(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...], *,
              constraints: list[Constraint], context: tuple[Outcome, OptimalOptions, CostTable]
              ) -> tuple[tuple[int, ...], ...]:
    """The polish on the exact event count; a move that needs fewer events is kept when the
    emulated makespan of its plan stays within the baseline's x (1 + slack)."""
    baseline, options, costs = context

    def makespan(streams: Sequence[int]) -> int:
        allocation = optimal_allocation(graph, baseline.allocation, dag, _chains(streams),
                                        rules=RuleSet(FREE, "static", ()), constraints=[])
        try:
            outcome = _outcome(graph, allocation, None, options.sync, costs)
        except AllocationInfeasible:  # over a device limit
            return math.inf  # type: ignore[return-value]
        return math.ceil(outcome.makespan_us * TIME_SCALE)

    limit = math.floor(baseline.makespan_us * (1 + options.makespan_slack / 100) * TIME_SCALE)
    result = polish(dag, _assignment(dag, chains), length=makespan, limit=limit,
                    allowed=_rule_guard(graph, dag, constraints),
                    budget=max(1, int(options.time_limit * POLISH_PER_SECOND)))
    return _chains(result)


def _chains(streams: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The streams of an assignment, each in T-order, ordered by their first node."""
    members: dict[int, list[int]] = {}
    for v, k in enumerate(streams):
        members.setdefault(k, []).append(v)
    return tuple(tuple(m) for _, m in sorted(members.items(), key=lambda i: i[1][0]))


def _rule_guard(graph: Graph, dag: TaskDag, constraints: list[Constraint]
                ) -> Callable[[Sequence[int], Sequence[int]], bool]:
    """Do the constraints naming a moved node still hold?"""
    by_node: dict[int, list[Constraint]] = {}
    index = {n: i for i, n in enumerate(dag.names)}
    for c in constraints:
        for name in _named(c):
            if name in index:
                by_node.setdefault(index[name], []).append(c)

    def allowed(trial: Sequence[int], moved: Sequence[int]) -> bool:
        touched = {id(c): c for w in moved for c in by_node.get(w, [])}
        if not touched:
            return True
        placement = Placement({dag.names[v]: trial[v] for v in range(dag.size)}, {})
        return not broken(list(touched.values()), graph, placement)

    return allowed


def _named(constraint: Constraint) -> list[str]:
    """The node names a constraint mentions."""
    names: list[str] = []
    for value in vars(constraint).values() if hasattr(constraint, "__dict__") else \
            (getattr(constraint, f) for f in constraint.__slots__):
        if isinstance(value, tuple):
            for item in value:
                names.extend(item if isinstance(item, tuple) else [item])
    return [n for n in names if isinstance(n, str)]


def matching_chains(dag: TaskDag) -> tuple[tuple[int, ...], ...]:
    """Chains of a maximum matching on the reduction edges: Nimble's minimum-event streams.
    Integer vertices (u out, n + v in) and sorted insertion keep the matching the same in
    every process (string hashes vary with PYTHONHASHSEED)."""
    n = dag.size
    bipartite = nx.Graph()
    bipartite.add_nodes_from(range(2 * n))
    bipartite.add_edges_from((u, n + v) for u, v in dag.reduction)
    matching = nx.bipartite.hopcroft_karp_matching(bipartite, top_nodes=range(n))
    arcs = {(u, v - n) for u, v in matching.items() if u < n}
    return chains_of(n, arcs)


def _solve_input(graph: Graph, dag: TaskDag, baseline: Outcome, capacity: int | None, *,
                 options: OptimalOptions, costs: CostTable) -> SolveInput:
    durations = _durations(graph, dag, costs)
    hint = _hint_chains(dag, baseline.allocation)
    limit = None
    if options.objective == "events" and options.concurrency == "ge":
        limit = math.ceil(schedule_length(dag, durations, _assignment(dag, hint))
                          * (1 + options.makespan_slack / 100))
    units = [own_units(graph, graph.node(n)) for n in dag.names]
    if capacity is not None:  # the hint's streams must fit: GE's split may fill them more
        capacity = max([capacity] + [sum(units[v] for v in chain) for chain in hint])
    return SolveInput(dag=dag, units=units, durations=durations, capacity=capacity,
                      concurrency=options.concurrency, hint=hint, objective=options.objective,
                      makespan_limit=limit, event_limit=options.event_budget,
                      window=options.window)


def _assignment(dag: TaskDag, chains: Sequence[Sequence[int]]) -> list[int]:
    streams = [0] * dag.size
    for k, chain in enumerate(chains):
        for v in chain:
            streams[v] = k
    return streams


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


def optimal_allocation(graph: Graph, baseline: Allocation, dag: TaskDag,
                       chains: tuple[tuple[int, ...], ...], *, rules: RuleSet,
                       constraints: list[Constraint]) -> Allocation:
    """The solver's streams as an Allocation: pinned streams keep their ids, the others are
    numbered by first node in T-order; attached streams follow the main ones as in GE."""
    ids = _stream_ids(dag, chains, constraints)
    stream = {dag.names[v]: ids[k] for k, chain in enumerate(chains) for v in chain}
    main = max(ids, default=-1) + 1
    shift = main - baseline.main_stream_num
    nodes = {name: NodeStream(stream.get(name, INVALID), "solver" if name in stream else "initial",
                              tuple(a + shift for a in node.attached))
             for name, node in baseline.nodes.items()}
    result = replace(baseline, mode="optimal", rules=rules.name, rules_digest=rules.digest,
                     nodes=MappingProxyType(nodes), main_stream_num=main,
                     total_stream_num=baseline.total_stream_num + shift,
                     provenance=MappingProxyType({n: () for n in nodes}), custom_stream_ids=())
    placement = Placement({n: s.stream for n, s in nodes.items()},
                          {n: s.attached for n, s in nodes.items() if s.attached})
    problems = broken(constraints, graph, placement)
    if problems:  # the model states every form; a break is a bug in the model or the polish
        raise AssertionError(f"the solver broke rule {problems[0].rule}: {problems[0].message}")
    return result


def _stream_ids(dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                constraints: list[Constraint]) -> list[int]:
    """Pinned chains get their id (the model keeps different pins apart), the others the free
    ids in order of their first node."""
    pin = {n: c.stream for c in constraints if isinstance(c, PinnedStream) for n in c.nodes}
    wanted: dict[int, int] = {}
    for k, chain in enumerate(chains):
        ids = {pin[dag.names[v]] for v in chain if dag.names[v] in pin}
        if ids:
            wanted[k] = min(ids)
    if max(wanted.values(), default=0) >= len(chains):
        raise ValueError(f"a rule pins nodes to stream {max(wanted.values())}, but the plan "
                         f"has {len(chains)} streams")
    taken = set(wanted.values())
    free = (i for i in itertools.count() if i not in taken)
    return [wanted[k] if k in wanted else next(free) for k in range(len(chains))]
