"""Reading read-only mappings fast. Immutable results hold their tables as `MappingProxyType`,
and `dict(proxy)` reads a proxy key by key, ten times slower than copying the dict behind it
(15 against 1.3 ms for 100k entries): a pass that changes a plan starts from such a copy
(`own_dict`). A table built in the order of a key list gives its values for that list at C
speed (`values_of`), where looking each key up costs a call per key. A table read mostly
whole, in order, can be two columns (`Columns`): made without hashing a key; a column of values
few readers ask for can be made as they read it (`Derived`)."""

from __future__ import annotations

from collections.abc import (
    Callable,
    ItemsView,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from itertools import repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Any, TypeVar

_K = TypeVar("_K")
_V = TypeVar("_V")
_T = TypeVar("_T")
_REQUIRED: Any = object()  # `values_of` without a default: every key must be there


def own_dict(mapping: Mapping[_K, _V]) -> dict[_K, _V]:
    """A new dict with the entries of `mapping`, in its order.

    >>> own_dict(MappingProxyType({"a": 1}))
    {'a': 1}
    """
    if isinstance(mapping, MappingProxyType):
        return mapping.copy()  # the dict behind the proxy, copied at C speed
    if isinstance(mapping, Columns):
        return dict(zip(mapping._keys, mapping._values, strict=True))
    return dict(mapping)


def values_of(mapping: Mapping[_K, _V], keys: Sequence[_K], default: Any = _REQUIRED
              ) -> list[_V]:
    """`[mapping[k] for k in keys]` (`mapping.get(k, default)` with a default), at C speed:
    when the mapping holds exactly `keys` in that order (a table built in the same order as
    the key list, the common case), its values as they stand, else looked up key by key.

    >>> values_of({"a": 1, "b": 2}, ["a", "b"]), values_of({"a": 1, "b": 2}, ["b", "c"], 0)
    ([1, 2], [2, 0])
    >>> values_of({}, ["a", "b"], ())
    [(), ()]
    """
    if isinstance(mapping, Columns) and mapping.keyed_by(keys):
        return list(mapping._values)
    if len(mapping) == len(keys) and list(mapping) == list(keys):
        return list(mapping.values())
    if not mapping and default is not _REQUIRED:  # a table of the few keys that have a value
        return [default] * len(keys)
    if default is _REQUIRED:
        return list(map(mapping.__getitem__, keys))
    return list(map(mapping.get, keys, repeat(default)))


def picked(table: Mapping[_K, _V] | Sequence[_V], keys: Sequence[Any]) -> tuple[_V, ...]:
    """`tuple(table[k] for k in keys)`, gathered at C speed by an itemgetter.

    >>> picked(["a", "b", "c"], [2, 0]), picked({"x": 1}, ["x"]), picked({}, [])
    (('c', 'a'), (1,), ())
    """
    if len(keys) > 1:
        return itemgetter(*keys)(table)  # type: ignore[no-any-return]
    return tuple(table[k] for k in keys)  # type: ignore[index]


class Columns(Mapping[_K, _V]):
    """A read-only mapping of `keys` (distinct) to `values`, two parallel columns in their
    order: iterating it reads the columns, and the index a lookup needs is made on the first
    one. An allocation's per-node tables are read whole by sync and the plan, and looked up
    for a few nodes (reports, messages): building them as dicts cost 45 ms at 100k nodes.

    >>> table = Columns(["a", "b"], [1, 2])
    >>> table["b"], list(table.items()), table == {"b": 2, "a": 1}
    (2, [('a', 1), ('b', 2)], True)
    """

    __slots__ = ("_index", "_keys", "_values")

    def __init__(self, keys: Sequence[_K], values: Sequence[_V],
                 index: Mapping[_K, int] | None = None) -> None:
        """`index`, when the caller has it: each key's position (made on the first lookup
        otherwise)."""
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys but {len(values)} values")
        self._keys, self._values = keys, values
        self._index = index

    def positions(self) -> Mapping[_K, int]:
        """Each key's position in the columns."""
        index = self._index
        if index is None:
            index = self._index = dict(zip(self._keys, range(len(self._keys)), strict=True))
        return index

    def column(self) -> Sequence[_V]:
        """The values, in key order (not to be changed: tables share their columns)."""
        return self._values

    def with_column(self, values: Sequence[_T]) -> Columns[_K, _T]:
        """The same keys (and their index) with other values."""
        return Columns(self._keys, values, self._index)

    def keyed_by(self, keys: Sequence[object]) -> bool:
        """Are `keys` this table's keys, in its order?"""
        mine = self._keys
        if mine is keys:
            return True
        return len(mine) == len(keys) and _as_list(mine) == _as_list(keys)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Columns) and other.keyed_by(self._keys):
            return _as_list(self._values) == _as_list(other._values)  # one order: by column
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a dict

    def __getitem__(self, key: _K) -> _V:
        return self._values[self.positions()[key]]

    def __contains__(self, key: object) -> bool:
        return key in self.positions()

    def __iter__(self) -> Iterator[_K]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> KeysView[_K]:
        return _ColumnKeys(self)

    def values(self) -> ValuesView[_V]:
        return _ColumnValues(self)

    def items(self) -> ItemsView[_K, _V]:
        return _ColumnItems(self)

    def __repr__(self) -> str:
        return f"Columns({dict(self.items())!r})"


def _as_list(items: Sequence[_T]) -> list[_T]:
    return items if type(items) is list else list(items)


class _ColumnKeys(KeysView[_K]):
    """The keys column as a view (iterated at C speed: `Mapping`'s view iterates by a
    generator)."""

    _mapping: Columns[_K, object]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._mapping._keys)


class _ColumnValues(ValuesView[_V]):
    """The values column as a view."""

    _mapping: Columns[object, _V]

    def __iter__(self) -> Iterator[_V]:
        return iter(self._mapping._values)


class _ColumnItems(ItemsView[_K, _V]):
    """Both columns, zipped, as a view."""

    _mapping: Columns[_K, _V]

    def __iter__(self) -> Iterator[tuple[_K, _V]]:
        return zip(self._mapping._keys, self._mapping._values, strict=True)


class Derived(Sequence[_V]):
    """A read-only sequence of `make(token)` for each of `tokens`, made when an item is read
    (`make` caches per token if it must); pickled as the list of its items.

    >>> made = Derived(["a", "bb"], len)
    >>> list(made), made[1], len(made)
    ([1, 2], 2, 2)
    """

    __slots__ = ("_make", "_tokens")

    def __init__(self, tokens: Sequence[_T], make: Callable[[_T], _V]) -> None:
        self._tokens, self._make = tokens, make

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._make(t) for t in self._tokens[index]]
        return self._make(self._tokens[index])

    def __iter__(self) -> Iterator[_V]:
        return map(self._make, self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def __reduce__(self) -> tuple[type[list[_V]], tuple[list[_V]]]:
        return list, (list(self),)
