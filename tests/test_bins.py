"""Bounds of the bins (physical streams) that hold tasks of given units (`optimal.bins`):
never above the fewest bins, found by brute force on small cases, and the pattern model's
gain where L2 only divides the units."""

from __future__ import annotations

import random

import pytest

from streamalloc.optimal import bins as bins_module
from streamalloc.optimal.bins import bins, martello_toth, pattern_bins


def _fewest_bins(sizes: list[int], capacity: int) -> int:
    """Exact: place the items, largest first, into each open bin with room or a new one."""
    ordered = sorted(sizes, reverse=True)
    best = len(ordered)

    def place(i: int, loads: list[int]) -> None:
        nonlocal best
        if len(loads) >= best:
            return
        if i == len(ordered):
            best = len(loads)
            return
        size = ordered[i]
        if size > capacity:  # alone in a bin
            place(i + 1, [*loads, capacity])
            return
        for k, load in enumerate(loads):
            if load + size <= capacity and load not in loads[:k]:  # equal loads: one try
                loads[k] += size
                place(i + 1, loads)
                loads[k] -= size
        place(i + 1, [*loads, size])

    place(0, [])
    return best


@pytest.mark.parametrize("seed", range(200))
def test_the_bounds_never_exceed_the_fewest_bins(seed: int) -> None:
    rng = random.Random(seed)
    capacity = rng.choice((10, 17, 37, 100))
    kinds = rng.sample(range(1, capacity + 5), k=rng.randint(1, 4))
    sizes = [rng.choice(kinds) for _ in range(rng.randint(1, 9))]
    fewest = _fewest_bins(sizes, capacity)
    assert martello_toth(sizes, capacity) <= fewest
    found = pattern_bins(sizes, capacity)
    assert found is not None and found <= fewest
    assert bins(sizes, capacity) <= fewest


def test_the_pattern_model_counts_what_every_bin_of_large_items_wastes() -> None:
    """The 48-layer transformer step's tasks: 385 AllReduces of 245 units, 2,120 updates of
    3, bins of 997: their units fit 101 bins with 12 to spare, but a bin of four AllReduces
    holds at most 995 units, so they need 102."""
    sizes = [245] * 385 + [3] * 2120
    assert martello_toth(sizes, 997) == 101
    assert pattern_bins(sizes, 997) == bins(sizes, 997) == 102


def test_the_pattern_model_runs_on_a_few_sizes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = [7, 5, 4, 3, 2] * 4  # five sizes
    assert pattern_bins(sizes, 10) is None
    assert pattern_bins([7, 5, 4, 3] * 4, 10) == 8  # four sizes: each 7 alone or with a 3
    monkeypatch.setattr(bins_module, "PATTERNS", 3)  # mixes of 7s and 5s: 2 x 3, over 3
    assert pattern_bins([7, 5, 4] * 3, 10) is None
    assert pattern_bins([1200, 3, 3], 997) == 2  # the task larger than a bin: one to itself
