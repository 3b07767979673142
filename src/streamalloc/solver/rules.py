"""Rule constraint forms as CP-SAT constraints over the model's `chain` and `arc` variables.

One function per form (`rules.constraints`); nodes the DAG does not hold (no stream) are free,
as in `rules.check`. PinnedStream fixes the stream's id, which `extract` honours when it
numbers the streams; two pins to different ids must be different streams.
"""

from __future__ import annotations

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
from streamalloc.solver.model import Model

PAIR_LIMIT = 200_000  # pairwise inequalities beyond this are a model too large to state


def add_rules(model: Model, constraints: Iterable[Constraint], index: Mapping[str, int]) -> None:
    """State every constraint; pins are collected so that different ids stay apart."""
    pins: dict[int, list[int]] = {}
    constraints = list(constraints)
    caps = {c.graph: c.order for c in constraints if isinstance(c, StreamCap)}
    for graph, order in caps.items():
        _openers_first(model, graph, order)
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


def _known(nodes: Iterable[str], index: Mapping[str, int]) -> list[int]:
    return [index[n] for n in nodes if n in index]


def _same(model: Model, nodes: list[int]) -> None:
    for v in nodes[1:]:
        model.cp.add(model.chain[v] == model.chain[nodes[0]])


def _apart(model: Model, groups: list[list[int]]) -> None:
    pairs = sum(len(a) * len(b) for i, a in enumerate(groups) for b in groups[i + 1:])
    if pairs > PAIR_LIMIT:
        raise ValueError(f"{pairs} pairwise stream inequalities")
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


def _cap(model: Model, c: StreamCap, index: Mapping[str, int]) -> None:
    # arcs stay inside a graph, so a stream begins in the graph at a node without predecessor
    heads = [1 - sum(model.has_pred(v)) for v in _known(c.nodes, index)]
    if heads:
        model.cp.add(sum(heads) <= c.cap)


def _openers_first(model: Model, graph: str, order: Mapping[str, int]) -> None:
    """`rules.check` takes a stream's node of least `order` (then first) as its opener, which
    `_cap` counts as the stream's first node: so a stream begins with a node of least order.
    Only a node after one of greater order (in T-order) needs a say in its stream's head."""
    dag = model.data.dag
    nodes = [v for v in range(dag.size) if dag.graphs[v] == graph]
    rank = [order.get(dag.names[v], -1) for v in nodes]
    highest = -1
    for k, v in enumerate(nodes):
        if rank[k] < highest:
            heads = [h for j, h in enumerate(nodes[:k]) if rank[j] <= rank[k]] + [v]
            model.cp.add_linear_expression_in_domain(model.chain[v],
                                                     cp_model.Domain.from_values(heads))
        highest = max(highest, rank[k])


def _attached(model: Model, c: AttachedStreams, index: Mapping[str, int]) -> None:
    """Attached streams are given after the main ones (`extract`); nothing to decide here."""


_FORMS: Mapping[type, Callable[..., None]] = {
    SameStream: _same_stream, DifferentStreams: _different, DedicatedStream: _dedicated,
    DisjointGroups: _disjoint, StreamCap: _cap, AttachedStreams: _attached,
}
