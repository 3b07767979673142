"""Canonical element-type names shared by every loader, with their GE numbering and bit widths.

Our names are lower-case numpy-style (`float16`, `float32`, `bfloat16`). GE dumps number tensor
dtypes with the proto `DataType` enum, but attributes such as Cast's `DstT` use the C++
`ge::DataType` numbering (ge-ir-proto.md 1.4); both tables live here so no loader guesses.
"""

from __future__ import annotations

# Proto enum `ge.proto.DataType` value -> our name (0 = DT_UNDEFINED has no name).
_GE_PROTO_NAMES = (
    None, "float32", "float16", "int8", "uint8", "int16", "uint16", "int32", "int64",
    "uint32", "uint64", "bool", "float64", "string", "dual_sub_int8", "dual_sub_uint8",
    "complex64", "complex128", "qint8", "qint16", "qint32", "quint8", "quint16", "resource",
    "string_ref", "dual", "variant", "bfloat16", "int4", "uint1", "int2", "uint2", "complex32",
    "hifloat8", "float8_e5m2", "float8_e4m3fn", "float8_e8m0", "float6_e3m2", "float6_e2m3",
    "float4_e2m1", "float4_e1m2", "hifloat4",
)
GE_PROTO_DTYPE: dict[int, str | None] = dict(enumerate(_GE_PROTO_NAMES))
DTYPE_TO_GE_PROTO: dict[str, int] = {n: i for i, n in GE_PROTO_DTYPE.items() if n}

# C++ `ge::DataType` number -> our name (5 is unused in GE's header; 28 is DT_UNDEFINED).
GE_CPP_DTYPE: dict[int, str | None] = {
    0: "float32", 1: "float16", 2: "int8", 3: "int32", 4: "uint8", 6: "int16", 7: "uint16",
    8: "uint32", 9: "int64", 10: "uint64", 11: "float64", 12: "bool", 13: "string",
    14: "dual_sub_int8", 15: "dual_sub_uint8", 16: "complex64", 17: "complex128", 18: "qint8",
    19: "qint16", 20: "qint32", 21: "quint8", 22: "quint16", 23: "resource", 24: "string_ref",
    25: "dual", 26: "variant", 27: "bfloat16", 28: None, 29: "int4", 30: "uint1", 31: "int2",
    32: "uint2",
}

# Bits per element; None where the size is not a property of the type (strings, resources).
DTYPE_BITS: dict[str, int | None] = {
    "float32": 32, "float16": 16, "bfloat16": 16, "float64": 64, "int8": 8, "uint8": 8,
    "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64, "bool": 8,
    "string": None, "dual_sub_int8": 8, "dual_sub_uint8": 8, "complex32": 32, "complex64": 64,
    "complex128": 128, "qint8": 8, "qint16": 16, "qint32": 32, "quint8": 8, "quint16": 16,
    "resource": None, "string_ref": None, "dual": None, "variant": None, "int4": 4, "uint1": 1,
    "int2": 2, "uint2": 2, "hifloat8": 8, "float8_e5m2": 8, "float8_e4m3fn": 8,
    "float8_e8m0": 8, "float6_e3m2": 6, "float6_e2m3": 6, "float4_e2m1": 4, "float4_e1m2": 4,
    "hifloat4": 4,
    # ONNX-only types (no GE equivalent)
    "float8_e4m3fnuz": 8, "float8_e5m2fnuz": 8, "uint4": 4,
}

DTYPES: tuple[str, ...] = tuple(DTYPE_BITS)
