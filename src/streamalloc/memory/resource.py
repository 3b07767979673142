"""The variable resource: one session's address registrations and descriptor tables.

Registration (spec 5.1 / 5.2), lookups (5.5), renewing the current descriptor (5.4) and the
reuse lookup of rules 2 and 3 (spec 5, `reuse_lookup`). Bookkeeping and device tables come from
the two base classes.
"""

from __future__ import annotations

from dataclasses import replace

from streamalloc.memory.codes import U64_MAX, MemType
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.ge_codes import dtype_code, size_by_dtype
from streamalloc.memory.records import DevVarInfo, VarAddr
from streamalloc.memory.resource_book import ResourceBookkeeping
from streamalloc.memory.resource_devices import ResourceDevices
from streamalloc.memory.status import Status, fail

FILE_CONSTANT = "FileConstant"
CONSTANT = "Constant"
CONST_PLACE_HOLDER = "ConstPlaceHolder"
PLACEMENT_DEVICE = 1


class VarResource(ResourceBookkeeping, ResourceDevices):
    """One session's variable tables (spec 1.4). Methods raise `VarManagerError` on failure."""

    # ---- registration ------------------------------------------------------------------

    def save_var_addr(self, name: str, desc: VarDesc, address: int, mem_type: int,
                      op: VarOp | None) -> int:
        """Register real memory for `key(name, desc)`; returns the logical address (spec 5.1).

        HBM addresses are offsets and get the logical base added; other memory types register
        their pointer as is. FAILED if the key is already registered.
        """
        key = self.key(name, desc)
        if key in self.addr_by_key:
            fail(Status.FAILED, f"variable key {key!r} is already registered")
        device = _placeholder_address(op) if op is not None and op.type == CONST_PLACE_HOLDER \
            else None
        logical = address + (self.logic_base() if mem_type == MemType.HBM else 0)
        self.addr_by_key[key] = VarAddr(desc, logical, address, mem_type, op)
        self.mem_type_by_logic[logical] = mem_type
        self._remember_file_constant(op, key)
        self.dev_info_by_logic[logical] = DevVarInfo(desc, logical, device, device is not None)
        return logical

    def set_var_addr(self, name: str, desc: VarDesc, address: int, mem_type: int,
                     op: VarOp | None) -> None:
        """Alias registration: the key points at `address`; the descriptor becomes current.

        Never touches `mem_type_by_logic` or `dev_info_by_logic` (spec 5.2). The offset of an HBM
        alias is `address - logic_base` (wrapped to 64 bits like GE's unsigned arithmetic), 0 for
        other memory types.
        """
        key = self.key(name, desc)
        if key not in self.addr_by_key:
            offset = (address - self.logic_base()) & U64_MAX if mem_type == MemType.HBM else 0
            self.addr_by_key[key] = VarAddr(desc, address, offset, mem_type, op)
            self._remember_file_constant(op, key)
        self.cur_desc_by_name[self.mapped(name)] = desc

    def _remember_file_constant(self, op: VarOp | None, key: str) -> None:
        # The first registration for a path:offset wins forever; never updated or cleaned.
        path = file_constant_path(op)
        if path:
            self.file_const_key.setdefault(path, key)

    # ---- lookups -------------------------------------------------------------------------

    def get_var_addr(self, name: str, desc: VarDesc) -> tuple[int, int]:
        """(logical address, memory type) of `key(name, desc)`; FAILED if unknown."""
        entry = self.addr_by_key.get(self.key(name, desc))
        if entry is None:
            fail(Status.FAILED, f"variable key {self.key(name, desc)!r} is not registered")
        return entry.address, entry.mem_type

    def is_var_exist(self, name: str, desc: VarDesc | None = None) -> bool:
        """With a descriptor: is the key registered; without: does the name have a current desc."""
        if desc is None:
            return self.mapped(name) in self.cur_desc_by_name
        return self.key(name, desc) in self.addr_by_key

    def is_var_addr(self, logical: int) -> bool:
        """Whether `logical` is the address of a real registration."""
        return logical in self.mem_type_by_logic

    def get_var_mem_type(self, logical: int) -> int:
        """The memory type registered for a logical address, RESERVED when unknown."""
        return self.mem_type_by_logic.get(logical, MemType.RESERVED)

    def get_cur_var_desc(self, name: str) -> VarDesc:
        """The variable's current descriptor; FAILED when the name is unknown."""
        desc = self.cur_desc_by_name.get(self.mapped(name))
        if desc is None:
            fail(Status.FAILED, f"variable {name!r} has no current descriptor")
        return desc

    def get_all_variables(self) -> dict[str, VarDesc]:
        """Every variable's descriptor: its road's first input when it has a road (spec 5.5)."""
        if not self.cur_desc_by_name:
            fail(Status.INTERNAL_ERROR, "the session has no variables")
        out = {}
        for name, desc in self.cur_desc_by_name.items():
            road = self.trans_road_by_name.get(name)
            out[name] = road[0].input if road else desc
        return out

    # ---- renewing the current descriptor (spec 5.4) ----------------------------------------

    def renew_cur_var_desc(self, name: str, source: VarDesc | VarOp | None) -> None:
        """Take format and origin format from `source` (a descriptor, or an op's output 0).

        Unknown name: success, nothing changes (tested before the op). `None` stands for GE's
        op form with a null op: FAILED. Dtype and shape are not renewed. QUIRK: when the old key is
        not registered the call fails after the current descriptor was already updated.
        """
        mapped = self.mapped(name)
        if mapped not in self.cur_desc_by_name:
            return
        new = _renew_source(name, source)
        cur = self.cur_desc_by_name[mapped]
        old_key = self.key(name, cur)
        cur = replace(cur, format=new.format, origin_format=new.origin_format)
        self.cur_desc_by_name[mapped] = cur
        entry = self.addr_by_key.pop(old_key, None)
        if entry is None:
            fail(Status.FAILED, f"variable key {old_key!r} of {name!r} is not registered")
        moved = replace(entry.desc, format=new.format, origin_format=new.origin_format)
        self.addr_by_key[self.key(name, cur)] = replace(entry, desc=moved)

    # ---- reuse lookup (spec 5, rules 2 and 3) -------------------------------------------------

    def size_by_output_dtype(self, op: VarOp) -> int:
        """Element size of output 0's dtype; -1 when the op has no output 0."""
        return size_by_dtype(op.outputs[0].dtype) if op.outputs else -1

    def get_reuse_addr(self, op: VarOp | None) -> tuple[int, int]:
        """(logical address, memory type) an op may share; FAILED when no rule applies.

        Rule 2, FileConstant: the first key registered for its "location:offset" (a stale key,
        removed since, is no hit). Rule 3, any other op with a `value` weight: the first registered
        `Constant` (registration order; GE scans an unordered map) with the same element size,
        byte length and bytes. Shape, format and dtype identity are not compared.
        """
        hit = None
        if op is not None:
            hit = self._file_constant_hit(op) if op.type == FILE_CONSTANT else \
                self._constant_hit(op)
        if hit is None:
            fail(Status.FAILED, f"no reusable memory for op {op.name if op else None!r}")
        return hit.address, hit.mem_type

    def _file_constant_hit(self, op: VarOp) -> VarAddr | None:
        key = self.file_const_key.get(file_constant_path(op))
        return self.addr_by_key.get(key) if key is not None else None

    def _constant_hit(self, op: VarOp) -> VarAddr | None:
        width = self.size_by_output_dtype(op)
        data = op.weight.data if op.weight is not None else None
        if width <= 0 or not data:
            return None
        for entry in self.addr_by_key.values():
            other = entry.op
            if other is None or other.type != CONSTANT or other.weight is None:
                continue
            if self.size_by_output_dtype(other) == width and other.weight.data == data:
                return entry
        return None


def file_constant_path(op: VarOp | None) -> str:
    """`"<location>:<offset>"` of a FileConstant op, "" for other ops or an empty location."""
    if op is None or op.type != FILE_CONSTANT:
        return ""
    location = op.str_attr("location")
    return f"{location}:{op.int_attr('offset')}" if location else ""


def _renew_source(name: str, source: VarDesc | VarOp | None) -> VarDesc:
    if isinstance(source, VarDesc):
        return source
    if source is None or not source.outputs:
        fail(Status.FAILED, f"renewing {name!r}: the op is missing or has no output 0")
    return source.outputs[0]


def _placeholder_address(op: VarOp) -> int:
    """The user device address of a ConstPlaceHolder, after GE's attribute checks (spec 5.1)."""
    shape = op.attr("storage_shape")
    dtype = op.attr("dtype")
    size = op.int_attr("size", -1)
    addr = op.int_attr("addr")
    if not isinstance(shape, tuple | list) or not isinstance(dtype, str | int):
        fail(Status.FAILED, f"ConstPlaceHolder {op.name!r} needs storage_shape and dtype attrs")
    elements = 1
    for dim in shape:
        elements *= int(dim)
    need = elements * max(size_by_dtype(dtype_code(dtype)), 0)
    if size < need or op.int_attr("placement") != PLACEMENT_DEVICE or addr == 0:
        fail(Status.FAILED, f"ConstPlaceHolder {op.name!r}: needs size >= {need} (has {size}), "
                            f"placement {PLACEMENT_DEVICE} (device) and a non-zero addr")
    return addr
