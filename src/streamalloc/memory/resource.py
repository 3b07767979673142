"""The variable resource: one session's tables and every operation on them (spec 1.4, 5, 8, 10).

* registration (5.1 / 5.2), lookups (5.5), renewing the current descriptor (5.4) and the reuse
  lookup of rules 2 and 3 (spec 5);
* bookkeeping (8.1-8.4): roads, graph ids, staged descriptors, broadcast records, ready and
  loaded sets, batch names. Every name-indexed lookup goes through `mapped()` except the two
  writes GE stores under the raw name: `set_changed_graph_id` and `record_staged_var_desc`;
* per-device copies of the logical-to-device table (10) and address containment (7): the
  resource keeps one logical table, `dev_info_by_logic`, filled at registration, and one copy per
  device, `dev_info_by_device[d]`, which runtime resolution fills with device addresses. A copy
  is created (or extended with missing logical addresses, keeping existing device addresses) on
  every auto-malloc resolution for the device or by `update_dev_var_mgr_info`.

The tables are public so that tests can inspect them and poke them the way GE's unit tests do
(spec appendix A, "test-harness manipulations"); all are insertion-ordered, so every listing is
deterministic. Methods raise `VarManagerError` on failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from streamalloc.memory.codes import (
    CONST_PLACE_HOLDER,
    CONSTANT,
    FILE_CONSTANT,
    U64_MAX,
    MemType,
    Status,
    dtype_code,
    fail,
    size_by_dtype,
)
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.file_constant import file_constant_path
from streamalloc.memory.tables import BroadcastInfo, DevVarInfo, TransStep, VarAddr, var_key

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManagerPool

PLACEMENT_DEVICE = 1


class VarResource:
    """One session's variable tables (spec 1.4) and the operations on them."""

    def __init__(self, session_id: int, pool: VarManagerPool) -> None:
        self.session_id = session_id
        self.pool = pool
        self.addr_by_key: dict[str, VarAddr] = {}
        self.mem_type_by_logic: dict[int, int] = {}
        self.dev_info_by_logic: dict[int, DevVarInfo] = {}
        self.cur_desc_by_name: dict[str, VarDesc] = {}
        self.file_const_key: dict[str, str] = {}
        self.trans_road_by_name: dict[str, tuple[TransStep, ...]] = {}
        self.changed_graph_by_name: dict[str, int] = {}
        self.changed_names_by_graph: dict[int, dict[str, None]] = {}
        self.staged_desc_by_graph: dict[int, dict[str, VarDesc]] = {}
        self.allocated_graph_by_name: dict[str, int] = {}
        self.broadcast_by_graph: dict[int, dict[str, BroadcastInfo]] = {}
        self.ready_keys_by_device: dict[int, dict[str, None]] = {}
        self.loaded_by_device: dict[int, list[tuple[str, int]]] = {}
        self.dev_info_by_device: dict[int, dict[int, DevVarInfo]] = {}
        self.batch_key_map: dict[str, str] = {}

    def mapped(self, name: str) -> str:
        """The name every name-indexed table is keyed by (multi-batch sharing, spec 1.3)."""
        return self.batch_key_map.get(name, name)

    def key(self, name: str, desc: VarDesc) -> str:
        """The variable key of `name` with `desc`."""
        return var_key(name, desc, self.batch_key_map)

    def logic_base(self) -> int:
        """The logical base for this resource's address conversions.

        QUIRK (spec 6.2): GE fetches the manager registered in the pool under the resource's
        own session id (creating it if needed) and uses *its* base, not the owner's. A manager in
        pool slot 5 initialised with session id 0 converts with slot 0's base.
        """
        return self.pool.get(self.session_id).var_mem_logic_base

    def tables(self) -> Mapping[str, object]:
        """Every table by its spec name (for inspection and test helpers)."""
        return {k: v for k, v in vars(self).items() if k not in ("session_id", "pool")}

    # ---- registration (spec 5.1, 5.2) ---------------------------------------------------------

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

    # ---- lookups (spec 5.5) -------------------------------------------------------------------

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

    def renew_cur_var_desc(self, name: str, source: VarDesc | VarOp | None) -> None:
        """Take format and origin format from `source` (a descriptor, or an op's output 0).

        Spec 5.4. Unknown name: success, nothing changes (tested before the op). `None` stands
        for GE's op form with a null op: FAILED. Dtype and shape are not renewed. QUIRK: when the
        old key is not registered the call fails after the current descriptor was updated.
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

    # ---- bookkeeping (spec 8) -----------------------------------------------------------------

    def set_trans_road(self, name: str, road: Sequence[TransStep]) -> None:
        """Store a variable's transformation road; the first write wins (a later one is ignored)."""
        self.trans_road_by_name.setdefault(self.mapped(name), tuple(road))

    def get_trans_road(self, name: str) -> tuple[TransStep, ...] | None:
        """The road of a variable, None when it has none."""
        return self.trans_road_by_name.get(self.mapped(name))

    def set_changed_graph_id(self, name: str, graph_id: int) -> None:
        """Record that `graph_id` changed the variable's format (raw name, spec 8.4)."""
        self.changed_graph_by_name[name] = graph_id
        self.changed_names_by_graph.setdefault(graph_id, {})[name] = None

    def get_changed_graph_id(self, name: str) -> int:
        """The graph that changed the variable (looked up by mapped name); FAILED if none."""
        mapped = self.mapped(name)
        if mapped not in self.changed_graph_by_name:
            fail(Status.FAILED, f"variable {name!r} has no changed graph id")
        return self.changed_graph_by_name[mapped]

    def remove_changed_graph_id(self, name: str) -> None:
        """Forget the changed-graph mark of the variable (raw and mapped name)."""
        for key in dict.fromkeys((name, self.mapped(name))):
            graph_id = self.changed_graph_by_name.pop(key, None)
            if graph_id is not None:
                self.changed_names_by_graph.get(graph_id, {}).pop(key, None)

    def get_changed_var_names(self, graph_id: int) -> tuple[str, ...]:
        """Names whose format the graph changed (empty when none)."""
        return tuple(self.changed_names_by_graph.get(graph_id, {}))

    def set_allocated_graph_id(self, name: str, graph_id: int) -> None:
        """Record the graph that allocated the variable; the first write wins."""
        self.allocated_graph_by_name.setdefault(self.mapped(name), graph_id)

    def get_allocated_graph_id(self, name: str) -> int:
        """The graph that allocated the variable; FAILED if unknown."""
        mapped = self.mapped(name)
        if mapped not in self.allocated_graph_by_name:
            fail(Status.FAILED, f"variable {name!r} has no allocated graph id")
        return self.allocated_graph_by_name[mapped]

    def record_staged_var_desc(self, graph_id: int, name: str, desc: VarDesc) -> None:
        """Remember the descriptor a graph saw for a variable (raw name)."""
        self.staged_desc_by_graph.setdefault(graph_id, {})[name] = desc

    def get_staged_var_descs(self, graph_id: int) -> dict[str, VarDesc]:
        """The graph's staged descriptors (empty when unknown)."""
        return dict(self.staged_desc_by_graph.get(graph_id, {}))

    def save_broadcast_info(self, graph_id: int, info: BroadcastInfo) -> None:
        """Store a broadcast record under (graph, variable name); the last write wins."""
        self.broadcast_by_graph.setdefault(graph_id, {})[info.var_name] = info

    def set_batch_variables_key_name(self, batch_name: str, key_name: str) -> None:
        """Let a batch-branch name share the memory and tables of `key_name`."""
        self.batch_key_map[batch_name] = key_name

    def has_shared_var_mem_between_batch(self) -> bool:
        """True when any batch name is mapped."""
        return bool(self.batch_key_map)

    def set_var_is_ready(self, name: str, desc: VarDesc, device_id: int) -> None:
        """Mark the key ready on a device (independent of registration, spec 8.1)."""
        self.ready_keys_by_device.setdefault(device_id, {})[self.key(name, desc)] = None

    def is_var_ready(self, name: str, desc: VarDesc, device_id: int) -> bool:
        """Whether the key was marked ready on the device."""
        return self.key(name, desc) in self.ready_keys_by_device.get(device_id, {})

    def check_and_set_var_loaded(self, op: VarOp, device_id: int) -> bool:
        """True if another op already loaded a constant at this address on the device (spec 8.2).

        The address is output offset 0 minus output 0's `_inner_offset`. The first op seen at an
        address is recorded and gets False ("load it"); later ones get True ("skip the copy").
        """
        if not op.output_offsets:
            return False  # GE logs an error: the op has no output offsets
        inner = op.outputs[0].inner_offset if op.outputs else 0
        address = op.output_offsets[0] - inner
        loaded = self.loaded_by_device.setdefault(device_id, [])
        if address in self.mem_type_by_logic and any(a == address for _, a in loaded):
            return True
        loaded.append((op.name, address))
        return False

    # ---- device tables (spec 10) and containment (spec 7) -------------------------------------

    def update_dev_var_mgr_info(self, device_id: int) -> None:
        """Create the device's table from the logical one, or add the logical addresses it lacks."""
        table = self.dev_info_by_device.get(device_id)
        if table is None:
            self.dev_info_by_device[device_id] = dict(self.dev_info_by_logic)
            return
        for logical, info in self.dev_info_by_logic.items():
            table.setdefault(logical, info)

    def get_var_mgr_info(self, device_id: int, logical: int) -> DevVarInfo | None:
        """The device's row for a logical address; None without a table or row."""
        return self.dev_info_by_device.get(device_id, {}).get(logical)

    def set_var_mgr_dev_addr(self, device_id: int, logical: int, device: int | None) -> None:
        """Set (or clear, with None) the device address of a row; INTERNAL_ERROR if absent."""
        table = self.dev_info_by_device.get(device_id)
        if table is None or logical not in table:
            where = "has no device table" if table is None else f"has no row for {logical}"
            fail(Status.INTERNAL_ERROR, f"device {device_id} {where}")
        table[logical] = replace(table[logical], device=device)

    def check_logic_addr_valid(self, device_id: int, logical: int) -> tuple[int, int]:
        """(inner offset, variable's logical address) of an address strictly inside a variable.

        The range is exclusive at both ends: `entry < logical < entry + recorded size`. An exact
        hit on `entry` is the caller's exact lookup; FAILED when no row contains the address.
        """
        for base, info in self.dev_info_by_device.get(device_id, {}).items():
            if base < logical < base + info.desc.size:
                return logical - base, base
        fail(Status.FAILED, f"logical address {logical} is inside no variable on device "
                            f"{device_id}")


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
