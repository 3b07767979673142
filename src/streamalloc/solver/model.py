"""The CP-SAT model: streams as chains of stream-successor arcs over a fixed T-order.

Data -> variables -> constraints -> objective -> hint, as the OR-Tools samples read (solve and
extract: `solver.run`). Every stream runs its nodes in T-order, so every assignment is
deadlock-free.

* `arc[u, v]`: v runs right after u on one stream (u before v in T-order, same graph unless
  `span_graphs`); at most one successor and one predecessor per node. Streams = nodes - arcs.
* `chain[v]`: the T-order index of the first node of v's stream (an arc copies it; a node
  without a predecessor arc starts its own), so two nodes share a stream iff equal `chain`.
* `split[u, v]` per edge of the transitive reduction of the dependencies: u and v on
  different streams. That pair needs an event unless other orderings imply it, so the sum is
  an upper bound of the events minimal sync keeps (exact under full concurrency, where only
  ordered pairs share a stream and program order adds no ordering).
* `load[v]`: task units of v's stream up to v; at most the stream capacity (no split).
* `start[v]`: a schedule with durations from the cost table: dependencies and program order
  (arcs); `makespan` is its end. It bounds parallelism in the events objective and is the
  objective of `makespan`. A window of a larger plan (`solver.windows`) also gives fixed
  starts, releases and deadlines.
Rule constraints (the kinds' forms) are stated over `chain` and `arc` (`solver.rules`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from streamalloc.solver.candidates import candidate_arcs
from streamalloc.solver.dag import TaskDag


class Unsolvable(Exception):
    """The model cannot be stated (too large) or the rules leave no plan: the optimal mode
    keeps its baseline (status FALLBACK, this message its reason)."""


@dataclass(frozen=True)
class SolveInput:
    """What the model is built from (node indices refer to `dag`)."""

    dag: TaskDag
    units: Sequence[int]
    durations: Sequence[int]              # integer time units (the caller's scale)
    capacity: int | None                  # task units per stream; None: unlimited
    concurrency: str                      # "ge" or "full"
    hint: Sequence[Sequence[int]]         # the baseline's streams as chains in T-order
    objective: str = "events"             # "events" or "makespan"
    makespan_limit: int | None = None     # schedule bound (events objective)
    event_limit: int | None = None        # bound on split pairs: the device's event (notify)
    # limit, and the makespan objective's event budget
    stream_limit: int | None = None       # bound on streams (the device's, less attached ones)
    window: int = 8
    span_graphs: bool = False             # a stream may take nodes of several graphs
    # a part of a larger plan (`solver.windows`): nodes whose start is given (the proxies of
    # the fixed streams around it; dependencies through them are the releases and deadlines),
    # and the earliest start and latest end of the others
    fixed_start: Mapping[int, int] = field(default_factory=dict)
    release: Mapping[int, int] = field(default_factory=dict)
    deadline: Mapping[int, int] = field(default_factory=dict)


@dataclass
class Model:
    """The CP-SAT model and its variables, keyed by tuples and named after the key."""

    data: SolveInput
    cp: cp_model.CpModel = field(default_factory=cp_model.CpModel)
    arc: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    chain: list[cp_model.IntVar] = field(default_factory=list)
    head: list[cp_model.IntVar] = field(default_factory=list)
    load: list[cp_model.IntVar] = field(default_factory=list)
    split: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    start: list[cp_model.IntVar] = field(default_factory=list)
    makespan: cp_model.IntVar | None = None
    objective: cp_model.LinearExprT = 0

    def has_pred(self, v: int) -> list[cp_model.IntVar]:
        """The arcs into v."""
        return self._into.get(v, [])

    def has_succ(self, v: int) -> list[cp_model.IntVar]:
        """The arcs out of v."""
        return self._out.get(v, [])

    def __post_init__(self) -> None:
        self._into: dict[int, list[cp_model.IntVar]] = {}
        self._out: dict[int, list[cp_model.IntVar]] = {}


def build(data: SolveInput) -> Model:
    """Variables, structural constraints, schedule and objective (rules are added after)."""
    model = Model(data)
    _arcs(model)
    _chains(model)
    _splits(model)
    if data.capacity is not None:
        _loads(model, data.capacity)
    _schedule(model)
    _limits(model)
    _objective(model)
    _hint(model)
    return model


def _arcs(model: Model) -> None:
    n = model.data.dag.size
    for u, v in candidate_arcs(model.data.dag, model.data.concurrency, model.data.hint,
                               model.data.window, span=model.data.span_graphs):
        var = model.cp.new_bool_var(f"arc_{u}_{v}")
        model.arc[(u, v)] = var
        model._out.setdefault(u, []).append(var)
        model._into.setdefault(v, []).append(var)
    # one successor and one predecessor per node
    for v in range(n):
        for arcs in (model._into.get(v), model._out.get(v)):
            if arcs and len(arcs) > 1:
                model.cp.add_at_most_one(arcs)


def _chains(model: Model) -> None:
    n = model.data.dag.size
    model.chain = [model.cp.new_int_var(0, v, f"chain_{v}") for v in range(n)]
    for (u, v), var in model.arc.items():
        # an arc carries the first node's index along the stream
        model.cp.add(model.chain[v] == model.chain[u]).only_enforce_if(var)
    for v in range(n):
        into = model._into.get(v, [])
        head = model.cp.new_bool_var(f"head_{v}")
        model.head.append(head)
        model.cp.add(sum(into) == 0).only_enforce_if(head)
        model.cp.add(sum(into) >= 1).only_enforce_if(head.negated())
        # a node without a predecessor starts its own stream
        model.cp.add(model.chain[v] == v).only_enforce_if(head)
        model.cp.add(model.chain[v] < v).only_enforce_if(head.negated())


def _splits(model: Model) -> None:
    for u, v in model.data.dag.reduction:
        var = model.cp.new_bool_var(f"split_{u}_{v}")
        model.split[(u, v)] = var
        model.cp.add(model.chain[u] == model.chain[v]).only_enforce_if(var.negated())
        model.cp.add(model.chain[u] != model.chain[v]).only_enforce_if(var)


def _loads(model: Model, capacity: int) -> None:
    units = model.data.units
    load = [model.cp.new_int_var(units[v], max(capacity, units[v]), f"load_{v}")
            for v in range(model.data.dag.size)]
    model.load = load
    for (u, v), var in model.arc.items():
        # the stream's units so far: its predecessor's plus its own, never over the capacity
        model.cp.add(load[v] == load[u] + units[v]).only_enforce_if(var)
        if units[u] + units[v] > capacity:
            model.cp.add(var == 0)


def _schedule(model: Model) -> None:
    data = model.data
    given = [*data.fixed_start.values(), *data.release.values(), *data.deadline.values()]
    horizon = max(given, default=0) + sum(data.durations) + 1
    model.start = [model.cp.new_int_var(data.release.get(v, 0), horizon, f"start_{v}")
                   if v not in data.fixed_start else model.cp.new_constant(data.fixed_start[v])
                   for v in range(data.dag.size)]
    end = [model.start[v] + data.durations[v] for v in range(data.dag.size)]
    for v, latest in data.deadline.items():
        model.cp.add(end[v] <= latest)
    for u, v in data.dag.reduction:
        if u not in data.fixed_start and v not in data.fixed_start:
            model.cp.add(model.start[v] >= end[u])
    for (u, v), var in model.arc.items():
        # program order: a stream runs one task at a time
        model.cp.add(model.start[v] >= end[u]).only_enforce_if(var)
    model.makespan = model.cp.new_int_var(0, horizon, "makespan")
    model.cp.add_max_equality(model.makespan, end or [model.cp.new_constant(0)])
    if data.makespan_limit is not None:
        model.cp.add(model.makespan <= data.makespan_limit)


def _limits(model: Model) -> None:
    """The event and stream limits, where they bind. Split pairs bound the events minimal sync
    keeps from above: within the limit, so is the plan (its split events aside: the capacity
    keeps streams from splitting)."""
    data = model.data
    if data.event_limit is not None and data.event_limit < len(model.split):
        model.cp.add(sum(model.split.values()) <= data.event_limit)
    if data.stream_limit is not None and data.stream_limit < data.dag.size:
        model.cp.add(data.dag.size - sum(model.arc.values()) <= data.stream_limit)


def _objective(model: Model) -> None:
    data = model.data
    splits = sum(model.split.values())
    streams = data.dag.size - sum(model.arc.values())
    if data.objective == "makespan":
        assert model.makespan is not None
        model.objective = model.makespan * (data.dag.size + 1) + streams
    else:
        # fewest events first, then fewest streams
        model.objective = splits * (data.dag.size + 1) + streams
    model.cp.minimize(model.objective)


def hint_objective(data: SolveInput) -> float | None:
    """The events objective's value at the hint (every node on one of its chains); None when
    the hint is over the event or stream limit, which the model then repairs."""
    stream = {v: k for k, chain in enumerate(data.hint) for v in chain}
    splits = sum(stream[u] != stream[v] for u, v in data.dag.reduction)
    over_events = data.event_limit is not None and splits > data.event_limit
    if over_events or (data.stream_limit is not None and len(data.hint) > data.stream_limit):
        return None
    return float(splits * (data.dag.size + 1) + len(data.hint))


def _hint(model: Model) -> None:
    """The baseline's streams as the search's first solution, every variable hinted (the
    caller gives chains of candidate arcs within the capacity, so the hint is feasible unless
    the baseline is over a device limit: one worker then repairs it, several search without
    it, `solver.run.solve`)."""
    data = model.data
    follows = {pair for chain in data.hint for pair in itertools.pairwise(chain)}
    head = {v: chain[0] for chain in data.hint for v in chain}
    for key, var in model.arc.items():
        model.cp.add_hint(var, key in follows)
    for v, var in enumerate(model.chain):
        model.cp.add_hint(var, head.get(v, v))
        model.cp.add_hint(model.head[v], head.get(v, v) == v)
    for chain in data.hint:
        total = 0
        for v in chain:
            total += data.units[v]
            if model.load:
                model.cp.add_hint(model.load[v], total)
    for (u, v), var in model.split.items():
        model.cp.add_hint(var, head.get(u, u) != head.get(v, v))
    prev = {b: a for a, b in follows}
    fixed = data.fixed_start
    end = [0] * data.dag.size
    for v in range(data.dag.size):
        ready = fixed.get(v)
        if ready is None:
            ready = max([end[u] for u in data.dag.preds[v] if u not in fixed]
                        + ([end[prev[v]]] if v in prev else []) + [data.release.get(v, 0)])
            model.cp.add_hint(model.start[v], ready)
        end[v] = ready + data.durations[v]
    assert model.makespan is not None
    model.cp.add_hint(model.makespan, max(end, default=0))
