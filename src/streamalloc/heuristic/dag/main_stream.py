"""MainStream merging of units into streams (spec 6 step 6).

A *single level* is a level holding one residual node in the whole graph. A unit whose earliest
level is single, or all of whose nodes sit on single levels, is forced onto stream 0. Otherwise
the candidates are stream 0 (once open), the neighbour streams (edge weight desc, stream size
asc, id asc), the 3 least conflicting streams (overlap asc, id asc), then a new stream while
fewer than the limit are open; repeats dropped (no cap on the count). Score = 3·(cross-stream
edges) + 4·(level overlap with the stream in the window) + 2·(opens a new stream) −
4·(the unit's nodes on single levels, on stream 0 only). The overlap is the sum, over the
window's levels, of the unit's load times the stream's load. Ties: components, then the
earlier candidate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Set

from streamalloc.heuristic.dag.units import (
    Layout,
    Score,
    Unit,
    cross_edges,
    neighbour_streams,
    unique,
)

LEAST_CONFLICTING = 3
MAIN = 0


def single_levels(levels: tuple[int, ...]) -> frozenset[int]:
    """Levels with exactly one residual node.

    >>> sorted(single_levels((0, 1, 1, 2)))
    [0, 2]
    """
    counts = Counter(levels)
    return frozenset(level for level, n in counts.items() if n == 1)


def forced(unit: Unit, single: Set[int]) -> bool:
    """Must the unit go to the main stream?"""
    return unit.earliest in single or all(level in single for level, _ in unit.hist)


def overlap(unit: Unit, layout: Layout, stream: int) -> float:
    """The unit's and the stream's loads multiplied level by level over the window."""
    if stream >= layout.count:
        return 0.0
    window = unit.window()
    return sum(load * layout.loads[stream].get(level, 0.0) for level, load in unit.hist
               if level in window)


def candidates(unit: Unit, layout: Layout, weights: Counter[int], limit: int) -> list[int]:
    """Stream 0, neighbour streams, the 3 least conflicting streams, a new stream."""
    main = [MAIN] if layout.count else []
    calm = sorted(range(layout.count), key=lambda s: (overlap(unit, layout, s), s))
    new = [layout.count] if layout.count < limit else []
    return unique([*main, *neighbour_streams(weights, layout), *calm[:LEAST_CONFLICTING], *new])


def score(unit: Unit, layout: Layout, weights: Counter[int], stream: int,
          single: Set[int]) -> Score:
    """The MainStream score of putting `unit` on `stream` (a new one when == layout.count)."""
    opens = stream == layout.count
    cross = cross_edges(weights, stream)
    conflict = overlap(unit, layout, stream)
    bonus = sum(load for level, load in unit.hist if level in single) if stream == MAIN else 0.0
    total = 3 * cross + 4 * conflict + 2 * opens - 4 * bonus
    return Score(stream, total, (cross, conflict, float(opens), -bonus), opens)


def scores(unit: Unit, layout: Layout, weights: Counter[int], limit: int,
           single: Set[int]) -> tuple[Score, ...]:
    """Every candidate's score, in candidate order."""
    return tuple(score(unit, layout, weights, s, single)
                 for s in candidates(unit, layout, weights, limit))
