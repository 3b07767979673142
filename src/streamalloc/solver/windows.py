"""The chain model on a graph too large to solve whole: windows of the T-order, each solved
with the streams outside it fixed (a large-neighbourhood search around the hint).

A window [a, b) of the T-order is convex (every path between two of its nodes stays in it),
so its own DAG orders its nodes exactly. A stream of the current plan enters the window's
model as at most two proxies: `before` stands for its part ahead of the window (its units; its
start fixed at that part's end), `after` for its part behind it (its units; its start fixed at
that part's start). A window node may follow a `before` proxy; an `after` proxy may follow a
window node or a `before` proxy. Dependencies between window and outside nodes become edges
to the outside node's proxy. In the schedule (the model's, without contention) they are each
window node's release and deadline, from a schedule every plan so far keeps (`_Schedule`), and
the plan's limit is every window node's deadline: no node behind the window starts later, so
the whole plan's schedule stays within the limit.

Rules are stated with each outside node standing for its proxy, except the engine caps, which
count every stream of the graph: a window's streams are kept only when the whole plan breaks no
rule, and only when they lower the whole model's objective (split pairs, then streams), counted
exactly on the pairs a window can change: those with an end in it, and those across it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import groupby

import numpy as np

from streamalloc.rules.constraints import Constraint, StreamCap, constraint_nodes
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import earliest_ends
from streamalloc.solver.model import Model, SolveInput, build
from streamalloc.solver.rules import add_rules
from streamalloc.solver.run import SolveOutput, solve

WINDOW_NODES = 250  # nodes of the graph per window's model; successive windows overlap by half
STEP = WINDOW_NODES // 2
MIN_WINDOW_TIME = 0.2  # deterministic s a window gets at least: each solve costs CP-SAT about
# half a second of wall time whatever its limit, and improves a window only with some tenths
# of a second (windows of 0.04 s saved 38 of 8,723 events on a 480-layer transformer's
# training step)
WINDOW_MISSES = 3  # windows in a row without a gain that end the windows: the rest of the
# limit goes to the polish, which works on the exact count and the emulated makespan (at
# --time-limit 10 the windows found nothing in 16 s on a 48-layer transformer's training step
# but 2 split pairs in its last windows, nothing in 20 s on a 3k-node generated graph; the
# polish, given their time, took the plans from 324 to 289 events and from 314 to 304 on a
# 10k-node one)
NEAR = WINDOW_NODES  # a stream that ends this close before a window (or starts this close
# behind it) gets a proxy, so window nodes may join it


@dataclass(frozen=True)
class _Window:
    """One window's model input and how its nodes map back to the whole plan."""

    data: SolveInput
    parts: list[np.ndarray]  # the graph's nodes each window node stands for, in T-order
    streams: list[int]  # the plan's streams the window's hint chains come from
    a: int
    b: int
    before: dict[int, int]  # the plan's stream -> its `before` proxy
    after: dict[int, int]  # and its `after` proxy

    def node(self, v: int, stream: int) -> int | None:
        """The window node graph node `v` (on the plan's `stream`) is or stands for."""
        if v < self.a:
            return self.before.get(stream)
        if v >= self.b:
            return self.after.get(stream)
        return v - self.a + len(self.before)


class _Plan:
    """The streams as node arrays in T-order, each node's stream, and the ends of a schedule
    that holds every dependency and program order of them (an upper bound of their earliest
    schedule: windows only ever move nodes earlier, so it is updated only where they change)."""

    def __init__(self, data: SolveInput) -> None:
        self.data = data
        graphs = data.dag.graphs  # a stream stays in one graph, as the model's arcs do
        runs = [list(run) for c in data.hint for _, run in groupby(c, key=graphs.__getitem__)]
        self.chains: list[np.ndarray | None] = [np.asarray(c, dtype=np.int64) for c in runs]
        self.stream = np.empty(data.dag.size, dtype=np.int64)
        for s, chain in enumerate(self.chains):
            self.stream[chain] = s
        self.end = earliest_ends(data.dag, data.durations, self.stream.tolist())

    def live(self) -> list[int]:
        return [s for s, c in enumerate(self.chains) if c is not None]

    def replace(self, old: list[int], new: list[np.ndarray], a: int, b: int) -> None:
        """`old` streams become `new` ones; the window [a, b)'s ends follow them."""
        for s in old:
            self.chains[s] = None
        for chain in new:
            self.stream[chain] = len(self.chains)
            self.chains.append(chain)
        prev: dict[int, int] = {}
        for chain in new:
            i, j = np.searchsorted(chain, [a, b]).tolist()
            inside = chain[max(0, i - 1):j].tolist()  # the window's nodes and the one before
            prev.update(zip(inside[1:], inside[:-1], strict=True))
        dag, durations = self.data.dag, self.data.durations
        for v in range(a, b):
            ready = max([self.end[u] for u in dag.preds[v]] + [0])
            if v in prev:
                ready = max(ready, self.end[prev[v]])
            self.end[v] = ready + durations[v]


def windowed_solve(data: SolveInput, constraints: list[Constraint], *, time_limit: float,
                   seed: int, workers: int,
                   broken: Callable[[Sequence[int]], bool]) -> SolveOutput:
    """The hint improved window by window over the T-order, each window's model solved for
    an equal share of what is left of `time_limit` (`_worth_solving` says which), until
    WINDOW_MISSES windows in a row gain nothing; `broken(streams)` tells whether a whole plan
    breaks an engine cap (which no window states)."""
    dag = data.dag
    plan = _Plan(data)
    starts = list(range(0, max(1, dag.size - STEP), STEP))
    stated = [c for c in constraints if not isinstance(c, StreamCap)]
    named = sorted({n for c in stated for n in constraint_nodes(c)})
    position = {n: i for i, n in enumerate(dag.names)}
    named_nodes = {n: position[n] for n in named if n in position}
    reduction = np.asarray(dag.reduction, dtype=np.int64).reshape(-1, 2)
    long_edges = reduction[reduction[:, 1] - reduction[:, 0] > STEP]
    succs = dag.reduction_succs
    changeable = {a: _changeable(dag, succs, long_edges, a, min(dag.size, a + WINDOW_NODES))
                  for a in starts}
    starts = _worth_solving(plan, starts, changeable, time_limit)
    spent, misses = 0.0, 0
    for done, a in enumerate(starts):
        share = (time_limit - spent) / (len(starts) - done)  # CP-SAT overruns small limits
        if share <= 0 or misses == WINDOW_MISSES:
            break
        b = min(dag.size, a + WINDOW_NODES)
        edges = changeable[a]
        window = _window(plan, a, b)
        model = build(window.data)
        _proxy_arcs(model, window)
        known = {n: window.node(v, int(plan.stream[v])) for n, v in named_nodes.items()}
        add_rules(model, stated, {n: k for n, k in known.items() if k is not None},
                  whole=False)
        found = solve(model, time_limit=share, seed=seed, workers=workers,
                      window=True)
        spent += found.deterministic_time
        misses += 1
        if not found.chains:
            continue
        if _gain(plan, window, found.chains, edges) <= 0:
            continue
        new = [np.concatenate([window.parts[k] for k in chain]) for chain in found.chains]
        streams = plan.stream.copy()
        for s, chain in enumerate(new):
            streams[chain] = len(plan.chains) + s  # new ids
        if len(stated) < len(constraints) and broken(streams.tolist()):
            continue
        plan.replace(window.streams, new, a, b)
        misses = 0
    chains = tuple(sorted(tuple(c.tolist()) for c in plan.chains if c is not None))
    splits = int(np.count_nonzero(plan.stream[reduction[:, 0]] != plan.stream[reduction[:, 1]]))
    return SolveOutput(chains, "FEASIBLE", float(splits * (dag.size + 1) + len(chains)), 0.0,
                       round(spent, 3), splits)


def _worth_solving(plan: _Plan, starts: list[int],
                   changeable: dict[int, list[tuple[int, int]]], time_limit: float) -> list[int]:
    """The windows with split pairs to save (among their `changeable` edges), in T-order;
    when the limit cannot give each `MIN_WINDOW_TIME`, only that many, those with the most
    split pairs (the first on a tie)."""
    splits = [sum(1 for u, v in changeable[a] if plan.stream[u] != plan.stream[v])
              for a in starts]
    ranked = sorted((-n, k) for k, n in enumerate(splits) if n)
    kept = ranked[:int(time_limit / MIN_WINDOW_TIME + 1e-9)]
    return [starts[k] for _, k in sorted(kept, key=lambda t: t[1])]


def _window(plan: _Plan, a: int, b: int) -> _Window:
    """The model input of the window [a, b) around the plan's streams."""
    data, dag = plan.data, plan.data.dag
    befores, mids, afters = _cut(plan, a, b)
    offset = len(befores) - a  # window node of graph node v in [a, b)
    parts: list[np.ndarray] = [p for _, _, p in befores]
    parts += [np.asarray([v], dtype=np.int64) for v in range(a, b)]
    parts += [p for _, _, p in afters]
    proxied = {s for _, s, _ in befores + afters}
    window = _Window(  # its model input follows from its proxies
        data, parts, [s for s in plan.live() if s in mids or s in proxied], a, b,
        {s: k for k, (_, s, _) in enumerate(befores)},
        {s: len(befores) + (b - a) + k for k, (_, s, _) in enumerate(afters)})
    hint = []
    for s in window.streams:
        chain = [window.before[s]] if s in window.before else []
        chain += [int(v) + offset for v in mids.get(s, ())]
        chain += [window.after[s]] if s in window.after else []
        hint.append(chain)
    fixed = {k: plan.end[t] for k, (t, _, _) in enumerate(befores)}
    fixed.update({window.after[s]: plan.end[h] - data.durations[h] for h, s, _ in afters})
    edges, release, deadline = _around(plan, window)
    names = [f"{dag.names[t]}~before" for t, _, _ in befores] + list(dag.names[a:b]) \
        + [f"{dag.names[h]}~after" for h, _, _ in afters]
    units = np.asarray(data.units, dtype=np.int64)
    return replace(window, data=SolveInput(
        dag=TaskDag.build(names, [(names[u], names[v]) for u, v in edges],
                          [dag.graphs[int(p[0])] for p in parts]),
        units=[int(units[p].sum()) for p in parts],
        durations=[0 if k in fixed else data.durations[k - offset] for k in range(len(parts))],
        capacity=data.capacity, concurrency=data.concurrency, hint=hint,
        objective=data.objective, window=data.window, fixed_start=fixed, release=release,
        deadline=deadline))


Part = tuple[int, int, np.ndarray]  # (its last or first node, its stream, its nodes)


def _cut(plan: _Plan, a: int, b: int) -> tuple[list[Part], dict[int, np.ndarray], list[Part]]:
    """Each stream's part before [a, b) (where it gets a proxy), in it, and after it."""
    befores: list[Part] = []
    afters: list[Part] = []
    mids: dict[int, np.ndarray] = {}
    for s in plan.live():
        chain = plan.chains[s]
        assert chain is not None
        i, j = np.searchsorted(chain, [a, b]).tolist()
        pre, mid, post = chain[:i], chain[i:j], chain[j:]
        if len(pre) and (len(mid) or len(post) or pre[-1] >= a - NEAR):
            befores.append((int(pre[-1]), s, pre))
        if len(post) and (len(pre) or len(mid) or post[0] < b + NEAR):
            afters.append((int(post[0]), s, post))
        if len(mid):
            mids[s] = mid
    return sorted(befores, key=lambda t: t[0]), mids, sorted(afters, key=lambda t: t[0])


def _around(plan: _Plan, window: _Window
            ) -> tuple[set[tuple[int, int]], dict[int, int], dict[int, int]]:
    """The window's edges (to proxies for outside nodes), and each window node's release
    and deadline from the plan's schedule and limit."""
    dag, durations, end = plan.data.dag, plan.data.durations, plan.end
    edges: set[tuple[int, int]] = set()
    release: dict[int, int] = {}
    deadline: dict[int, int] = {}
    for v in range(window.a, window.b):
        w = window.node(v, -1)
        assert w is not None
        for u in dag.preds[v]:
            k = window.node(u, int(plan.stream[u]))
            if u < window.a:
                release[w] = max(release.get(w, 0), end[u])
            if k is not None:
                edges.add((k, w))
        latest = plan.data.makespan_limit
        for y in dag.succs[v]:
            if y >= window.b:
                latest = min(end[y] - durations[y], latest if latest is not None else end[y])
                k = window.node(y, int(plan.stream[y]))
                if k is not None:
                    edges.add((w, k))
        if latest is not None:
            deadline[w] = latest
    return edges, release, deadline


def _proxy_arcs(model: Model, window: _Window) -> None:
    """Nothing runs before a `before` proxy or after an `after` one on its stream."""
    before, after = set(window.before.values()), set(window.after.values())
    for (u, v), var in model.arc.items():
        if v in before or u in after:
            model.cp.add(var == 0)


def _changeable(dag: TaskDag, succs: Sequence[Sequence[int]], long_edges: np.ndarray, a: int, b: int
                ) -> list[tuple[int, int]]:
    """The reduction edges whose split a window [a, b) may change: an end in it, or across."""
    edges = [(u, v) for v in range(a, b) for u in dag.preds[v] if u < a and v in succs[u]]
    edges += [(u, v) for u in range(a, b) for v in succs[u]]
    across = long_edges[(long_edges[:, 0] < a) & (long_edges[:, 1] >= b)]
    return edges + [(int(u), int(v)) for u, v in across]


def _gain(plan: _Plan, window: _Window, chains: Sequence[Sequence[int]],
          edges: list[tuple[int, int]]) -> int:
    """How much the window's chains lower the whole model's objective (split pairs x (n + 1)
    + streams); the split pairs counted on the edges the window may change."""
    chain_of = {k: c for c, chain in enumerate(chains) for k in chain}
    size = plan.stream.shape[0]

    def group(x: int) -> int:
        k = window.node(x, int(plan.stream[x]))
        return -1 - chain_of[k] if k is not None else int(plan.stream[x])

    old = sum(1 for u, v in edges if plan.stream[u] != plan.stream[v])
    new = sum(1 for u, v in edges if group(u) != group(v))
    return (old - new) * (size + 1) + len(window.streams) - len(chains)
