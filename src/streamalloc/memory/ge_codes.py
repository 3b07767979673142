"""GE's integer codes for tensor formats (`ge::Format`) and data types (`ge::DataType`).

The variable key (spec 1.3) prints these integers, so they must be GE's C++ numbering, not the
proto numbering of graph dumps. Format names follow `ge-ir-proto.md` 1.4 (our graph files and
GE dumps write formats as names such as `NCHW`, `FRACTAL_Z`, with or without a `FORMAT_` prefix);
dtypes are our lower-case names (`streamalloc.ir.dtypes`) or GE's upper-case enum names.
"""

from __future__ import annotations

from streamalloc.ir.dtypes import DTYPE_BITS, GE_CPP_DTYPE

_FORMAT_NAMES = (
    "NCHW", "NHWC", "ND", "NC1HWC0", "FRACTAL_Z", "NC1C0HWPAD", "NHWC1C0", "FSR_NCHW",
    "FRACTAL_DECONV", "C1HWNC0", "FRACTAL_DECONV_TRANSPOSE", "FRACTAL_DECONV_SP_STRIDE_TRANS",
    "NC1HWC0_C04", "FRACTAL_Z_C04", "CHWN", "FRACTAL_DECONV_SP_STRIDE8_TRANS", "HWCN",
    "NC1KHKWHWC0", "BN_WEIGHT", "FILTER_HWCK", "HASHTABLE_LOOKUP_LOOKUPS",
    "HASHTABLE_LOOKUP_KEYS", "HASHTABLE_LOOKUP_VALUE", "HASHTABLE_LOOKUP_OUTPUT",
    "HASHTABLE_LOOKUP_HITS", "C1HWNCoC0", "MD", "NDHWC", "FRACTAL_ZZ", "FRACTAL_NZ", "NCDHW",
    "DHWCN", "NDC1HWC0", "FRACTAL_Z_3D", "CN", "NC", "DHWNC", "FRACTAL_Z_3D_TRANSPOSE",
    "FRACTAL_ZN_LSTM", "FRACTAL_Z_G", "RESERVED", "ALL", "NULL",
)
FORMAT_CODES: dict[str, int] = {name: code for code, name in enumerate(_FORMAT_NAMES)}
FORMAT_NAMES: dict[int, str] = dict(enumerate(_FORMAT_NAMES))

NCHW = FORMAT_CODES["NCHW"]
NHWC = FORMAT_CODES["NHWC"]
ND = FORMAT_CODES["ND"]
NC1HWC0 = FORMAT_CODES["NC1HWC0"]
FRACTAL_Z = FORMAT_CODES["FRACTAL_Z"]
FRACTAL_NZ = FORMAT_CODES["FRACTAL_NZ"]

# Our dtype name -> C++ ge::DataType number (28 is DT_UNDEFINED and has no name).
DTYPE_CODES: dict[str, int] = {name: code for code, name in GE_CPP_DTYPE.items() if name}
UNDEFINED_DTYPE = 28
# GE's enum names (DT_ prefix dropped) where they are not just our name upper-cased.
_GE_RENAMES = {"float32": "FLOAT", "float64": "DOUBLE", "bfloat16": "BF16"}
GE_DTYPE_CODES: dict[str, int] = {_GE_RENAMES.get(n, n.upper()): c for n, c in DTYPE_CODES.items()}

FLOAT = DTYPE_CODES["float32"]
FLOAT16 = DTYPE_CODES["float16"]
INT32 = DTYPE_CODES["int32"]
UINT8 = DTYPE_CODES["uint8"]
STRING = DTYPE_CODES["string"]

DATA_TYPE_SIZE_BIT_OFFSET = 1000  # GE encodes sub-byte element sizes as 1000 + bits


def format_code(value: str | int | None) -> int:
    """GE's format number for a name (`NCHW`, `FORMAT_NCHW`), a number, or None (ND).

    >>> format_code("NC1HWC0"), format_code("FORMAT_ND"), format_code(None), format_code("29")
    (3, 2, 2, 29)
    """
    if value is None:
        return ND
    if isinstance(value, int):
        return value
    text = value.removeprefix("FORMAT_")
    if text.isdigit():
        return int(text)
    if text not in FORMAT_CODES:
        raise ValueError(f"unknown tensor format {value!r}; known: {', '.join(_FORMAT_NAMES)}")
    return FORMAT_CODES[text]


def format_name(code: int) -> str:
    """The format's name, or its number as text for composite / unknown formats."""
    return FORMAT_NAMES.get(code, str(code))


def dtype_code(value: str | int | None) -> int:
    """GE's C++ data-type number for our name, GE's name (`FLOAT`, `DT_INT32`), or None (FLOAT).

    >>> dtype_code("float32"), dtype_code("UINT8"), dtype_code("DT_COMPLEX64"), dtype_code(None)
    (0, 4, 16, 0)
    """
    if value is None:
        return FLOAT
    if isinstance(value, int):
        return value
    if value in DTYPE_CODES:
        return DTYPE_CODES[value]
    text = value.removeprefix("DT_")
    if text in GE_DTYPE_CODES:
        return GE_DTYPE_CODES[text]
    raise ValueError(f"data type {value!r} has no GE DataType number; known: "
                     f"{', '.join(sorted(DTYPE_CODES))}")


def dtype_name(code: int) -> str | None:
    """Our dtype name for a GE number (None for DT_UNDEFINED or an unknown number)."""
    return GE_CPP_DTYPE.get(code)


def element_bits(code: int) -> int | None:
    """Bits per element, None when the size is not a property of the type (strings)."""
    name = dtype_name(code)
    return DTYPE_BITS.get(name) if name else None


def size_by_dtype(code: int) -> int:
    """GE's `GetSizeByDataType`: bytes per element, 1000 + bits for sub-byte types, -1 unknown.

    >>> size_by_dtype(0), size_by_dtype(4), size_by_dtype(29), size_by_dtype(13)
    (4, 1, 1004, -1)
    """
    bits = element_bits(code)
    if bits is None:
        return -1
    return bits // 8 if bits % 8 == 0 else DATA_TYPE_SIZE_BIT_OFFSET + bits


def tensor_bytes(elements: int, code: int) -> int | None:
    """Bytes of `elements` values of dtype `code` (sub-byte types rounded up), None if unknown."""
    bits = element_bits(code)
    return None if bits is None else (elements * bits + 7) // 8
