"""LoadBalance (and WeightedLoadBalance) merging of units into streams (spec 6 step 6).

Candidates, at most 6: the streams of already placed neighbouring units (edge weight desc,
stream size asc, id asc), the 3 lightest streams in the unit's window (window load asc, id
asc), then a new stream while fewer than the limit are open; repeats dropped, the list cut
after 6 entries. Score = 3·(cross-stream edges) + 4·(window peak + window variance) +
1·(stream size after placement) + 2·(opens a new stream), where the window loads are those of
every open stream (and the new one) with the unit added to the candidate, the peak is their
maximum and the variance their population variance. Ties: components, then smaller stream id.

WeightedLoadBalance uses the same merger with loads and sizes measured in execution time
(`allocate.node_weights`) instead of node counts; with equal times it is LoadBalance.

>>> from collections import Counter
>>> from streamalloc.heuristic.dag.units import Layout, Unit
>>> layout = Layout([{0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}], [4.0], dict.fromkeys(range(4), 0))
>>> unit = Unit(1, (4, 5, 6), ((0, 1.0), (1, 1.0), (2, 1.0)), 3.0, 1)
>>> [(s.stream, s.total) for s in scores(unit, layout, Counter({0: 1}), 2)]
[(0, 35.0), (1, 25.0)]
"""

from __future__ import annotations

from collections import Counter

from streamalloc.heuristic.dag.units import (
    Layout,
    Score,
    Unit,
    cross_edges,
    neighbour_streams,
    unique,
)

MAX_CANDIDATES = 6
LIGHTEST = 3


def candidates(unit: Unit, layout: Layout, weights: Counter[int], limit: int) -> list[int]:
    """Neighbour streams, the 3 lightest in the window, a new stream; at most 6."""
    lightest = sorted(range(layout.count), key=lambda s: (layout.window_load(s, unit), s))
    new = [layout.count] if layout.count < limit else []
    found = unique([*neighbour_streams(weights, layout), *lightest[:LIGHTEST], *new])
    return found[:MAX_CANDIDATES]


def score(unit: Unit, layout: Layout, weights: Counter[int], stream: int) -> Score:
    """The LoadBalance score of putting `unit` on `stream` (a new one when == layout.count)."""
    opens = stream == layout.count
    loads = [layout.window_load(s, unit) for s in range(layout.count + opens)]
    loads[stream] += unit.window_load()
    mean = sum(loads) / len(loads)
    balance = max(loads) + sum((x - mean) ** 2 for x in loads) / len(loads)
    size = (0.0 if opens else layout.sizes[stream]) + unit.size
    cross = cross_edges(weights, stream)
    total = 3 * cross + 4 * balance + size + 2 * opens
    return Score(stream, total, (cross, balance, size, float(opens)), opens)


def scores(unit: Unit, layout: Layout, weights: Counter[int], limit: int) -> tuple[Score, ...]:
    """Every candidate's score, in candidate order."""
    return tuple(score(unit, layout, weights, s) for s in candidates(unit, layout, weights, limit))
