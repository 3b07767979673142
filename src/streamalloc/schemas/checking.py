"""Validation of a document against its schema, with a message that names the file, the
field and what was expected (see the package docstring)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from streamalloc.errors import InputError
from streamalloc.schemas.plan import PLAN_SCHEMA
from streamalloc.schemas.reports import EMULATION_SCHEMA, SHOW_SCHEMA, VARS_SCHEMA
from streamalloc.schemas.tables import COMPARE_SCHEMA, SWEEP_SCHEMA
from streamalloc.validation import SchemaCheck

if TYPE_CHECKING:
    import jsonschema

SCHEMAS: Mapping[str, dict[str, Any]] = {
    "plan": PLAN_SCHEMA, "vars": VARS_SCHEMA, "emulation": EMULATION_SCHEMA,
    "compare": COMPARE_SCHEMA, "sweep": SWEEP_SCHEMA, "show": SHOW_SCHEMA,
}
# What each kind of document is called in messages, and the document that describes it.
_NOUNS = {"plan": ("the plan", "docs/plan-format.md"),
          "vars": ("the variable plan", "docs/vars-format.md"),
          "emulation": ("the report", "docs/emulation-report.md"),
          "compare": ("the comparison", "docs/compare-format.md"),
          "sweep": ("the sweep results", "docs/sweep-format.md"),
          "show": ("the graph summary", "docs/show-format.md")}


@cache
def schema_check(kind: str) -> SchemaCheck:
    """The checks of one kind's schema (`plan`, `vars`, `emulation`, `compare`, `sweep`,
    `show`)."""
    return SchemaCheck(SCHEMAS[kind])


def check_document(kind: str, document: Any, source: str) -> None:
    """Raise InputError (exit 3) naming `source`, the field and the expected value when
    `document` does not follow the schema of `kind`."""
    check = schema_check(kind)
    if check.is_valid(document):
        return
    error = check.first_error(document)
    noun, doc = _NOUNS[kind]
    if error is None:  # the two validators disagree: report what the fast one saw
        raise InputError(f"{source}: {check.fast_message(document)} ({doc})")
    raise InputError(f"{source}: {describe(error, noun, SCHEMAS[kind])} ({doc})")


def describe(error: jsonschema.ValidationError, noun: str = "the document",
             root: Mapping[str, Any] | None = None) -> str:
    """`field F: expected X, found Y` for one schema error; `root` is the whole schema (for
    the expected value of a missing key)."""
    where = field_name(error)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    instance: Any = error.instance
    if error.validator == "required":
        missing = next(k for k in schema.get("required", ()) if k not in instance)
        wanted = _property_schema(error, missing, root or {})
        return (f"field {_join(where, missing)}: expected {expected(wanted)}, found nothing "
                f"(missing key {missing!r})")
    if error.validator == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(instance) - set(known))
        return (f"field {where or noun}: unknown key {', '.join(map(repr, extra))}; valid keys: "
                f"{', '.join(known)}")
    if "propertyNames" in error.schema_path:
        return f"field {where or noun} key {error.instance!r}: expected {expected(schema)}"
    return f"field {where or noun}: expected {expected(schema)}, found {_shown(error.instance)}"


def expected(schema: Mapping[str, Any]) -> str:
    """What a schema asks for, in words: `an integer >= 0`, `a non-empty string`, ..."""
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        values = schema["enum"]
        if len(values) == 2:
            return f"{values[0]!r} or {values[1]!r}"
        return "one of " + ", ".join(map(str, values))
    if "pattern" in schema:
        return str(schema.get("description") or f"a string matching {schema['pattern']}")
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    words = [_type_word(kind, schema) for kind in kinds]
    return " or ".join(words) if words else "a valid value"


def _type_word(kind: str, schema: Mapping[str, Any]) -> str:
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        word = "an integer" if kind == "integer" else "a number"
        if low is not None:
            word += f" >= {low}"
        return word + (f" (up to {high})" if high is not None else "")
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    return {"object": "a JSON object", "array": "a JSON list", "boolean": "true or false",
            "null": "null"}.get(kind, kind)


def field_name(error: jsonschema.ValidationError) -> str:
    """The document path of an error as people write it: `nodes['a'].stream`, `events[0].id`.

    Fixed keys (a schema's `properties`) read `.key`, keys chosen by the document (node names,
    stream ids) read `['key']`, list items `[i]`; which is which comes from the schema path.
    """
    doc, text, i = list(error.absolute_path), "", 0
    steps = list(error.absolute_schema_path)
    for k, step in enumerate(steps):
        if i >= len(doc):
            break
        if step == "properties" and k + 1 < len(steps):
            text = _join(text, str(doc[i]))
        elif step in ("additionalProperties", "patternProperties"):
            text += f"[{doc[i]!r}]"
        elif step in ("items", "prefixItems"):
            text += f"[{doc[i]}]"
        else:
            continue
        i += 1
    for rest in doc[i:]:
        text += f"[{rest}]" if isinstance(rest, int) else f"[{rest!r}]"
    return text


def _property_schema(error: jsonschema.ValidationError, key: str,
                     root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema of property `key` of the object a `required` error is about: the innermost
    schema on the error's schema path that declares it (also outside an `if`/`else` branch)."""
    found: Mapping[str, Any] = {}
    node: Any = root
    for step in error.absolute_schema_path:
        if isinstance(node, Mapping) and key in node.get("properties", {}):
            found = node["properties"][key]
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    return found


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."
