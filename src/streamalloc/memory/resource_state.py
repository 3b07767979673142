"""The tables of one session's variable resource (spec 1.4), shared by the resource's parts.

`VarResource` (resource.py) is assembled from this state plus two groups of methods:
bookkeeping (resource_book.py: roads, graph ids, broadcast, ready and loaded sets, batch names)
and the per-device tables (resource_devices.py). The tables are public so that tests can inspect
them and poke them the way GE's unit tests do (spec appendix A, "test-harness manipulations").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from streamalloc.memory.desc import VarDesc, var_key
from streamalloc.memory.records import BroadcastInfo, DevVarInfo, TransStep, VarAddr

if TYPE_CHECKING:
    from streamalloc.memory.pool import VarManagerPool


class ResourceState:
    """All tables of a variable resource; insertion-ordered so every listing is deterministic."""

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
