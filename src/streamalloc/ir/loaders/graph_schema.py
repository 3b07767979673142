"""JSON Schema of our graph file format (formats.md section 1); `streamalloc schema graph`."""

from __future__ import annotations

from typing import Any

from streamalloc.ir.attrs import ATTR_KINDS
from streamalloc.ir.dtypes import DTYPES
from streamalloc.ir.graph import GRAPH_FORMAT

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # GE's and ONNX's dimensions are int64
_STR_LIST = {"type": "array", "items": {"type": "string"}}

_TENSOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "shape": {"type": ["array", "null"],
                  "items": {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX,
                            "description": "a dimension: an int64 (-1 unknown)"}},
        "dtype": {"enum": list(DTYPES)},
        "format": {"type": "string"},
        "attrs": {"$ref": "#/$defs/attrs"},
    },
}

_NODE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "type"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "type": {"type": "string", "minLength": 1},
        "engine": {"type": "string"},
        "inputs": {"type": "array", "items": {"type": "string"},
                   "description": "data inputs by slot: 'node' or 'node:output_index'; '' = "
                                  "an unconnected slot"},
        "control_inputs": _STR_LIST,
        "attrs": {"$ref": "#/$defs/attrs"},
        "outputs": {"type": "array", "items": {"$ref": "#/$defs/tensor"}},
        "input_descs": {"type": "array", "items": {"$ref": "#/$defs/tensor"}},
        "subgraphs": {"type": "object", "additionalProperties": {"type": "string"},
                      "description": "role -> subgraph name, in instance order"},
        "stream_id": {"type": "integer"},
        "task_count": {"type": "integer", "minimum": 0},
        "cost_us": {"type": "number", "minimum": 0, "maximum": 1e9},
    },
}

_ENGINE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "independent": {"type": "boolean"},
        "attach": {"type": "boolean"},
        "skip_assign_stream": {"type": "boolean"},
        "scheduler_id": {"type": "string"},
        "compute_cost": {"type": "integer"},
        "default_task_count": {"type": "integer", "minimum": 0},
    },
}

_PARTITION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "engine", "nodes"],
    "properties": {
        "id": {"type": "string"},
        "engine": {"type": "string"},
        "stream_label": {"type": "string"},
        "nodes": _STR_LIST,
    },
}

GRAPH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://streamalloc.dev/schema/graph-v1.json",
    "title": "streamalloc graph file",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "nodes"],
    "properties": {
        "format": {"const": GRAPH_FORMAT},
        "name": {"type": "string"},
        "dynamic_shape": {"type": "boolean"},
        "node_order": {"enum": ["given", "ge"],
                       "description": "given: the node list is the G-order when topological; "
                                      "ge: G-order is always GE's sort of the node list"},
        "attrs": {"$ref": "#/$defs/attrs", "description": "root graph attributes"},
        "options": {"type": "object",
                    "additionalProperties": {"type": ["string", "integer", "number", "boolean"]}},
        "engines": {"type": "array", "items": _ENGINE},
        "op_engines": {"type": "object", "additionalProperties": {"type": "string"}},
        "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
        "subgraphs": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": False, "required": ["nodes"],
            "properties": {"nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                           "attrs": {"$ref": "#/$defs/attrs"}}}},
        "partition": {"type": "array", "items": _PARTITION},
    },
    "$defs": {
        "node": _NODE,
        "tensor": _TENSOR,
        "attrs": {"type": "object", "additionalProperties": {"$ref": "#/$defs/attr"}},
        "attr": {"description": "a plain value, or {type: KIND, value: ...} with KIND one of "
                                + ", ".join(ATTR_KINDS),
                 "anyOf": [{"type": ["string", "integer", "number", "boolean", "array"]},
                           {"type": "object", "required": ["type", "value"],
                            "additionalProperties": False,
                            "properties": {"type": {"enum": list(ATTR_KINDS)}, "value": {}}}]},
    },
}
