"""Parse YAML (and JSON) into plain dicts and lists that remember their source lines.

Errors found after parsing (schema, dangling input, ...) can then name `file:line`. PyYAML's C
parser is used when available; the constructors stay in Python so line marks are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import yaml

from streamalloc.facts import YAML_LOADER

_Base: type = YAML_LOADER


class LocatedDict(dict):  # type: ignore[type-arg]
    """A mapping with `line` (its own) and `key_lines` (line of each key), 1-based."""

    line: int = 0
    key_lines: dict[Any, int]


class LocatedList(list):  # type: ignore[type-arg]
    """A sequence with `line` (its own) and `item_lines`, 1-based."""

    line: int = 0
    item_lines: list[int]


class DuplicateKeyError(yaml.YAMLError):
    """A mapping repeats a key; YAML would silently keep the last one."""

    def __init__(self, key: Any, line: int, first: int) -> None:
        self.what = f"key {key!r} repeats the key of line {first}"
        super().__init__(f"line {line}: {self.what}")
        self.line = line


class _LocatedLoader(_Base):  # type: ignore[misc, valid-type]
    pass


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> LocatedDict:
    loader.flatten_mapping(node)
    result = LocatedDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in result.key_lines:
            raise DuplicateKeyError(key, line, result.key_lines[key])
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> LocatedList:
    result = LocatedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LocatedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_LocatedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_located(text: str) -> Any:
    """Parse YAML text into LocatedDict/LocatedList (raises yaml.YAMLError)."""
    return yaml.load(text, Loader=_LocatedLoader)


def line_of(document: Any, path: Sequence[Any]) -> int:
    """The line of the deepest element of `path` that carries a line (0 if none)."""
    line, node = getattr(document, "line", 0), document
    for step in path:
        if isinstance(node, LocatedDict) and step in node:
            line, node = node.key_lines.get(step, line), node[step]
        elif isinstance(node, LocatedList) and isinstance(step, int) and step < len(node):
            line, node = node.item_lines[step], node[step]
        else:
            break
    return line


def yaml_error(exc: yaml.YAMLError, text: str, source: str) -> str:
    """One line `source:line[:column]: malformed YAML: what` for any error of `load_located`;
    PyYAML's own text spans several lines."""
    if isinstance(exc, DuplicateKeyError):
        return f"{source}:{exc.line}: malformed YAML: {exc.what}"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        return f"{where}: malformed YAML: {exc.problem or exc.context}"
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow, by offset
        line = text.count("\n", 0, exc.position) + 1
        shown = f"U+{ord(exc.character):04X}" if isinstance(exc.character, str) \
            else f"byte {exc.character:#04x}"
        return f"{source}:{line}: malformed YAML: {exc.reason} ({shown})"
    return f"{source}: malformed YAML: {' '.join(str(exc).split())}"


def load_mapping(text: str, source: str, error: Callable[[str], Exception], expected: str
                 ) -> Any:
    """A located YAML document that must be a mapping; malformed YAML and anything else raise
    `error(message)` naming `source:line:column` and, for a non-mapping, `expected` (what the
    mapping should hold, e.g. "'format' and 'rules'")."""
    try:
        document = load_located(text)
    except yaml.YAMLError as exc:
        raise error(yaml_error(exc, text, source)) from None
    if not isinstance(document, dict):
        raise error(f"{source}: expected a mapping with {expected}")
    return document
