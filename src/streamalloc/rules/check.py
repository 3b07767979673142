"""Whether an allocation satisfies rule constraints: one checker per constraint form, shared by
the heuristic's own check, the verifier and the tests. Linear in the constrained nodes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from functools import cached_property

import msgspec
import numpy as np

from streamalloc.facts import INVALID
from streamalloc.ir.graph import ComputeGraph, Graph
from streamalloc.mappings import values_of
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


class Placement(msgspec.Struct, frozen=True):
    """Logical stream and attached streams per node (INVALID: no stream)."""

    streams: Mapping[str, int]
    attached: Mapping[str, tuple[int, ...]]

    def stream(self, node: str) -> int:
        """The node's logical stream, INVALID when it has none."""
        return self.streams.get(node, INVALID)


class Broken(msgspec.Struct, frozen=True):
    """A constraint that does not hold: what is wrong and the nodes that break it."""

    constraint: Constraint
    message: str
    nodes: tuple[str, ...]

    @property
    def rule(self) -> str:
        """The rule that stated the constraint."""
        return self.constraint.rule


def broken(constraints: list[Constraint], graph: Graph, placement: Placement) -> list[Broken]:
    """The constraints that `placement` breaks, in the given order."""
    result = []
    derived = _Derived(graph, placement)
    for constraint in constraints:
        found = _CHECKS[type(constraint)](constraint, graph, placement, derived)
        if found is not None:
            result.append(Broken(constraint, *found))
    return result


Found = tuple[str, tuple[str, ...]] | None


class _Derived:
    """What several checks read of one placement, computed when first asked."""

    def __init__(self, graph: Graph, placement: Placement) -> None:
        self.graph = graph
        self.placement = placement
        self._openers: dict[tuple[str, int], dict[int, str]] = {}

    @cached_property
    def users(self) -> dict[int, list[str]]:
        """The nodes of each stream."""
        users: dict[int, list[str]] = defaultdict(list)
        for name, stream in self.placement.streams.items():
            if stream != INVALID:
                users[stream].append(name)
        return users

    def openers(self, graph: str, order: Mapping[str, int]) -> dict[int, str]:
        """Per stream of graph `graph`, the node that opened it: its node of least `order`,
        then first in G-order (a node not in `order` ranks -1; every engine cap of a graph
        shares one order)."""
        key = (graph, id(order))
        if key not in self._openers:
            self._openers[key] = _openers(self.graph.graph(graph), self.placement.streams,
                                          order)
        return self._openers[key]


def _openers(compute: ComputeGraph, streams: Mapping[str, int], order: Mapping[str, int]
             ) -> dict[int, str]:
    """`_Derived.openers` of one graph, by a sort of its placed nodes (stream, rank, G-order)
    rather than a loop over its nodes."""
    names = list(compute.index)  # G-order
    stream = np.array(values_of(streams, names, INVALID), np.int64)
    placed = np.flatnonzero(stream != INVALID)
    rank = np.array(values_of(order, names, -1), np.int64)[placed]
    ordered = placed[np.lexsort((placed, rank, stream[placed]))]
    on = stream[ordered]
    first = np.ones(len(ordered), bool)
    first[1:] = on[1:] != on[:-1]
    return dict(zip(on[first].tolist(), map(names.__getitem__, ordered[first].tolist()),
                    strict=True))


def _placed(nodes: tuple[str, ...], placement: Placement) -> list[tuple[str, int]]:
    return [(n, s) for n in nodes if (s := placement.stream(n)) != INVALID]


def _same(c: SameStream, _: Graph, placement: Placement, __: _Derived) -> Found:
    placed = _placed(c.nodes, placement)
    if len({s for _, s in placed}) <= 1:
        return None
    common = Counter(s for _, s in placed).most_common(1)[0][0]
    odd = tuple(n for n, s in placed if s != common)
    where = ", ".join(f"{n} on {s}" for n, s in placed if s != common)
    return f"nodes must share a stream; most are on stream {common}, but {where}", odd


def _different(c: DifferentStreams, _: Graph, placement: Placement, __: _Derived) -> Found:
    theirs = {s: n for n, s in _placed(c.second, placement)}
    clash = [(n, s) for n, s in _placed(c.first, placement) if s in theirs]
    if not clash:
        return None
    n, s = clash[0]
    return (f"{n} shares stream {s} with {theirs[s]} ({len(clash)} node(s) in all)",
            tuple(sorted({n for n, _ in clash} | {theirs[s] for _, s in clash})))


def _dedicated(c: DedicatedStream, _: Graph, placement: Placement, derived: _Derived
               ) -> Found:
    placed = _placed(c.nodes, placement)
    streams = {s for _, s in placed}
    if len(streams) > 1:
        return f"nodes must share one stream, found streams {sorted(streams)}", c.nodes
    if not streams:
        return None
    (stream,) = streams
    own = set(c.nodes)
    others = [n for n in derived.users.get(stream, ()) if n not in own]
    if not others:
        return None
    return (f"stream {stream} must hold only {', '.join(c.nodes)}, but also holds "
            f"{', '.join(others[:3])}" + (" ..." if len(others) > 3 else ""),
            (*c.nodes, *others))


def _pinned(c: PinnedStream, _: Graph, placement: Placement, __: _Derived) -> Found:
    off = [(n, s) for n, s in _placed(c.nodes, placement) if s != c.stream]
    if not off:
        return None
    where = ", ".join(f"{n} on {s}" for n, s in off[:3])
    return f"nodes must be on stream {c.stream}: {where}", tuple(n for n, _ in off)


def _disjoint(c: DisjointGroups, _: Graph, placement: Placement, __: _Derived) -> Found:
    owner: dict[int, tuple[int, str]] = {}
    for index, group in enumerate(c.groups):
        for name, stream in _placed(group, placement):
            first = owner.setdefault(stream, (index, name))
            if first[0] != index:
                return (f"{first[1]} and {name} are in different groups but share stream "
                        f"{stream}", (first[1], name))
    return None


def _cap(c: StreamCap, _: Graph, __: Placement, derived: _Derived) -> Found:
    opened = sorted((s, n) for s, n in derived.openers(c.graph, c.order).items()
                    if n in c.members)
    if len(opened) <= c.cap:
        return None
    where = ", ".join(f"{s} ({n})" for s, n in opened)
    return (f"engine {c.engine} may open at most {c.cap} stream(s) in graph {c.graph}, but "
            f"{len(opened)} are opened by its nodes: {where}", tuple(n for _, n in opened))


def _attached(c: AttachedStreams, _: Graph, placement: Placement, derived: _Derived
              ) -> Found:
    for name in c.nodes:
        if placement.stream(name) == INVALID:
            continue
        extra = placement.attached.get(name, ())
        if not extra:
            return f"{name} asks for an attached stream but has none", (name,)
        main = [s for s in extra if s in derived.users]
        if main:
            return f"{name}'s attached stream {main[0]} is also a main stream", (name,)
    return None


_CHECKS: Mapping[type, Callable[..., Found]] = {
    SameStream: _same, DifferentStreams: _different, DedicatedStream: _dedicated,
    PinnedStream: _pinned, DisjointGroups: _disjoint, StreamCap: _cap,
    AttachedStreams: _attached,
}
