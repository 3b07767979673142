"""Memory-type codes and the constants of GE's variable manager (spec sections 2 and 3)."""

from __future__ import annotations

from enum import IntEnum

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
U64_MAX = (1 << 64) - 1


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
