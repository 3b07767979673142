"""`Rule.matching` selects exactly the nodes `Rule.matches` accepts, in order, while testing only
nodes with attributes when the match block needs one (`predicates.needs_attrs`)."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from streamalloc.ir.attrs import AttrValue, freeze_attrs
from streamalloc.ir.graph import Node
from streamalloc.rules.model import Rule
from streamalloc.rules.predicates import compile_match, compile_when, needs_attrs

# (match block, whether a node must carry attributes to match it)
BLOCKS: list[tuple[dict[str, Any], bool]] = [
    ({}, False),
    ({"attr": "_parallel_group"}, True),
    ({"attr": {"key": "group", "equals": "a"}}, True),
    ({"attr": {"key": "group", "in": ["a", "b"]}}, True),
    ({"not": {"attr": "_parallel_group"}}, False),
    ({"type": "Relu"}, False),
    ({"engine": "AIcoreEngine", "attr": "group"}, True),  # two leaves: both must hold
    ({"all": [{"attr": "_parallel_group"}, {"not": {"attr": "_user_stream_label"}}]}, True),
    ({"all": [{"type": "Relu"}, {"not": {"attr": "group"}}]}, False),
    ({"any": [{"attr": "group"}, {"attr": "_parallel_group"}]}, True),
    ({"any": [{"attr": "group"}, {"type": "Relu"}]}, False),
    ({"name": "^n1"}, False),
]


def _nodes() -> list[Node]:
    nodes = []
    kinds = product(["Relu", "Add"], [{}, {"group": "a"}, {"group": "c"}, {"_parallel_group": "1"},
                                      {"_parallel_group": "1", "_user_stream_label": "x"}])
    for i, (op_type, attrs) in enumerate(kinds):
        frozen = freeze_attrs({k: AttrValue("string", v) for k, v in attrs.items()})
        nodes.append(Node(f"n{i}", op_type, "AIcoreEngine", "g", attrs=frozen))
    return nodes


@pytest.mark.parametrize(("block", "needs"), BLOCKS)
def test_matching_selects_what_matches_accepts(block: dict[str, Any], needs: bool) -> None:
    assert needs_attrs(block) is needs
    rule = Rule("r", "same-stream", 0, match=compile_match(block), when=compile_when(None),
                match_block=block)
    nodes = _nodes()
    expected = [n for n in nodes if rule.matches(n)]
    assert list(rule.matching(nodes)) == expected
    assert list(rule.matching(iter(nodes))) == expected  # any iterable, walked once
    if needs:  # the shortcut must not hide a node without attributes that matches
        assert all(n.attrs for n in expected)
