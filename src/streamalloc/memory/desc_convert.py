"""A descriptor's other forms: `VarDesc` / `VarOp` from graph IR, to and from protobuf.

* from graph IR (`desc_from_tensor`, `op_from_node`): our tensor descriptions name formats and
  dtypes (`NCHW`, `float32`); a missing format is GE's default ND, a missing dtype FLOAT, and a
  missing shape a scalar (a GE ShapeDef without dims, as 00017's scalar Consts are dumped).
  Origin format and shape come from the `origin_format` / `origin_shape` tensor attributes;
* to and from `ge.proto.TensorDescriptor`, the descriptor form inside var_manager.proto, written
  the way GE serializes a `GeTensorDesc`: dtype as the proto `DataType` enum, the format as the
  `layout` name, dims in `shape`, the recorded size in `size`, and origin format / shape,
  `_init_value` and `_inner_offset` as tensor attributes. Every field is carried, so
  `desc_from_proto(desc_to_proto(d)) == d`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.dtypes import DTYPE_TO_GE_PROTO, GE_PROTO_DTYPE
from streamalloc.ir.graph import Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import (
    DTYPE_CODES,
    UNDEFINED_DTYPE,
    Status,
    VarGraphError,
    dtype_code,
    dtype_name,
    fail,
    format_code,
    format_name,
)
from streamalloc.memory.desc import InitValue, VarDesc, VarOp, Weight

if TYPE_CHECKING:
    from streamalloc.ir.proto import ge_ir_pb2

ORIGIN_FORMAT = "origin_format"
ORIGIN_SHAPE = "origin_shape"
INIT_VALUE = "_init_value"
INNER_OFFSET = "_inner_offset"


# ---- from graph IR ----------------------------------------------------------------------------


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
    origin = _attr(tensor, ORIGIN_FORMAT, "string")
    origin_shape = _attr(tensor, ORIGIN_SHAPE, "list_int")
    init = _attr(tensor, INIT_VALUE, "tensor")
    inner = _attr(tensor, INNER_OFFSET, "int")
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


# ---- to and from ge.proto.TensorDescriptor --------------------------------------------------

def _proto_dtype(code: int) -> int:
    name = dtype_name(code)
    return DTYPE_TO_GE_PROTO.get(name, 0) if name else 0


def _cpp_dtype(proto: int) -> int:
    name = GE_PROTO_DTYPE.get(proto)
    return DTYPE_CODES.get(name, UNDEFINED_DTYPE) if name else UNDEFINED_DTYPE


def desc_to_proto(desc: VarDesc, out: ge_ir_pb2.TensorDescriptor | None = None
                  ) -> ge_ir_pb2.TensorDescriptor:
    """Fill (or create) a TensorDescriptor from a VarDesc."""
    from streamalloc.ir.proto import ge_ir_pb2  # protobuf: loaded when first used
    proto = out if out is not None else ge_ir_pb2.TensorDescriptor()
    proto.dtype = _proto_dtype(desc.dtype)  # type: ignore[assignment]
    proto.shape.dim.extend(desc.shape)
    proto.layout = format_name(desc.format)
    proto.size = desc.size
    proto.attr[ORIGIN_FORMAT].s = format_name(desc.origin_format).encode()
    origin = proto.attr[ORIGIN_SHAPE].list
    origin.val_type = ge_ir_pb2.AttrDef.ListValue.VT_LIST_INT
    origin.i.extend(desc.origin_shape)
    if desc.init_value is not None:
        value = proto.attr[INIT_VALUE].t
        desc_to_proto(desc.init_value.desc, value.desc)
        value.data = desc.init_value.data
    if desc.inner_offset:
        proto.attr[INNER_OFFSET].i = desc.inner_offset
    return proto


def desc_from_proto(proto: ge_ir_pb2.TensorDescriptor) -> VarDesc:
    """The VarDesc a TensorDescriptor describes (attributes other than ours are ignored)."""
    attrs = proto.attr
    init = None
    if INIT_VALUE in attrs:
        tensor = attrs[INIT_VALUE].t
        init = InitValue(desc_from_proto(tensor.desc), bytes(tensor.data))
    origin_format = attrs[ORIGIN_FORMAT].s.decode() if ORIGIN_FORMAT in attrs else ""
    return VarDesc(
        shape=tuple(proto.shape.dim),
        format=format_code(proto.layout or None),
        dtype=_cpp_dtype(proto.dtype),
        origin_format=format_code(origin_format or None),
        origin_shape=tuple(attrs[ORIGIN_SHAPE].list.i) if ORIGIN_SHAPE in attrs else (),
        size=proto.size,
        init_value=init,
        inner_offset=attrs[INNER_OFFSET].i if INNER_OFFSET in attrs else 0,
    )
