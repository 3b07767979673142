"""`VarDesc` <-> `ge.proto.TensorDescriptor`, the descriptor form inside var_manager.proto.

Written the way GE serializes a `GeTensorDesc`: dtype as the proto `DataType` enum, the format
as the `layout` name, dims in `shape`, the recorded size in `size`, and the origin format / shape,
`_init_value` and `_inner_offset` as tensor attributes. Every `VarDesc` field is carried, so
`desc_from_proto(desc_to_proto(d)) == d`.
"""

from __future__ import annotations

from streamalloc.ir.dtypes import DTYPE_TO_GE_PROTO, GE_PROTO_DTYPE
from streamalloc.ir.proto import ge_ir_pb2
from streamalloc.memory.desc import InitValue, VarDesc
from streamalloc.memory.ge_codes import (
    DTYPE_CODES,
    UNDEFINED_DTYPE,
    dtype_name,
    format_code,
    format_name,
)

ORIGIN_FORMAT = "origin_format"
ORIGIN_SHAPE = "origin_shape"
INIT_VALUE = "_init_value"
INNER_OFFSET = "_inner_offset"
_VT_LIST_INT = ge_ir_pb2.AttrDef.ListValue.VT_LIST_INT


def _proto_dtype(code: int) -> int:
    name = dtype_name(code)
    return DTYPE_TO_GE_PROTO.get(name, 0) if name else 0


def _cpp_dtype(proto: int) -> int:
    name = GE_PROTO_DTYPE.get(proto)
    return DTYPE_CODES.get(name, UNDEFINED_DTYPE) if name else UNDEFINED_DTYPE


def desc_to_proto(desc: VarDesc, out: ge_ir_pb2.TensorDescriptor | None = None
                  ) -> ge_ir_pb2.TensorDescriptor:
    """Fill (or create) a TensorDescriptor from a VarDesc."""
    proto = out if out is not None else ge_ir_pb2.TensorDescriptor()
    proto.dtype = _proto_dtype(desc.dtype)  # type: ignore[assignment]
    proto.shape.dim.extend(desc.shape)
    proto.layout = format_name(desc.format)
    proto.size = desc.size
    proto.attr[ORIGIN_FORMAT].s = format_name(desc.origin_format).encode()
    origin = proto.attr[ORIGIN_SHAPE].list
    origin.val_type = _VT_LIST_INT
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
