"""A fast yes/no check of a JSON document against a JSON Schema, column by column.

`schemas.check_document` validates a plan with a compiled `fastjsonschema` validator, which
walks a 100k-node plan entry by entry in Python. This module checks the same schema a column at
a time: every value found at one place of the schema (say `nodes.*.stream`, 100k integers) is
one list, and each keyword is one pass over it with builtins (`set(map(type, column))`,
`min`, `chain.from_iterable`), an order of magnitude faster.

It only says yes or no, and it is strict: `True` means the document follows the schema; `False`
means it may not, and the caller then runs `check_document`, which accepts it after all or
raises the error with its message. Each keyword is checked at least as strictly as JSON Schema
does for the values `json.load` makes (an integer must be an `int`, not `1.0`; `const` and
`enum` also compare the Python type), so a document this module accepts is one the schema
accepts. A schema with a keyword it does not know compiles to `None`: no fast path.

>>> check = compile_check({"type": "object", "required": ["a"],
...                        "properties": {"a": {"type": "integer", "minimum": 0}}})
>>> check({"a": 3}), check({"a": -1}), check({}), check({"a": 1.0})
(True, False, False, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import chain, repeat
from typing import Any

Column = list[Any]
ColumnCheck = Callable[[Column], bool]

_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,), "null": (type(None),)}
_NOTES = frozenset(("$schema", "$id", "title", "description"))  # say nothing about the data
_BRANCHES = frozenset(("then", "else"))  # read by `if`


class _Unsupported(Exception):
    """A keyword (or a form of one) this module does not check."""


def compile_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A function `document -> bool` (True: it follows `schema`), or None when the schema
    uses a keyword this module does not know."""
    try:
        check = _compile(schema)
    except _Unsupported:
        return None
    return lambda document: check([document])


# keyword -> (the Python types of the values it applies to, None: every value; its maker)
_KEYWORDS: dict[str, tuple[tuple[type, ...] | None, Callable[[Any, Mapping[str, Any]],
                                                              ColumnCheck]]] = {}
_NUMBERS: tuple[type, ...] = (int, float)


def _keyword(name: str, applies_to: tuple[type, ...] | None = None
             ) -> Callable[[Callable[[Any, Mapping[str, Any]], ColumnCheck]],
                           Callable[[Any, Mapping[str, Any]], ColumnCheck]]:
    def register(make: Callable[[Any, Mapping[str, Any]], ColumnCheck]
                 ) -> Callable[[Any, Mapping[str, Any]], ColumnCheck]:
        _KEYWORDS[name] = (applies_to, make)
        return make
    return register


def _compile(schema: Any) -> ColumnCheck:
    """A check of a column (every value at one place of the document) against `schema`."""
    groups = _groups(schema)

    def check(column: Column) -> bool:
        if not column:
            return True
        types = set(map(type, column))
        for kinds, checks in groups.items():
            if kinds is None or types <= set(kinds):
                values = column
            elif types.isdisjoint(kinds):
                continue
            else:  # a keyword of one type applies to the values of that type only
                values = [value for value in column if type(value) in kinds]
            if not all(each(values) for each in checks):
                return False
        return True
    return check


def _groups(schema: Any) -> dict[tuple[type, ...] | None, list[ColumnCheck]]:
    """The checks of a schema's keywords, by the types of the values they apply to."""
    if not isinstance(schema, Mapping):
        raise _Unsupported(schema)
    unknown = set(schema) - _NOTES - _BRANCHES - set(_KEYWORDS)
    if unknown or ("if" not in schema and _BRANCHES & set(schema)):
        raise _Unsupported(sorted(unknown))
    groups: dict[tuple[type, ...] | None, list[ColumnCheck]] = {}
    for key, value in schema.items():
        if key in _KEYWORDS:
            kinds, make = _KEYWORDS[key]
            groups.setdefault(kinds, []).append(make(value, schema))
    return groups


@_keyword("type")
def _type(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    names = [value] if isinstance(value, str) else list(value)
    if any(name not in _TYPES for name in names):
        raise _Unsupported(value)
    allowed = frozenset(kind for name in names for kind in _TYPES[name])
    return lambda column: set(map(type, column)) <= allowed


@_keyword("const")
def _const(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    if type(value) not in (str, int):
        raise _Unsupported(value)
    return lambda column: (set(map(type, column)) <= {type(value)}
                           and column.count(value) == len(column))


@_keyword("enum")
def _enum(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    if not all(type(v) is str for v in value):
        raise _Unsupported(value)
    allowed = frozenset(value)
    return lambda column: set(map(type, column)) <= {str} and set(column) <= allowed


@_keyword("minimum", _NUMBERS)
def _minimum(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    return lambda numbers: min(numbers) >= value  # a NaN makes the min NaN or is skipped


@_keyword("maximum", _NUMBERS)
def _maximum(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    return lambda numbers: max(numbers) <= value


@_keyword("minLength", (str,))
def _min_length(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    return lambda strings: min(map(len, strings)) >= value


@_keyword("pattern", (str,))
def _pattern(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    search = re.compile(value).search
    return lambda strings: all(map(search, strings))


@_keyword("required", (dict,))
def _required(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    return lambda objects: all(all(map(dict.__contains__, objects, repeat(key)))
                               for key in value)


@_keyword("properties", (dict,))
def _properties(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    checks = {key: _compile(sub) for key, sub in value.items()}

    def check(objects: Column) -> bool:
        for key, sub in checks.items():
            if all(map(dict.__contains__, objects, repeat(key))):
                found = list(map(dict.__getitem__, objects, repeat(key)))
            else:
                found = [o[key] for o in objects if key in o]
            if found and not sub(found):
                return False
        return True
    return check


@_keyword("additionalProperties", (dict,))
def _additional(value: Any, schema: Mapping[str, Any]) -> ColumnCheck:
    known = frozenset(schema.get("properties", ()))
    if value is False:
        return lambda objects: set(chain.from_iterable(objects)) <= known
    sub = _compile(value)

    def check(objects: Column) -> bool:
        if known:
            found = [v for o in objects for k, v in o.items() if k not in known]
        else:
            found = list(chain.from_iterable(map(dict.values, objects)))
        return not found or sub(found)
    return check


@_keyword("propertyNames", (dict,))
def _property_names(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    sub = _compile(value)

    def check(objects: Column) -> bool:
        names = list(chain.from_iterable(objects))
        return not names or sub(names)
    return check


@_keyword("items", (list,))
def _items(value: Any, _: Mapping[str, Any]) -> ColumnCheck:
    sub = _compile(value)

    def check(arrays: Column) -> bool:
        items = list(chain.from_iterable(arrays))
        return not items or sub(items)
    return check


@_keyword("if")
def _if(value: Any, schema: Mapping[str, Any]) -> ColumnCheck:
    # Only `{"properties": {KEY: {"const": "text"}}}`, which is evaluated exactly: a wrong
    # guess would check a value against the wrong branch.
    props = value.get("properties") if isinstance(value, Mapping) else None
    if set(value) != {"properties"} or not isinstance(props, Mapping) or len(props) != 1:
        raise _Unsupported(value)
    (key, test), = props.items()
    if set(test) != {"const"} or type(test["const"]) is not str:
        raise _Unsupported(value)
    wanted = test["const"]
    then = _compile(schema.get("then", {}))
    other = _compile(schema.get("else", {}))

    def holds(instance: Any) -> bool:
        if type(instance) is not dict or key not in instance:
            return True  # `properties` says nothing about it
        found = instance[key]
        return type(found) is str and found == wanted

    def check(column: Column) -> bool:
        mask = list(map(holds, column))
        yes = [v for v, m in zip(column, mask, strict=True) if m]
        no = [v for v, m in zip(column, mask, strict=True) if not m]
        return (not yes or then(yes)) and (not no or other(no))
    return check
