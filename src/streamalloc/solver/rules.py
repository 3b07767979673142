"""Rule constraint forms as CP-SAT constraints over the model's `chain` and `arc` variables.

One function per form (`rules.constraints`); nodes the DAG does not hold (no stream) are free,
as in `rules.check`. PinnedStream fixes the stream's id, which `extract` honours when it
numbers the streams; two pins to different ids must be different streams.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping

from ortools.sat.python import cp_model

from streamalloc.rules.constraints import (
    AttachedStreams,
    Constraint,
    DedicatedStream,
    DifferentStreams,
    DisjointGroups,
    PinnedStream,
    SameStream,
    StreamCap,
)
from streamalloc.solver.model import Model, Unsolvable

PAIR_LIMIT = 200_000  # pairwise inequalities beyond this are a model too large to state
MAX_KEY_RUNS = 256  # a cap whose member keys make more intervals is tested with Booleans:
# CP-SAT encodes a domain of many holes value by value (10k-node layered graphs: 10.8M
# Booleans and 8 GB with 9,771 scattered keys; the real models stay far below)


def add_rules(model: Model, constraints: Iterable[Constraint], index: Mapping[str, int], *,
              whole: bool = True) -> None:
    """State every constraint; pins are collected so that different ids stay apart, and where
    the model holds every streamed node (`whole`, not a window's) a pin to stream k needs
    streams 0..k (else the plan has no stream k: the optimal mode wrote none)."""
    pins: dict[int, list[int]] = {}
    constraints = list(constraints)
    caps = [c for c in constraints if isinstance(c, StreamCap)]
    for graph in sorted({c.graph for c in caps}):
        _engine_caps(model, [c for c in caps if c.graph == graph])
    for constraint in constraints:
        if isinstance(constraint, PinnedStream):
            nodes = _known(constraint.nodes, index)
            _same(model, nodes)
            if nodes:
                pins.setdefault(constraint.stream, []).append(nodes[0])
        else:
            _FORMS[type(constraint)](model, constraint, index)
    heads = [nodes[0] for nodes in pins.values()]
    _apart(model, [[h] for h in heads])
    if pins and whole:
        model.cp.add(sum(model.head) >= max(pins) + 1)


def _known(nodes: Iterable[str], index: Mapping[str, int]) -> list[int]:
    return [index[n] for n in nodes if n in index]


def _same(model: Model, nodes: list[int]) -> None:
    for v in nodes[1:]:
        model.cp.add(model.chain[v] == model.chain[nodes[0]])


def _apart(model: Model, groups: list[list[int]]) -> None:
    pairs = sum(len(a) * len(b) for i, a in enumerate(groups) for b in groups[i + 1:])
    if pairs > PAIR_LIMIT:
        raise Unsolvable(f"{pairs} pairwise stream inequalities")
    for i, first in enumerate(groups):
        for second in groups[i + 1:]:
            for a in first:
                for b in second:
                    model.cp.add(model.chain[a] != model.chain[b])


def _same_stream(model: Model, c: SameStream, index: Mapping[str, int]) -> None:
    _same(model, _known(c.nodes, index))


def _different(model: Model, c: DifferentStreams, index: Mapping[str, int]) -> None:
    _apart(model, [_known(c.first, index), _known(c.second, index)])


def _dedicated(model: Model, c: DedicatedStream, index: Mapping[str, int]) -> None:
    nodes = _known(c.nodes, index)
    _same(model, nodes)
    own = set(nodes)
    for (u, v), var in model.arc.items():
        if (u in own) != (v in own):  # no other node joins the stream
            model.cp.add(var == 0)


def _disjoint(model: Model, c: DisjointGroups, index: Mapping[str, int]) -> None:
    _apart(model, [_known(g, index) for g in c.groups])


def _engine_caps(model: Model, caps: list[StreamCap]) -> None:
    """The engine caps of one graph, counted as `rules.check` counts them: a stream's opener
    is its node of least (order, T-order) key. Along each stream the least key so far
    (`least`) passes over the arcs, so a stream's last node holds its opener's key; a cap
    bounds the last nodes whose key is one of its engine's nodes' (a domain of its keys, or
    Booleans when they are too scattered: `_owned`). A cap that fewer nodes count toward than
    it allows cannot bind and is not stated. Where streams span graphs, a stream passes
    through other graphs' nodes: they carry the least key along it and never open it (keys
    above every one of this graph)."""
    dag, order = model.data.dag, caps[0].order
    inside = [dag.graphs[v] == caps[0].graph for v in range(dag.size)]
    nodes = [v for v in range(dag.size) if inside[v] or model.data.span_graphs]
    beyond = (max(order.values(), default=-1) + 2) * dag.size
    key = {v: (order.get(dag.names[v], -1) + 1) * dag.size + v if inside[v] else beyond + v
           for v in nodes}  # unique
    counted = {name: k for k, c in enumerate(caps) for name in c.nodes}
    members = [sorted(key[v] for v in nodes if inside[v] and counted.get(dag.names[v]) == k)
               for k in range(len(caps))]
    binding = [k for k, c in enumerate(caps) if len(members[k]) > c.cap]
    if not binding:
        return
    hinted, tails = _hinted_least(model, key)
    least, opens = _least_keys(model, nodes, key, hinted)
    last = {v: model.cp.new_bool_var(f"last_{v}") for v in nodes}  # v ends its stream
    for v in nodes:
        model.cp.add(last[v] + sum(model.has_succ(v)) == 1)
        model.cp.add_hint(last[v], v in tails)
    for k in binding:
        own = set(members[k])
        if _runs(members[k]) <= MAX_KEY_RUNS:
            others, owned = cp_model.Domain.from_values(members[k]).complement(), None
        else:
            others, owned = None, _owned(model, k, nodes, own, key, opens=opens, hinted=hinted)
        ends = []
        for v in nodes:
            if members[k][0] > key[v]:
                continue  # no node of the engine can open v's stream
            end = model.cp.new_bool_var(f"ends_{v}_{k}")  # v ends a stream cap k opened
            if owned is None:
                model.cp.add_linear_expression_in_domain(least[v], others).only_enforce_if(
                    [last[v], end.negated()])
            else:
                model.cp.add_bool_or([last[v].negated(), owned[v].negated(), end])
            model.cp.add_hint(end, v in tails and hinted[v] in own)
            ends.append(end)
        model.cp.add(sum(ends) <= caps[k].cap)


def _runs(keys: list[int]) -> int:
    """How many intervals of consecutive integers the sorted keys make."""
    return sum(1 for a, b in itertools.pairwise(keys) if b != a + 1) + 1 if keys else 0


def _owned(model: Model, k: int, nodes: list[int], own: set[int], key: Mapping[int, int], *,
           opens: Mapping[tuple[int, int], cp_model.IntVar], hinted: Mapping[int, int]
           ) -> dict[int, cp_model.IntVar]:
    """Per node, is its stream's least key so far one of `own`: its own key's membership at a
    stream's head or where it opens, else its predecessor's (the cap's test of `least` as
    Booleans, for caps whose keys are too scattered for a domain, `MAX_KEY_RUNS`)."""
    owned = {v: model.cp.new_bool_var(f"owned_{v}_{k}") for v in nodes}
    for v in nodes:
        model.cp.add(owned[v] == int(key[v] in own)).only_enforce_if(model.head[v])
        model.cp.add_hint(owned[v], hinted.get(v, key[v]) in own)
    for (u, v), arc in model.arc.items():
        if v not in owned:
            continue  # arcs stay inside a graph
        opening = opens.get((u, v))
        if opening is None:  # v never opens its stream
            model.cp.add(owned[v] == owned[u]).only_enforce_if(arc)
            continue
        model.cp.add(owned[v] == int(key[v] in own)).only_enforce_if([arc, opening])
        model.cp.add(owned[v] == owned[u]).only_enforce_if([arc, opening.negated()])
    return owned


def _hinted_least(model: Model, key: Mapping[int, int]) -> tuple[dict[int, int], set[int]]:
    """The least key so far of every node along the hint's streams, and the streams' last
    nodes: the hint's values of the engine caps' variables (a complete hint is CP-SAT's first
    solution at once; a partial one it must complete by search, which took a 2.9k-node
    training step more than its whole limit)."""
    least: dict[int, int] = {}
    tails: set[int] = set()
    for chain in model.data.hint:
        lowest: int | None = None
        for v in chain:
            if v in key:
                lowest = key[v] if lowest is None else min(lowest, key[v])
                least[v] = lowest
        tails.add(chain[-1])
    return least, tails


def _least_keys(model: Model, nodes: list[int], key: Mapping[int, int],
                hinted: Mapping[int, int]
                ) -> tuple[dict[int, cp_model.IntVar], dict[tuple[int, int], cp_model.IntVar]]:
    """Per node, the least key of its stream up to it: its own at a stream's head, else the
    least of its predecessor's and its own (hinted as `hinted`); and per arc into a node that
    may open its stream, whether it does."""
    least = {v: model.cp.new_int_var(0, key[v], f"least_{v}") for v in nodes}
    for v in nodes:
        model.cp.add(least[v] == key[v]).only_enforce_if(model.head[v])
        model.cp.add_hint(least[v], hinted.get(v, key[v]))
    highest, could_open = -1, set()  # a node after one of greater key may open its stream
    for v in nodes:
        if key[v] < highest:
            could_open.add(v)
        highest = max(highest, key[v])
    opening: dict[tuple[int, int], cp_model.IntVar] = {}
    for (u, v), arc in model.arc.items():
        if v not in least:
            continue  # arcs stay inside a graph
        if v not in could_open:  # every node before v has a lesser key: v never opens
            model.cp.add(least[v] == least[u]).only_enforce_if(arc)
            continue
        opens = opening[(u, v)] = model.cp.new_bool_var(f"opens_{u}_{v}")  # v's key is the
        # least so far
        model.cp.add_hint(opens, hinted.get(u, key[u]) > key[v])
        model.cp.add(least[u] > key[v]).only_enforce_if(opens)
        model.cp.add(least[u] < key[v]).only_enforce_if(opens.negated())
        model.cp.add(least[v] == key[v]).only_enforce_if([arc, opens])
        model.cp.add(least[v] == least[u]).only_enforce_if([arc, opens.negated()])
    return least, opening


def _stated_per_graph(model: Model, c: StreamCap, index: Mapping[str, int]) -> None:
    """Engine caps are stated together per graph (`_engine_caps`): they share the openers."""


def _attached(model: Model, c: AttachedStreams, index: Mapping[str, int]) -> None:
    """Attached streams are given after the main ones (`extract`); nothing to decide here."""


_FORMS: Mapping[type, Callable[..., None]] = {
    SameStream: _same_stream, DifferentStreams: _different, DedicatedStream: _dedicated,
    DisjointGroups: _disjoint, StreamCap: _stated_per_graph, AttachedStreams: _attached,
}
