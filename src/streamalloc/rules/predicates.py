"""Small composable predicates for rule `match:` (over nodes) and `when:` (over options) blocks.

A match block is a mapping of leaves, all of which must hold, or a combinator:
`all: [...]`, `any: [...]`, `not: {...}`. Node leaves: `engine` (name or list), `type` (name or
list), `name` (regular expression, searched), `graph` (regular expression on the owning graph's
name), `attr` (a key that must be present, or `{key: K, equals: V}` / `{key: K, in: [...]}`).
Option leaves (for `when:`): `option` with `equals`, `not_equals`, `in` or `set` (bool).

>>> from streamalloc.ir import GraphBuilder
>>> b = GraphBuilder("g"); b.add_node("layer1/attn", "MatMul"); g = b.build()
>>> compile_match({"all": [{"type": "MatMul"}, {"name": "^layer[0-9]+/attn"}]})(g.root.nodes[0])
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from streamalloc.ir.graph import Node

NodePredicate = Callable[[Node], bool]
OptionPredicate = Callable[[Mapping[str, str]], bool]

NODE_LEAVES = ("engine", "type", "name", "graph", "attr")
COMBINATORS = ("all", "any", "not")


def match_all(_: Node) -> bool:
    """The predicate of an absent match block."""
    return True


def compile_match(block: Mapping[str, Any] | None) -> NodePredicate:
    """A node predicate from a (schema-valid) match block."""
    if not block:
        return match_all
    return _joined([_node_leaf(key, value) for key, value in block.items()], every=True)


def needs_attrs(block: Mapping[str, Any] | None) -> bool:
    """Whether a node must carry attributes to match a (schema-valid) match block: an attribute
    test must hold (every attribute test asks for the key's presence)."""
    return any(_leaf_needs_attrs(key, value) for key, value in (block or {}).items())


def _leaf_needs_attrs(key: str, value: Any) -> bool:
    if key == "all":
        return any(map(needs_attrs, value))
    if key == "any":
        return all(map(needs_attrs, value))
    return key not in ("not", "engine", "type", "name", "graph")


def _joined(parts: list[Callable[[Any], bool]], every: bool) -> Callable[[Any], bool]:
    """Every part holds (`every`) or some part does, short-circuit. Rules test every node: one
    or two parts, the usual cases, are tested without a generator per call."""
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        first, second = parts
        return (lambda x: first(x) and second(x)) if every else \
            (lambda x: first(x) or second(x))
    combine = all if every else any
    return lambda x: combine(p(x) for p in parts)


def _names(value: Any) -> frozenset[str]:
    return frozenset([value] if isinstance(value, str) else value)


def _combinator(key: str, value: Any, compile_block: Callable[[Any], Callable[[Any], bool]]
                ) -> Callable[[Any], bool]:
    """all / any / not over sub-blocks, for match and when blocks alike."""
    if key == "not":
        inner = compile_block(value)
        return lambda x: not inner(x)
    parts = [compile_block(v) for v in value]
    return _joined(parts, every=key == "all")


def _node_leaf(key: str, value: Any) -> NodePredicate:
    if key in COMBINATORS:
        return _combinator(key, value, compile_match)
    if key in ("engine", "type"):
        names = _names(value)
        return (lambda n: n.engine in names) if key == "engine" else (lambda n: n.type in names)
    if key in ("name", "graph"):
        pattern = re.compile(value)
        return (lambda n: pattern.search(n.name) is not None) if key == "name" else \
            (lambda n: pattern.search(n.graph) is not None)
    return _attr_leaf(value)


def _attr_leaf(value: Any) -> NodePredicate:
    if isinstance(value, str):
        return lambda n: value in n.attrs
    key = value["key"]
    if "equals" in value:
        expected = value["equals"]
        return lambda n: key in n.attrs and n.attrs[key].value == expected
    if "in" in value:
        choices = list(value["in"])
        return lambda n: key in n.attrs and n.attrs[key].value in choices
    return lambda n: key in n.attrs


def compile_when(block: Mapping[str, Any] | None) -> OptionPredicate:
    """An option predicate from a (schema-valid) when block; absent means always."""
    if not block:
        return lambda _: True
    parts = [_option_leaf(key, value, block) for key, value in block.items()
             if key in ("all", "any", "not", "option")]
    return lambda options: all(p(options) for p in parts)


def _option_leaf(key: str, value: Any, block: Mapping[str, Any]) -> OptionPredicate:
    if key in COMBINATORS:
        return _combinator(key, value, compile_when)
    option = value
    if "equals" in block:
        return lambda o: o.get(option, "") == block["equals"]
    if "not_equals" in block:
        return lambda o: o.get(option, "") != block["not_equals"]
    if "in" in block:
        return lambda o: o.get(option, "") in block["in"]
    want_set = block.get("set", True)
    return lambda o: (option in o and o[option] != "") == want_set
