"""Turn JSON Schema validation errors into messages that teach: what, where, valid choices."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import jsonschema


def first_error(validator: jsonschema.protocols.Validator, document: Any
                ) -> jsonschema.ValidationError | None:
    """The most relevant schema error of `document`, or None when it is valid."""
    return jsonschema.exceptions.best_match(validator.iter_errors(document))


def explain(error: jsonschema.ValidationError) -> str:
    """One sentence: what was expected and found, listing the valid keys or choices."""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    expected: Any = error.validator_value
    if error.validator == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(cast(Mapping[str, Any], error.instance)) - set(known))
        return f"unknown key {', '.join(map(repr, extra))}; valid keys: {', '.join(known)}"
    if error.validator == "const":
        return f"expected {expected!r}, found {error.instance!r}"
    if error.validator == "enum":
        return f"found {error.instance!r}; valid: {', '.join(map(str, expected))}"
    if error.validator in ("required", "minProperties"):
        keys = ", ".join(sorted(schema.get("properties", {})))
        what = error.message if error.validator == "required" else "an empty mapping"
        return f"{what}; valid keys: {keys}"
    if error.validator == "type":
        return f"expected {expected}, found {json.dumps(error.instance)[:60]}"
    return error.message
