"""From graph IR nodes to the manager's `VarOp` / `VarDesc`, and the compile-time size (4.1).

Our tensor descriptions name formats and dtypes (`NCHW`, `float32`); the manager keys by GE's
integer codes. A missing format is GE's default ND, a missing dtype FLOAT, and a missing shape
a scalar (a GE ShapeDef without dims, as 00017's scalar Consts are dumped). Origin format and
shape come from the `origin_format` / `origin_shape` tensor attributes GE dumps carry.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.graph import Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import DEFAULT_PADDING
from streamalloc.memory.desc import (
    InitValue,
    VarDesc,
    VarOp,
    Weight,
    raw_tensor_bytes,
    round_compile_size,
)
from streamalloc.memory.ge_codes import STRING, dtype_code, format_code
from streamalloc.memory.status import Status, VarGraphError, fail

FILE_CONSTANT = "FileConstant"
CONSTANT = "Constant"


def _code(convert: Any, value: Any, where: str) -> int:
    try:
        return int(convert(value))
    except ValueError as exc:
        fail(Status.PARAM_INVALID, f"{where}: {exc}", VarGraphError)


def desc_from_tensor(tensor: TensorDesc, where: str) -> VarDesc:
    """The VarDesc of a tensor description; `where` names it in errors ("node w output 0")."""
    shape = tensor.shape or ()
    if any(d < 0 for d in shape):
        fail(Status.PARAM_INVALID, f"{where} has shape {list(shape)} with unknown dims; "
                                   "variable memory needs a static shape", VarGraphError)
    fmt = _code(format_code, tensor.format, where)
    origin = _attr(tensor, "origin_format", "string")
    origin_shape = _attr(tensor, "origin_shape", "list_int")
    init = _attr(tensor, "_init_value", "tensor")
    inner = _attr(tensor, "_inner_offset", "int")
    return VarDesc(
        shape=tuple(shape), format=fmt, dtype=_code(dtype_code, tensor.dtype, where),
        origin_format=fmt if origin is None else _code(format_code, origin, where),
        origin_shape=tuple(shape) if origin_shape is None else tuple(origin_shape),
        init_value=None if init is None else _init_value(init, where),
        inner_offset=0 if inner is None else int(inner))


def _attr(tensor: TensorDesc, key: str, kind: str) -> Any:
    """The value of a tensor attribute of the given kind, None when absent or of another kind."""
    attr = tensor.attrs.get(key)
    return attr.value if attr is not None and attr.kind == kind else None


def _init_value(value: TensorValue, where: str) -> InitValue:
    return InitValue(desc_from_tensor(value.desc, f"{where} _init_value"), value.data)


def _plain(attr: AttrValue) -> object:
    value = attr.value
    return tuple(value) if isinstance(value, list) else value


def op_from_node(node: Node) -> VarOp:
    """The VarOp of a node: outputs, `value` weight, plain attributes (no offsets yet)."""
    outputs = tuple(desc_from_tensor(t, f"node {node.name!r} output {i}")
                    for i, t in enumerate(node.outputs))
    weight = None
    value = node.attrs.get("value")
    if value is not None and value.kind == "tensor":
        tensor: TensorValue = value.value
        weight = Weight(_code(dtype_code, tensor.desc.dtype, f"node {node.name!r} value"),
                        tuple(tensor.desc.shape or ()), tensor.data)
    attrs = {k: _plain(v) for k, v in node.attrs.items() if k != "value"}
    return VarOp(node.name, node.type, outputs, weight, attrs)


def compile_size(op: VarOp, desc: VarDesc, padding: int = DEFAULT_PADDING) -> int:
    """The size the compiler records for output 0 before asking for memory (spec 4.1).

    STRING tensors have no fixed element size: a Constant uses its weight's byte length, a
    FileConstant its `length` attr (both then rounded like any tensor; see the README).
    """
    raw = _string_bytes(op) if desc.dtype == STRING else raw_tensor_bytes(desc)
    if raw is None:
        fail(Status.PARAM_INVALID, f"node {op.name!r}: cannot size output 0 of dtype code "
                                   f"{desc.dtype}", VarGraphError)
    return round_compile_size(raw, padding)


def _string_bytes(op: VarOp) -> int | None:
    if op.type == CONSTANT and op.weight is not None and op.weight.data is not None:
        return len(op.weight.data)
    if op.type == FILE_CONSTANT and "length" in op.attrs:
        return op.int_attr("length")
    return None


def sized_op(op: VarOp, padding: int = DEFAULT_PADDING) -> VarOp:
    """The op with output 0's recorded size set and all output offsets reset to 0 (spec 14)."""
    first = op.outputs[0].with_size(compile_size(op, op.outputs[0], padding))
    return replace(op, outputs=(first, *op.outputs[1:]), output_offsets=(0,) * len(op.outputs))
