"""JSON Schema of rule files (formats.md section 2); `streamalloc schema rules` prints it."""

from __future__ import annotations

from typing import Any

from streamalloc.rules.kinds import KINDS
from streamalloc.rules.predicates import NODE_LEAVES

RULES_FORMAT = "streamalloc.rules/v1"

_NAMES = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}

_MATCH: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "all": {"type": "array", "items": {"$ref": "#/$defs/match"}},
        "any": {"type": "array", "items": {"$ref": "#/$defs/match"}},
        "not": {"$ref": "#/$defs/match"},
        "engine": _NAMES,
        "type": _NAMES,
        "name": {"type": "string", "description": "regular expression, searched in the name"},
        "graph": {"type": "string", "description": "regular expression on the graph name"},
        "attr": {"anyOf": [
            {"type": "string", "description": "the attribute is present"},
            {"type": "object", "additionalProperties": False, "required": ["key"],
             "properties": {"key": {"type": "string"}, "equals": {},
                            "in": {"type": "array"}}}]},
    },
}
assert set(NODE_LEAVES) <= set(_MATCH["properties"])

_COMPARISONS = ("equals", "not_equals", "in", "set")

_WHEN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "all": {"type": "array", "items": {"$ref": "#/$defs/when"}},
        "any": {"type": "array", "items": {"$ref": "#/$defs/when"}},
        "not": {"$ref": "#/$defs/when"},
        "option": {"type": "string"},
        "equals": {"type": "string"},
        "not_equals": {"type": "string"},
        "in": {"type": "array", "items": {"type": "string"}},
        "set": {"type": "boolean"},
    },
    # a comparison needs the option it compares, and one comparison per block
    "dependentRequired": {k: ["option"] for k in _COMPARISONS},
    "not": {"anyOf": [{"required": [a, b]} for i, a in enumerate(_COMPARISONS)
                      for b in _COMPARISONS[i + 1:]]},
}

_RULE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]*$"},
        "kind": {"enum": sorted(KINDS)},
        "priority": {"type": "integer"},
        "description": {"type": "string"},
        "match": {"$ref": "#/$defs/match"},
        "when": {"$ref": "#/$defs/when"},
        "options": {"type": "object"},
        "after": {"type": "array", "items": {"type": "string"}},
        "before": {"type": "array", "items": {"type": "string"}},
        "disable": {"type": "boolean", "description": "remove an inherited rule of this name"},
    },
}

RULES_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://streamalloc.dev/schema/rules-v1.json",
    "title": "streamalloc rule file",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "rules"],
    "properties": {
        "format": {"const": RULES_FORMAT},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "flow": {"enum": ["static", "dynamic"]},
        "extends": {"type": "string", "description": "a shipped rule set name or a file path"},
        "rules": {"type": "array", "items": _RULE},
    },
    "$defs": {"match": _MATCH, "when": _WHEN, "rule": _RULE},
}
