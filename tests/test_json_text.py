"""`json_text.indented_json` writes exactly `json.dumps(document, indent=1)`, whatever the
document holds, whichever encoder writes each piece and however large containers are sliced."""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.json_text import indented_json

_KEYS = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.booleans(), st.none(),
                  st.floats(allow_nan=False, width=16))
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN, infinities, 1e-05 and 1e+16: json's text, not msgspec's
    st.text(), st.text(alphabet=st.characters(max_codepoint=0x7f)),  # DEL and controls
    st.sampled_from(["assign-by-dependency", "b0_join", "\u00e9", "\x7f", "a\\\"b"]))
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.lists(inner, max_size=6).map(tuple),
                            st.dictionaries(st.text(max_size=6), inner, max_size=6),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=40)


def _same(document: Any, chunk: int) -> None:
    assert b"".join(indented_json(document, chunk)) == json.dumps(document, indent=1).encode()


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS, st.integers(1, 4))
def test_text_is_json_dumps_indent_1(document: Any, chunk: int) -> None:
    _same(document, chunk)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _DOCUMENTS, max_size=5), st.integers(1, 3))
def test_top_level_object_written_value_by_value(document: dict[str, Any], chunk: int) -> None:
    _same(document, chunk)


class _Kind(IntEnum):
    EVENT = 1


def test_plan_like_records_sliced_at_every_size() -> None:
    records = {f"n{i}": {"stream": i % 3, "physical_stream": -1, "attached_streams": [],
                         "rule": "initial"} for i in range(10)}
    document = {"format": "streamalloc.plan/v1", "nodes": records,
                "streams": {"0": [f"n{i}" for i in range(10)]}, "events": [],
                "solver": {"gap": 1e-05, "bound": None, "objective": 12.0},
                "kinds": [_Kind.EVENT, True]}
    for chunk in range(1, 12):
        _same(document, chunk)


def test_sections_given_as_plain_are_written_unchecked_with_the_same_text() -> None:
    records = {f"n{i}": {"stream": i % 3, "attached_streams": [i, 2**70], "rule": "initial"}
               for i in range(10)}
    document = {"nodes": records, "solver": {"gap": 1e-05, "objective": 1e16}}
    for chunk in (1, 4, 100):
        text = b"".join(indented_json(document, chunk, plain={"nodes"}))
        assert text == json.dumps(document, indent=1).encode()
    # a float in a section given as plain is the caller's mistake: msgspec's text, not json's
    wrong = {"nodes": {"a": 1e16}}
    assert b"".join(indented_json(wrong, plain={"nodes"})) != json.dumps(wrong, indent=1).encode()
    assert b"".join(indented_json(wrong)) == json.dumps(wrong, indent=1).encode()


def test_non_string_top_level_keys_and_scalars() -> None:
    for document in ({1: {"a": [1]}, "b": 2}, 1.5, "x", None, [], {}, [[], {}], 2**80):
        _same(document, 1)
