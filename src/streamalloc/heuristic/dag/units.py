"""Units (routes to be merged), the streams built from them, and how candidates are compared.

Shared by the merging strategies (spec 6 step 6). A unit's *level histogram* maps each level to
the load of its nodes there (load = 1 per node, or the node's weight for WeightedLoadBalance).
The *window* of a unit is the 6 levels starting at its earliest level. Units are processed by
earliest level, and within a level by (size desc, interactions desc, peak level load desc,
earliest level asc, unit index asc); "interactions" counts the residual edges between the unit
and other units. Scores compare by total with a 1e-9 tolerance, then component by component
(same tolerance), then by the strategy's own tie-break.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from streamalloc.heuristic.dag.residual import Residual

WINDOW = 6
TOLERANCE = 1e-9
DEFAULT_LIMIT = 8  # GE's stream limit when the mode gives no N


class Unit(msgspec.Struct, frozen=True):
    """One route to place: residual nodes, level histogram, size, earliest level."""

    index: int
    nodes: tuple[int, ...]
    hist: tuple[tuple[int, float], ...]
    size: float
    interactions: int

    @property
    def earliest(self) -> int:
        """The lowest level of the unit's nodes."""
        return self.hist[0][0]

    @property
    def peak(self) -> float:
        """The largest load of the unit on one level."""
        return max(load for _, load in self.hist)

    def window(self) -> range:
        """The levels the unit's placement is judged on."""
        return range(self.earliest, self.earliest + WINDOW)

    def window_load(self) -> float:
        """The unit's own load inside its window."""
        return sum(load for level, load in self.hist if level in self.window())


def make_units(routes: Sequence[tuple[int, ...]], residual: Residual,
               weights: Sequence[float]) -> list[Unit]:
    """One unit per route, in route order."""
    owner = {node: k for k, route in enumerate(routes) for node in route}
    crossing: Counter[int] = Counter()
    for u, v in residual.edges():
        if owner[u] != owner[v]:
            crossing[owner[u]] += 1
            crossing[owner[v]] += 1
    units = []
    for k, route in enumerate(routes):
        hist: dict[int, float] = {}
        for node in route:
            level = residual.levels[node]
            hist[level] = hist.get(level, 0.0) + weights[node]
        units.append(Unit(k, route, tuple(sorted(hist.items())),
                          sum(weights[n] for n in route), crossing[k]))
    return units


def processing_order(units: Sequence[Unit]) -> list[Unit]:
    """Earliest level first; then size, interactions, peak (desc), earliest, index (asc)."""
    return sorted(units, key=lambda u: (u.earliest, -u.size, -u.interactions, -u.peak,
                                        u.earliest, u.index))


class Layout(msgspec.Struct):
    """The streams built so far: per stream its level loads and size; per node its stream."""

    loads: list[dict[int, float]] = msgspec.field(default_factory=list)
    sizes: list[float] = msgspec.field(default_factory=list)
    stream_of: dict[int, int] = msgspec.field(default_factory=dict)

    @property
    def count(self) -> int:
        """Streams opened so far (ids 0..count-1)."""
        return len(self.sizes)

    def window_load(self, stream: int, unit: Unit) -> float:
        """The stream's load inside the unit's window (0 for a stream not opened yet)."""
        if stream >= self.count:
            return 0.0
        return sum(self.loads[stream].get(level, 0.0) for level in unit.window())

    def edge_weights(self, unit: Unit, neighbours: Sequence[Sequence[int]]) -> Counter[int]:
        """Per stream: residual edges between the unit and nodes already placed there.

        `neighbours` lists each residual edge at both ends (`Residual.neighbours`); a unit
        is never placed before itself, so every counted neighbour is outside the unit.
        """
        weights: Counter[int] = Counter()
        for node in unit.nodes:
            for other in neighbours[node]:
                if other in self.stream_of:
                    weights[self.stream_of[other]] += 1
        return weights

    def place(self, unit: Unit, stream: int) -> None:
        """Put the unit's nodes on `stream` (opening it when it is new)."""
        if stream == self.count:
            self.loads.append({})
            self.sizes.append(0.0)
        loads = self.loads[stream]
        for level, load in unit.hist:
            loads[level] = loads.get(level, 0.0) + load
        self.sizes[stream] += unit.size
        self.stream_of.update(dict.fromkeys(unit.nodes, stream))


def neighbour_streams(weights: Counter[int], layout: Layout) -> list[int]:
    """Streams of placed neighbouring units: edge weight desc, stream size asc, id asc."""
    return sorted(weights, key=lambda s: (-weights[s], layout.sizes[s], s))


def cross_edges(weights: Counter[int], stream: int) -> int:
    """Edges from the unit to placed nodes on other streams than `stream`."""
    return sum(w for s, w in weights.items() if s != stream)


class Score(msgspec.Struct, frozen=True):
    """One candidate stream's score: the weighted total and the raw components."""

    stream: int
    total: float
    components: tuple[float, ...]
    opens: bool = False

    def better_than(self, other: Score, by_id: bool) -> bool:
        """Lower total, then lower components; with `by_id` the smaller stream on a full tie."""
        if abs(self.total - other.total) > TOLERANCE:
            return self.total < other.total
        for mine, theirs in zip(self.components, other.components, strict=True):
            if abs(mine - theirs) > TOLERANCE:
                return mine < theirs
        return by_id and self.stream < other.stream


def best(scores: Sequence[Score], by_id: bool) -> Score:
    """The winning score; without `by_id` a tie keeps the earlier candidate."""
    winner = scores[0]
    for score in scores[1:]:
        if score.better_than(winner, by_id):
            winner = score
    return winner


def unique(streams: Sequence[int]) -> list[int]:
    """Candidates without repeats, first occurrence kept."""
    return list(dict.fromkeys(streams))
