"""The variable key and the rows of the variable resource's tables (spec 1.3, 1.4).

Every name-indexed table is keyed by the *mapped* name (multi-batch sharing: a batch-branch name
maps onto a shared variable name); address tables are keyed by the variable key. All rows are
immutable: tables replace rows, they never edit them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamalloc.memory.desc import VarDesc, VarOp

# Roads of only these step types also renew the manager's current descriptor (spec 15, 13).
RENEW_TYPES = frozenset({"Reshape", "ReFormat", "SqueezeV2", "UnsqueezeV2"})


def var_key(name: str, desc: VarDesc, batch_key_map: Mapping[str, str] | None = None) -> str:
    """GE's variable key: mapped name, format number, "_", dtype number (spec 1.3).

    There is no separator between the name and the format number (GE's documents show one;
    the code has none, spec 19), and the shape is not part of the key.

    >>> var_key("global_step", VarDesc()), var_key("const1", VarDesc(dtype=4))
    ('global_step2_0', 'const12_4')
    """
    mapped = (batch_key_map or {}).get(name, name)
    return f"{mapped}{desc.format}_{desc.dtype}"


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


def road_renews_desc(road: Iterable[TransStep]) -> bool:
    """Whether a (non-empty) road has only steps that also renew the current descriptor."""
    steps = tuple(road)
    return bool(steps) and all(step.node_type in RENEW_TYPES for step in steps)


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
