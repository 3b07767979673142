"""What the variable manager knows about a tensor and an op, and their other forms.

`VarDesc` is the subset of GE's `GeTensorDesc` that matters here (spec 1.2): dims, format and
dtype as GE's integer codes, origin format and shape, the recorded size (0 when never set) and
the optional `_init_value` tensor. `VarOp` is the subset of an `OpDesc`: name, type, output
descriptors, the `value` weight, plain attributes and output offsets. Both are immutable; GE's
in-place edits (renewing a format, writing output offsets) produce new values here.

Conversions:

* from graph IR (`desc_from_tensor`, `op_from_node`): our tensor descriptions name formats and
  dtypes (`NCHW`, `float32`); a missing format is GE's default ND, a missing dtype FLOAT, and a
  missing shape a scalar (a GE ShapeDef without dims, as 00017's scalar Consts are dumped).
  Origin format and shape come from the `origin_format` / `origin_shape` tensor attributes;
* the compile-time size GE records for output 0 (spec 4.1, `compile_size`, `sized_op`);
* to and from `ge.proto.TensorDescriptor`, the descriptor form inside var_manager.proto, written
  the way GE serializes a `GeTensorDesc`: dtype as the proto `DataType` enum, the format as the
  `layout` name, dims in `shape`, the recorded size in `size`, and origin format / shape,
  `_init_value` and `_inner_offset` as tensor attributes. Every field is carried, so
  `desc_from_proto(desc_to_proto(d)) == d`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.dtypes import DTYPE_TO_GE_PROTO, GE_PROTO_DTYPE
from streamalloc.ir.graph import Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import (
    COMPILE_ALIGN,
    CONSTANT,
    DEFAULT_PADDING,
    DTYPE_CODES,
    FILE_CONSTANT,
    FLOAT,
    ND,
    STRING,
    UNDEFINED_DTYPE,
    Status,
    VarGraphError,
    dtype_code,
    dtype_name,
    fail,
    format_code,
    format_name,
    tensor_bytes,
)

if TYPE_CHECKING:
    from streamalloc.ir.proto import ge_ir_pb2

ORIGIN_FORMAT = "origin_format"
ORIGIN_SHAPE = "origin_shape"
INIT_VALUE = "_init_value"
INNER_OFFSET = "_inner_offset"


@dataclass(frozen=True, slots=True)
class InitValue:
    """An `_init_value` tensor attribute: its own descriptor and its bytes (spec 7, step 4.4)."""

    desc: VarDesc
    data: bytes


@dataclass(frozen=True, slots=True)
class VarDesc:
    """A tensor descriptor as the manager sees it; the default is GE's default ND / FLOAT."""

    shape: tuple[int, ...] = ()
    format: int = ND
    dtype: int = FLOAT
    origin_format: int = ND
    origin_shape: tuple[int, ...] = ()
    size: int = 0
    init_value: InitValue | None = None
    inner_offset: int = 0  # the `_inner_offset` tensor attr (spec 8.2)

    def elements(self) -> int:
        """Element count of the dims (1 for a scalar); dims must be known (>= 0)."""
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    def with_size(self, size: int) -> VarDesc:
        """The same descriptor with another recorded size."""
        return replace(self, size=size)

    def layout(self) -> tuple[int, int, tuple[int, ...]]:
        """(format, dtype, dims): what GE compares when it asks "did the descriptor change"."""
        return self.format, self.dtype, self.shape


def same_layout(a: VarDesc, b: VarDesc) -> bool:
    """GE's format / dtype / dims equality (shape-only or size-only changes count as changes)."""
    return a.layout() == b.layout()


@dataclass(frozen=True, slots=True)
class Weight:
    """The `value` weight of a constant: dtype code, dims, bytes (None: a tensor without data)."""

    dtype: int = FLOAT
    shape: tuple[int, ...] = ()
    data: bytes | None = None


def _no_attrs() -> Mapping[str, object]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class VarOp:
    """An op as the manager sees it. `attrs` hold plain values (str, int, tuple, ...)."""

    name: str
    type: str
    outputs: tuple[VarDesc, ...] = ()
    weight: Weight | None = None
    attrs: Mapping[str, object] = field(default_factory=_no_attrs)
    output_offsets: tuple[int, ...] = ()

    def attr(self, key: str, default: object = None) -> object:
        """The attribute value, or `default` when absent."""
        return self.attrs.get(key, default)

    def int_attr(self, key: str, default: int = 0) -> int:
        """An integer attribute (GE's GetInt: absent or not an int reads as `default`)."""
        value = self.attrs.get(key, default)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    def str_attr(self, key: str) -> str:
        """A string attribute, "" when absent or not a string."""
        value = self.attrs.get(key, "")
        return value if isinstance(value, str) else ""

    def with_output_offsets(self, offsets: tuple[int, ...]) -> VarOp:
        """The op with new output offsets (what GE's SetOutputOffset does in place)."""
        return replace(self, output_offsets=tuple(offsets))


# ---- compile-time size (spec 4.1) ---------------------------------------------------------


def round_compile_size(raw_bytes: int, padding: int = DEFAULT_PADDING) -> int:
    """Spec 4.1: floor((bytes + 32 + padding - 1) / 32) * 32, and 32 when that is 0.

    >>> [round_compile_size(n) for n in (100, 4096, 1, 0)]
    [160, 4128, 64, 32]
    """
    size = (raw_bytes + COMPILE_ALIGN + padding - 1) // COMPILE_ALIGN * COMPILE_ALIGN
    return size or COMPILE_ALIGN


def raw_tensor_bytes(desc: VarDesc) -> int | None:
    """element_count(shape) x element size of the dtype; None when the dtype has no fixed size.

    Shapes here are already in the storage format (an NC1HWC0 tensor has 5 dims), so the element
    count is the product of the dims for every format.
    """
    return tensor_bytes(desc.elements(), desc.dtype)


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
