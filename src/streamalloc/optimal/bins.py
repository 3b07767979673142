"""Lower bounds of the bins (physical streams) that hold tasks of given sizes (task units) in
bins of a capacity: Martello and Toth's L2, and, where the sizes are few, the bound of the
pattern model (the cutting-stock formulation: how many bins take each mix of sizes).

A training step's tasks come in two or three sizes (245-unit AllReduces, 3-unit updates): L2
only divides their units by a bin's, so the 48-layer transformer's 100,685 units fit 101
bins of 997 by L2, with 12 units to spare; but a bin of four AllReduces wastes 2 units
whatever it holds besides, and no mix of bins does with 101: 102, found in 0.01 s.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence

from ortools.sat.python import cp_model

from streamalloc.solver.run import interruptible_solve

PATTERN_SIZES = 4  # distinct item sizes (other than 0) up to which the pattern model runs
PATTERNS = 20_000  # mixes of sizes enumerated at most; more: no pattern bound
PATTERN_TIME = 0.5  # deterministic seconds of CP-SAT; its best bound is kept, proven or not


def bins(sizes: Sequence[int], capacity: int) -> int:
    """The larger of `martello_toth` and `pattern_bins` (where the sizes are few)."""
    found = martello_toth(sizes, capacity)
    if found < 2:
        return found
    return max(found, pattern_bins(sizes, capacity) or 0)


def martello_toth(sizes: Sequence[int], capacity: int) -> int:
    """Martello and Toth's bound L2 of the bins of `capacity` that hold items of `sizes` (an
    item larger than a bin has one to itself, as a task larger than a stream does): for each
    k up to half a bin, the items over capacity - k each need a bin, and so does each item
    over half a bin; those from k to half a bin fill what the latter leave, then bins of
    their own.

    >>> martello_toth([20, 20, 20], 37), martello_toth([15, 15, 15], 37)
    (3, 2)
    >>> martello_toth([30, 10, 10, 10], 37)
    2
    """
    ordered = sorted(sizes)
    total = [0, *itertools.accumulate(ordered)]
    half = capacity / 2
    best = 0
    for k in {0, *(w for w in ordered if w <= half)}:
        low = bisect_left(ordered, k)  # items from k on
        mid = bisect_right(ordered, half)  # items over half a bin from here
        high = bisect_right(ordered, capacity - k)  # items over capacity - k from here
        over_half = high - mid
        left = over_half * capacity - (total[high] - total[mid])
        small = total[mid] - total[low]
        best = max(best, len(ordered) - mid + max(0, math.ceil((small - left) / capacity)))
    return best


def pattern_bins(sizes: Sequence[int], capacity: int) -> int | None:
    """The fewest bins by the pattern model: a pattern is how many items of each size a bin
    holds (their sizes within `capacity`); bins of patterns must cover every item. CP-SAT's
    bound on it (each item larger than a bin has one to itself); None for more than
    PATTERN_SIZES distinct sizes or PATTERNS patterns."""
    alone = sum(1 for s in sizes if s > capacity)
    counts = Counter(s for s in sizes if 0 < s <= capacity)
    kinds = sorted(counts, reverse=True)
    if not kinds:
        return alone
    if len(kinds) > PATTERN_SIZES:
        return None
    patterns = _patterns(kinds, capacity)
    if patterns is None:
        return None
    model = cp_model.CpModel()
    most = sum(counts.values())
    used = [model.new_int_var(0, most, f"x{k}") for k in range(len(patterns))]
    for i, size in enumerate(kinds):
        model.add(sum(p[i] * x for p, x in zip(patterns, used, strict=True) if p[i])
                  >= counts[size])
    model.minimize(sum(used))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = PATTERN_TIME
    solver.parameters.num_workers = 1  # deterministic: the bound depends on the model only
    interruptible_solve(solver, model)
    return alone + math.ceil(solver.best_objective_bound - 1e-6)


def _patterns(kinds: Sequence[int], capacity: int) -> list[tuple[int, ...]] | None:
    """Every mix of the larger sizes with as many of the smallest as the room left takes (a
    cover needs no other), sizes in `kinds` order (descending); None over PATTERNS."""
    ranges = [range(capacity // size + 1) for size in kinds[:-1]]
    if math.prod(len(r) for r in ranges) > PATTERNS:
        return None
    found = []
    for mix in itertools.product(*ranges):
        room = capacity - sum(n * size for n, size in zip(mix, kinds, strict=False))
        if room >= 0:
            found.append((*mix, room // kinds[-1]))
    return found
