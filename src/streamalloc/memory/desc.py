"""What the variable manager knows about a tensor and an op, and the size GE compiles for it.

`VarDesc` is the subset of GE's `GeTensorDesc` that matters here (spec 1.2): dims, format and
dtype as GE's integer codes, origin format and shape, the recorded size (0 when never set) and
the optional `_init_value` tensor. `VarOp` is the subset of an `OpDesc`: name, type, output
descriptors, the `value` weight, plain attributes and output offsets. Both are immutable; GE's
in-place edits (renewing a format, writing output offsets) produce new values here.

Also here: the compile-time size GE records for output 0 (spec 4.1, `compile_size`,
`sized_op`). Conversions from graph IR and to / from protobuf are in desc_convert.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from streamalloc.memory.codes import (
    COMPILE_ALIGN,
    CONSTANT,
    DEFAULT_PADDING,
    FILE_CONSTANT,
    FLOAT,
    ND,
    STRING,
    Status,
    VarGraphError,
    fail,
    tensor_bytes,
)


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
