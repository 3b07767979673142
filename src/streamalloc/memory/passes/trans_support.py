"""Which format / dtype conversions variable acceleration can fold into a variable (spec 15).

A trans step is supported when its output shape is known and it is a Reshape, ReFormat,
SqueezeV2 or UnsqueezeV2, or a TransData / TransposeD whose format conversion GE's format
transfer library implements, or a Cast whose dtype conversion GE's data-type transfer library
implements. The spec does not list those libraries; the pairs below are GE's registered
transfers as we reconstructed them from its `formats/format_transfers` sources (see README).
"""

from __future__ import annotations

from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.ge_codes import dtype_code, format_code
from streamalloc.memory.records import TransStep

# CheckSameAndTransOp: every consumer of the variable must be one of these.
TRANS_OP_TYPES = frozenset({
    "TransData", "Transpose", "TransposeD", "Reshape", "ReFormat", "Cast", "Squeeze",
    "SqueezeV2", "UnsqueezeV2", "ExpandDims", "SqueezeV3", "UnsqueezeV3",
})
ALWAYS_SUPPORTED = frozenset({"Reshape", "ReFormat", "SqueezeV2", "UnsqueezeV2"})
# Roads of only these types also renew the manager's current descriptor.
RENEW_TYPES = ALWAYS_SUPPORTED

_TRANSPOSE = ("NCHW", "NHWC", "HWCN", "CHWN")
_FORMAT_PAIRS = [
    ("NCHW", "NC1HWC0"), ("NHWC", "NC1HWC0"), ("NCHW", "FRACTAL_Z"), ("NHWC", "FRACTAL_Z"),
    ("HWCN", "FRACTAL_Z"), ("ND", "FRACTAL_Z"), ("ND", "FRACTAL_NZ"), ("NCHW", "FRACTAL_NZ"),
    ("NHWC", "FRACTAL_NZ"), ("ND", "FRACTAL_ZZ"), ("NCHW", "FRACTAL_ZZ"), ("NHWC", "FRACTAL_ZZ"),
    ("NCDHW", "NDC1HWC0"), ("NDHWC", "NDC1HWC0"), ("NCDHW", "FRACTAL_Z_3D"),
    ("NDHWC", "FRACTAL_Z_3D"), ("DHWCN", "FRACTAL_Z_3D"),
]
FORMAT_TRANSFERS = frozenset(
    {(format_code(a), format_code(b)) for a, b in _FORMAT_PAIRS}
    | {(format_code(b), format_code(a)) for a, b in _FORMAT_PAIRS}
    | {(format_code("HWCN"), format_code("C1HWNCoC0"))}
    | {(format_code(a), format_code(b)) for a in _TRANSPOSE for b in _TRANSPOSE if a != b})

_CASTS = [
    ("float32", "float16"), ("float16", "float32"), ("float32", "int32"), ("int32", "float32"),
    ("float16", "int32"), ("int32", "float16"), ("int32", "uint8"), ("int32", "int8"),
    ("uint8", "float32"), ("uint8", "int32"), ("uint8", "float16"), ("bool", "int32"),
    ("bool", "float32"), ("bool", "float16"), ("int64", "int32"), ("int32", "int64"),
]
DTYPE_TRANSFERS = frozenset((dtype_code(a), dtype_code(b)) for a, b in _CASTS)


def signature(desc: TensorDesc) -> str:
    """GE's "<format>-<dtype>-<d0>-<d1>-...-" string of a trans op's output 0."""
    dims = "".join(f"{d}-" for d in desc.shape or ())
    return f"{format_code(desc.format)}-{dtype_code(desc.dtype)}-{dims}"


def shape_known(desc: TensorDesc) -> bool:
    """A static output shape (no unknown rank, no -1 dims)."""
    return desc.shape is not None and all(d >= 0 for d in desc.shape)


def is_supported(step: TransStep) -> bool:
    """Whether variable acceleration may fold this step (its output shape is checked apart)."""
    if step.node_type in ALWAYS_SUPPORTED:
        return True
    if step.node_type in ("TransData", "TransposeD"):
        return (step.input.format, step.output.format) in FORMAT_TRANSFERS
    if step.node_type == "Cast":
        return (step.input.dtype, step.output.dtype) in DTYPE_TRANSFERS
    return False
