"""Every partition of a list into blocks: the brute force the solver tests check against."""

from __future__ import annotations

from collections.abc import Iterator


def partitions(items: list[int]) -> Iterator[list[list[int]]]:
    """Each partition of `items` once (Bell(n) of them), blocks in no particular order."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in partitions(rest):
        yield [[first], *partition]
        for k in range(len(partition)):
            yield [*partition[:k], [first, *partition[k]], *partition[k + 1:]]
