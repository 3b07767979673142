"""The pieces the schemas share: the format strings, the limits of ids and sizes, and
helpers for the common shapes (ids, texts, objects keyed by stream, closed objects)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PLAN_FORMAT = "streamalloc.plan/v1"
VARS_FORMAT = "streamalloc.vars/v1"
EMULATION_FORMAT = "streamalloc.emulation/v1"
COMPARE_FORMAT = "streamalloc.compare/v1"
SWEEP_FORMAT = "streamalloc.sweep/v1"
SHOW_FORMAT = "streamalloc.show/v1"

# Ids and counts are 32-bit on the device (stream, event and notify ids, task units); a plan with
# a larger number is malformed, whatever the device limits in the graph options say.
ID_MAX = 2**31 - 1
# Byte sizes, offsets and addresses of the variable plan are 64-bit.
BYTES_MAX = 2**64 - 1
STREAM_KEY = r"^(0|[1-9][0-9]*)$"
SYNC_TYPES = ("Send", "Recv", "SendNotify", "RecvNotify", "StreamActive")
SOLVER_STATUSES = ("OPTIMAL", "FEASIBLE", "INFEASIBLE", "MODEL_INVALID", "UNKNOWN", "FALLBACK")
SOLVER_PHASE = r"^((matching|one-stream|cp-sat|windows|hint)(\+[a-z-]+)*)?$"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def ident(description: str, minimum: int = 0) -> dict[str, Any]:
    """A 32-bit id or count (>= minimum)."""
    return {"type": "integer", "minimum": minimum, "maximum": ID_MAX, "description": description}


def text(description: str) -> dict[str, Any]:
    """A non-empty string."""
    return {"type": "string", "minLength": 1, "description": description}


def keyed(values: Mapping[str, Any], description: str) -> dict[str, Any]:
    """An object keyed by stream ids ("0", "1", ...)."""
    return {"type": "object", "description": description,
            "propertyNames": {"pattern": STREAM_KEY,
                              "description": 'a stream id key such as "0"'},
            "additionalProperties": values}


def closed(properties: Mapping[str, Any], required: Sequence[str] = (),
           description: str = "") -> dict[str, Any]:
    """An object with exactly these keys (unknown keys are errors)."""
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False,
                              "required": list(required), "properties": dict(properties)}
    if description:
        schema["description"] = description
    return schema


STREAM = ident("a physical stream id")
STREAM_OR_NONE = ident("a stream id, -1 for a node without a stream", minimum=-1)
NULLABLE_NUMBER = {"type": ["number", "null"]}
US = {"type": "number", "minimum": 0}
COUNT = {"type": "integer", "minimum": 0}
