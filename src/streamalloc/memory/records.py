"""The rows of the variable resource's tables (spec 1.4). All immutable; tables replace rows."""

from __future__ import annotations

from dataclasses import dataclass

from streamalloc.memory.desc import VarDesc, VarOp


@dataclass(frozen=True, slots=True)
class VarAddr:
    """`addr_by_key` row: the registered descriptor, logical address, offset, memory type, op.

    `offset` is what the registration wrote (spec 5.1 / 5.2 disagree for non-HBM memory: the
    pointer vs 0). `op` is None for rows restored from protobuf, which therefore never serve as
    constant-dedup candidates (spec 5, QUIRKs).
    """

    desc: VarDesc
    address: int
    offset: int
    mem_type: int
    op: VarOp | None = None


@dataclass(frozen=True, slots=True)
class DevVarInfo:
    """`dev_info_by_logic` row: descriptor, logical address, device address, external flag.

    `device` is None until runtime resolution allocates memory, except for a ConstPlaceHolder,
    whose user-supplied address makes the row external (spec 5.1).
    """

    desc: VarDesc
    logical: int
    device: int | None = None
    is_external: bool = False


@dataclass(frozen=True, slots=True)
class TransStep:
    """One step of a transformation road: the trans op's type and its input/output descriptors."""

    node_type: str
    input: VarDesc
    output: VarDesc


@dataclass(frozen=True, slots=True)
class BroadcastInfo:
    """A variable's broadcast record (spec 8.3), filled by the compile driver (spec 14)."""

    var_name: str = ""
    broadcast_name: str = ""
    idx: int = 0
    input_offset: int = 0
    input_size: int = 0
    output_offset: int = 0
    output_size: int = 0
