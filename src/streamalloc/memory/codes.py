"""GE's codes and constants for variable memory: the one home of these facts.

* memory types (`rtMemType_t`) and session versions (spec 2, 9);
* GE statuses and the exceptions that carry them (spec conventions, 12);
* tensor format (`ge::Format`) and data type (`ge::DataType`) numbers (spec 1.3);
* sizes, alignments, bases and limits (spec 3, 4, 6, 11), options and names GE's code reads.

The variable manager's API mirrors GE's: a call either succeeds (and returns its value) or raises
a `VarManagerError` whose `status` is the GE status GE would have returned. Calls that GE declares
as returning a boolean or an address keep doing so (`False` / `None` on failure). The exception
class says what the failure means for a streamalloc user (and so the CLI exit code, errors.py);
the `status` says what GE would have returned. They are independent: running out of RDMA pool
memory is a `VarMemoryExhausted` (exit 4) whose status is `INTERNAL_ERROR`, because that is what
GE's `AssignVarMem` returns for it (spec 4.3).

The variable key prints format and dtype numbers, so they are GE's C++ numbering, not the proto
numbering of graph dumps. Format names follow `ge-ir-proto.md` 1.4 (with or without a `FORMAT_`
prefix); dtypes are our lower-case names (`streamalloc.ir.dtypes`) or GE's upper-case enum names.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum, StrEnum
from types import MappingProxyType
from typing import NoReturn

from streamalloc.errors import InputError, LimitExceeded, OptionError, StreamallocError
from streamalloc.ir.dtypes import DTYPE_BITS, GE_CPP_DTYPE

# ---- memory types and session versions ----------------------------------------------------------


class MemType(IntEnum):
    """Runtime memory-type codes (rtMemType_t); RESERVED is what "unknown" reads as."""

    HBM = 0x2
    RDMA_HBM = 0x3
    P2P_DDR = 0x11
    HOST = 0x81
    RESERVED = 0x100


def mem_type_name(code: int) -> str:
    """`HBM`, `RDMA_HBM`, ... for a known code, else the number in hex."""
    try:
        return MemType(code).name
    except ValueError:
        return hex(code)


class SessionVersion(IntEnum):
    """`init`'s version argument: only these three are accepted (spec 9)."""

    CLOUD = 0
    MINI = 1
    OTHER = 2


# ---- statuses and errors ---------------------------------------------------------------------


class Status(StrEnum):
    """GE status codes used by the variable manager (spec conventions)."""

    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    PARAM_INVALID = "PARAM_INVALID"
    MEMALLOC_FAILED = "MEMALLOC_FAILED"
    GE_GRAPH_OPTIONS_INVALID = "GE_GRAPH_OPTIONS_INVALID"
    GE_GRAPH_VARIABLE_OP_PASS_FAILED = "GE_GRAPH_VARIABLE_OP_PASS_FAILED"
    ACL_ERROR_GE_MEMORY_ALLOCATION = "ACL_ERROR_GE_MEMORY_ALLOCATION"  # numeric 245000


class VarManagerError(StreamallocError):
    """A variable-manager call failed; `status` is the GE status of the failure."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(f"{message} (GE status {status})")
        self.status = status
        self.detail = message


class VarMemoryExhausted(VarManagerError, LimitExceeded):
    """Variable memory ran out (pool empty, device full, build over the device size)."""


class VarOptionsInvalid(VarManagerError, OptionError):
    """Memory limits or options GE rejects (e.g. limits over 256 GiB)."""


class VarGraphError(VarManagerError, InputError):
    """A graph the variable passes or the compile driver cannot handle (names the node)."""


def fail(status: Status, message: str, kind: type[VarManagerError] = VarManagerError) -> NoReturn:
    """Raise `kind(status, message)`; the one way this package reports a GE failure."""
    raise kind(status, message)


# ---- tensor formats and data types -----------------------------------------------------------

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
FORMAT_CODES: Mapping[str, int] = MappingProxyType(
    {name: code for code, name in enumerate(_FORMAT_NAMES)})
FORMAT_NAMES: Mapping[int, str] = MappingProxyType(dict(enumerate(_FORMAT_NAMES)))

NCHW = FORMAT_CODES["NCHW"]
NHWC = FORMAT_CODES["NHWC"]
ND = FORMAT_CODES["ND"]
NC1HWC0 = FORMAT_CODES["NC1HWC0"]
FRACTAL_Z = FORMAT_CODES["FRACTAL_Z"]
FRACTAL_NZ = FORMAT_CODES["FRACTAL_NZ"]

# Our dtype name -> C++ ge::DataType number (28 is DT_UNDEFINED and has no name).
DTYPE_CODES: Mapping[str, int] = MappingProxyType(
    {name: code for code, name in GE_CPP_DTYPE.items() if name})
UNDEFINED_DTYPE = 28
# GE's enum names (DT_ prefix dropped) where they are not just our name upper-cased.
_GE_RENAMES = MappingProxyType({"float32": "FLOAT", "float64": "DOUBLE", "bfloat16": "BF16"})
GE_DTYPE_CODES: Mapping[str, int] = MappingProxyType(
    {_GE_RENAMES.get(n, n.upper()): c for n, c in DTYPE_CODES.items()})

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


# ---- sizes, bases and limits -----------------------------------------------------------------

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
U64_MAX = (1 << 64) - 1

SESSION_MEM_ALIGN = 512  # kSessionMemAlignSize
ALIGN_UNITS = 2  # front + rear guard, each SESSION_MEM_ALIGN bytes
GUARD_BYTES = ALIGN_UNITS * SESSION_MEM_ALIGN
FRONT_GUARD = SESSION_MEM_ALIGN  # runtime data starts this far into a block (spec 7)

DEFAULT_GRAPH_MEM_MAX = 26 * GIB  # 27917287424
DEFAULT_VAR_MEM_MAX = 5 * GIB  # 5368709120
DEFAULT_LOGIC_BASE = 32 * GIB  # kMemoryVarLogicBase
CONFIGURED_LOGIC_BASE = 128 * GIB  # kVarMemoryLogicBase, forced by set_all_memory_max_value
HOST_FEATURE_MAP_LOGIC_BASE = 64 * GIB
LEGACY_VAR_WINDOW = HOST_FEATURE_MAP_LOGIC_BASE - DEFAULT_LOGIC_BASE  # 32 GiB
HOST_SVM_FEATURE_MAP_LOGIC_BASE = 128 * GIB
DEFAULT_USE_MAX = DEFAULT_GRAPH_MEM_MAX + DEFAULT_VAR_MEM_MAX  # 33285996544
GRAPH_MEMORY_BUFFER = 32 * GIB  # only used in an overflow check
ABS_USE_MAX_LIMIT = 256 * GIB
GRAPH_RATIO = (26, 32)
VAR_RATIO = (5, 32)
TOTAL_RATIO = (31, 32)
DEFAULT_DEVICE_MEMORY = 32 * GIB  # the device size GE's default limits are the shares of

COMPILE_ALIGN = 32  # tensor size rounding at compile time
DEFAULT_PADDING = 32  # AICoreSpec.padding_size when the SoC does not say
RECURSION_CAP = 16  # Assign / trans chain depth limit at compile time
MAX_VAR_CHANGES = 1  # kMaxVarChangeTimes_

NORMAL_PAGE = 2 * MIB
HUGE_PAGE = GIB


def align512(n: int) -> int:
    """The smallest multiple of 512 that is >= n (align512(0) == 0)."""
    return (n + SESSION_MEM_ALIGN - 1) // SESSION_MEM_ALIGN * SESSION_MEM_ALIGN


def hbm_block(size: int) -> int:
    """Bytes an HBM variable of recorded size `size` takes: data plus the two guards (spec 4.2).

    >>> [hbm_block(s) for s in (0, 1, 100, 4096, 4128)]
    [1024, 1536, 1536, 5120, 5632]
    """
    return align512(size) + GUARD_BYTES


def share(total: int, ratio: tuple[int, int]) -> int:
    """floor(total * num / den), as GE computes the limits from device memory (spec 11)."""
    return total * ratio[0] // ratio[1]


# ---- options, op types and attributes GE's variable code reads -------------------------------

EVALUATE_MODE = "ge.evaluateGraphResourceMode"
HUGE_PAGE_OPTION = "ge.variableUse1gHugePage"
HUGE_PAGE_ONLY = "1"  # 1 GiB pages only, no fallback
HUGE_PAGE_FIRST = "2"  # 1 GiB pages first, fall back to normal pages

CONSTANT = "Constant"
FILE_CONSTANT = "FileConstant"
CONST_PLACE_HOLDER = "ConstPlaceHolder"
REF_VAR_SRC = "ref_var_src_var_name"  # a VarRef's (or ref output's) source variable
