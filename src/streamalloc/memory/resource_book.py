"""Bookkeeping tables of the variable resource: roads, graph ids, broadcast, ready, loaded.

Spec sections 8.1-8.4. Every name-indexed lookup goes through `mapped()` except the two writes
GE stores under the raw name: `set_changed_graph_id` and `record_staged_var_desc` (spec 1.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.records import BroadcastInfo, TransStep
from streamalloc.memory.resource_state import ResourceState
from streamalloc.memory.status import Status, fail


class ResourceBookkeeping(ResourceState):
    """Roads, graph ids, staged descriptors, broadcast records, ready and loaded sets."""

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
