"""JSON text by msgspec's C codec where it gives what the json module gives: the bytes of
`json.dumps(document, indent=1)` (`indented_json`); and `json.loads` that rejects a repeated
key (`decode_json`).

Python's json module runs in pure Python as soon as `indent` is set: half a second for the plan
of a 100k-node graph, a tenth of the whole `allocate`. msgspec encodes and indents the same plan
in a twentieth of that, with the same text for what a plan holds: strings of printable ASCII,
integers, booleans, null, lists and string-keyed objects. For the rest json's own text is
kept: floats (msgspec writes `1e16` where json writes `1e+16`), non-ASCII or DEL characters
(json escapes them), non-string keys and subclasses of the JSON types.

Memory stays bounded: the top-level object is written value by value and a larger container
slice by slice (`CHUNK` items), so a million-node plan never exists as one text. A piece's text
is indented at its depth by shifting its line breaks (an encoded string never holds a raw one).

>>> doc = {"nodes": {"a": {"stream": 0, "attached": []}}, "gap": 1e-05, "name": "é"}
>>> b"".join(indented_json(doc)) == json.dumps(doc, indent=1).encode()
True
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from itertools import chain, compress, islice
from typing import Any

import msgspec
import yaml

CHUNK = 4096  # items of a large container encoded at once

_SCALARS = frozenset({str, int, bool, type(None)})  # floats excepted: see the docstring
_CONTAINERS = frozenset({dict, list, tuple})
_KEYS = frozenset({str})
_ENCODE = msgspec.json.Encoder().encode
_YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def indented_json(document: Any, chunk: int = CHUNK,
                  plain: Collection[str] = ()) -> Iterator[bytes]:
    """Pieces whose concatenation is `json.dumps(document, indent=1).encode()`.

    `plain`: top-level keys whose values the caller makes of JSON's own types only, without
    floats (a plan's per-node sections, from ints and strings: tests hold every plan to it);
    their check is skipped, the largest part of writing them."""
    if type(document) is dict and document and _string_keys(document):
        yield b"{"
        separator = b"\n "
        for key, value in document.items():
            yield separator + json.dumps(key).encode() + b": "
            yield from _pieces(value, 1, chunk, key in plain)
            separator = b",\n "
        yield b"\n}"
    else:
        yield from _pieces(document, 0, chunk)


def _pieces(value: Any, depth: int, chunk: int, plain: bool = False) -> Iterator[bytes]:
    """`value` indented at `depth`, a large container slice by slice."""
    kind = type(value)
    if kind not in _CONTAINERS or len(value) <= chunk or (kind is dict
                                                           and not _string_keys(value)):
        yield _text(value, depth, plain)
        return
    parts: Iterator[Any]
    if kind is dict:
        items = iter(value.items())
        parts = iter(lambda: dict(islice(items, chunk)), {})
    else:
        parts = (value[i:i + chunk] for i in range(0, len(value), chunk))
    yield b"{" if kind is dict else b"["
    for k, part in enumerate(parts):
        text = _text(part, depth, plain)  # "{" or "[", its items, the line break and "}" or "]"
        if k:
            yield b","
        yield text[1:-(depth + 2)]
    yield b"\n" + b" " * depth + (b"}" if kind is dict else b"]")


def _text(value: Any, depth: int, plain: bool = False) -> bytes:
    """`value` indented at `depth` in one piece (`plain`: known to pass `_plain`). msgspec
    indents it at its depth inside `depth` one-item lists, whose own text around it is cut
    off: no second pass over the text to shift its lines."""
    if plain or _plain(value):
        wrapped = value
        for _ in range(depth):
            wrapped = [wrapped]
        encoded = _ENCODE(wrapped)
        if encoded.isascii() and b"\x7f" not in encoded:
            text = msgspec.json.format(encoded, indent=1)
            # level k of the lists opens with "[", a line break and k + 1 spaces, and closes
            # with a line break, k spaces and "]"
            return text[depth * (depth + 5) // 2:len(text) - depth * (depth + 3) // 2]
    return json.dumps(value, indent=1).replace("\n", "\n" + " " * depth).encode()


def _plain(value: Any) -> bool:
    """Only JSON's own types without floats, objects with string keys. Checked a level of
    nesting at a time, by type sets over all its items: `map(type, ...)` and `chain` run in C,
    which matters for a plan's 100k small records."""
    if type(value) not in _CONTAINERS:
        return type(value) in _SCALARS
    level = [value]
    while level:
        objects = [c for c in level if type(c) is dict]
        if not _KEYS.issuperset(map(type, chain.from_iterable(objects))):
            return False
        items = list(chain(chain.from_iterable(map(dict.values, objects)),
                           chain.from_iterable([c for c in level if type(c) is not dict])))
        kinds = set(map(type, items))
        if not kinds <= _SCALARS | _CONTAINERS:
            return False
        level = list(compress(items, map(_CONTAINERS.__contains__, map(type, items))))
    return True


def _string_keys(mapping: dict[Any, Any]) -> bool:
    return _KEYS.issuperset(map(type, mapping))


def decode_json(text: str) -> Any:
    """`json.loads(text)` (plan and graph files), except that an object may not repeat a key:
    json keeps the last value where the file's author meant one of them (our YAML files reject
    it too). The error is json's own, at the repeat.

    >>> decode_json('{"a": [1, 2.5, "x"], "b": NaN}')
    {'a': [1, 2.5, 'x'], 'b': nan}
    >>> decode_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    json.decoder.JSONDecodeError: key 'a' repeats the key of line 1: line 1 column 10 (char 9)
    """
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except _Repeated as exc:
        raise json.JSONDecodeError(*_repeat_at(text, exc.key)) from None
    except RecursionError:  # json's decoder recurses per level of nesting
        raise json.JSONDecodeError("arrays or objects nested too deeply", text, 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more digits than Python converts
        raise json.JSONDecodeError(str(exc).split(";")[0], text, 0) from None


class _Repeated(Exception):
    """An object of the text repeats `key`."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's dict; _Repeated where it repeats a key (a hook per object: a 100k-node graph
    file decodes in 0.17 s, 0.12 s without one)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return found


def _repeat_at(text: str, key: str) -> tuple[str, str, int]:
    """(message, text, position) of the first repeated key: JSON is YAML's flow style, whose
    parser keeps each key's place (a parse only on this error's path); where YAML reads the
    text otherwise, the message names the key at its first place."""
    try:
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.YAMLError:
        root = None
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            lines: dict[str, int] = {}
            for key_node, value_node in node.value:
                name = key_node.value
                if name in lines:
                    mark = key_node.start_mark
                    return (f"key {name!r} repeats the key of line {lines[name]}", text,
                            mark.index)
                lines[name] = key_node.start_mark.line + 1
                stack.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return f"an object repeats key {key!r}", text, max(0, text.find(json.dumps(key)))
