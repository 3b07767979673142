"""The last few results of a pure function of immutable objects, kept by object identity.

Several layers ask for the same derived data of the same immutable graph in one run (the rule
constraints: the heuristic's self-check, the verifier, the solver; the task units: the split
and the plan). `Recent` remembers a few results under a key built from `id()`s and keeps the
objects behind those ids alive, so an id is never reused while its entry stands; an entry is
returned only when the same objects are asked for again.

>>> memo: Recent[int] = Recent(2)
>>> obj = object()
>>> memo.get(("k", id(obj)), obj) is None
True
>>> memo.put(("k", id(obj)), (obj,), 42)
42
>>> memo.get(("k", id(obj)), obj)
42
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """At most `size` entries; the oldest goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: dict[Hashable, tuple[tuple[object, ...], V]] = {}

    def get(self, key: Hashable, *objects: object) -> V | None:
        """The value stored under `key` for these very objects, else None."""
        entry = self._entries.get(key)
        if entry is None or len(entry[0]) != len(objects):
            return None
        for stored, asked in zip(entry[0], objects, strict=True):  # a loop: asked per task
            if stored is not asked:
                return None
        return entry[1]

    def put(self, key: Hashable, objects: tuple[object, ...], value: V) -> V:
        """Store `value` for `key`, keeping `objects` alive with it; returns `value`."""
        if key not in self._entries and len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (objects, value)
        return value

    def get_or_make(self, key: Hashable, objects: tuple[object, ...], make: Callable[[], V]
                    ) -> V:
        """The value stored under `key` for these very objects, else `make()`, stored so."""
        found = self.get(key, *objects)
        return self.put(key, objects, make()) if found is None else found
