"""mappings: the values of a key list, from the table's own order when it matches
(`values_of`); a table as two columns (`Columns`) that reads as the dict of its pairs; a
column made as it is read (`Derived`)."""

from __future__ import annotations

import pickle
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamalloc.mappings import Columns, Derived, own_dict, values_of


@given(table=st.dictionaries(st.text(max_size=3), st.integers(), max_size=8),
       keys=st.lists(st.text(max_size=3), max_size=8), default=st.integers())
def test_values_of_is_a_lookup_per_key(table: dict[str, int], keys: list[str],
                                       default: int) -> None:
    proxy = MappingProxyType(table)
    assert values_of(proxy, keys, default) == [table.get(k, default) for k in keys]
    present = [k for k in keys if k in table]
    assert values_of(proxy, present) == [table[k] for k in present]
    assert values_of(proxy, list(table)) == list(table.values())  # the table's own order


def test_values_of_same_keys_other_order() -> None:
    table = {"a": 1, "b": 2, "c": 3}
    assert values_of(table, ["c", "a", "b"]) == [3, 1, 2]


def test_values_of_requires_every_key_without_a_default() -> None:
    with pytest.raises(KeyError):
        values_of({"a": 1, "b": 2}, ["a", "x"])


def test_own_dict_copies() -> None:
    table = {"a": 1}
    copy = own_dict(MappingProxyType(table))
    copy["b"] = 2
    assert table == {"a": 1}


@given(table=st.dictionaries(st.text(max_size=3), st.integers(), max_size=8),
       probes=st.lists(st.text(max_size=3), max_size=8))
def test_columns_read_as_the_dict_of_their_pairs(table: dict[str, int],
                                                 probes: list[str]) -> None:
    columns = Columns(list(table), list(table.values()))
    assert list(columns) == list(table) and len(columns) == len(table)
    assert list(columns.keys()) == list(table.keys())
    assert list(columns.values()) == list(table.values())
    assert list(columns.items()) == list(table.items())
    assert columns == table and dict(columns) == table and own_dict(columns) == table
    for key in probes:
        assert (key in columns) == (key in table)
        assert columns.get(key, -1) == table.get(key, -1)
    assert values_of(columns, list(table)) == list(table.values())
    assert pickle.loads(pickle.dumps(columns)) == table
    assert repr(columns) == f"Columns({table!r})"


@given(table=st.dictionaries(st.text(max_size=3), st.integers(-2, 2), max_size=8),
       values=st.lists(st.integers(-2, 2), max_size=8), reorder=st.booleans())
def test_columns_with_other_values_compare_as_dicts(table: dict[str, int], values: list[int],
                                                    reorder: bool) -> None:
    """A table with the same keys and new values (`with_column`, as a plan's next state) and
    a table of the same pairs in another key order compare as the dicts of their pairs."""
    columns = Columns(list(table), list(table.values()))
    values = [values[i % len(values)] if values else 0 for i in range(len(table))]
    other = columns.with_column(values)
    assert dict(other) == dict(zip(table, values, strict=True))
    assert other.keyed_by(list(table)) and columns.keyed_by(list(table))
    assert (other == columns) == (dict(other) == table)
    keys = list(reversed(table)) if reorder else list(table)
    shuffled = Columns(keys, [table[k] for k in keys])
    assert shuffled == columns and shuffled.keyed_by(list(table)) == (keys == list(table))
    assert values_of(other, keys) == [dict(other)[k] for k in keys]
    assert other.positions() == {k: i for i, k in enumerate(table)}


def test_columns_need_a_value_per_key() -> None:
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        Columns(["a", "b"], [1])
    with pytest.raises(KeyError):
        Columns(["a"], [1])["b"]


@given(tokens=st.lists(st.integers(), max_size=8), probe=st.integers(0, 7))
def test_derived_reads_as_the_list_of_its_items_made_on_read(tokens: list[int],
                                                             probe: int) -> None:
    made: list[int] = []

    def square(token: int) -> int:
        made.append(token)
        return token * token

    derived = Derived(tokens, square)
    assert made == [] and len(derived) == len(tokens)  # nothing made until read
    if probe < len(tokens):
        assert derived[probe] == tokens[probe] ** 2 and made == [tokens[probe]]
    expected = [t * t for t in tokens]
    assert list(derived) == expected and derived[1:3] == expected[1:3]
    assert pickle.loads(pickle.dumps(derived)) == expected  # pickled as its items
    assert Columns([str(t) for t in range(len(tokens))], derived) == \
        {str(i): v for i, v in enumerate(expected)}


def test_values_of_an_empty_table_with_a_default() -> None:
    default: tuple[int, ...] = ()
    found = values_of({}, ["a", "b"], default)
    assert found == [(), ()] and all(value is default for value in found)
