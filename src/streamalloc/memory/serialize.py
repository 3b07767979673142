"""A whole variable manager <-> `deployer.VarManagerInfo` (var_manager.proto, spec 13).

`serialize` writes what GE writes: identity, limits, base, the resource tables that GE
transports and each memory resource's running total. `deserialize` merges insert-if-absent into
a manager; an uninitialized one takes identity, limits and base from the message (the device id
is the *current* device, not the message's). Not transported, as in GE: `file_const_key`, device
tables, changed-names-by-graph, staged descriptors, ready / loaded sets, the batch map, external
memory, the allocator, ConstPlaceHolder byte counts, statistics.

Round trip: `serialize(deserialize-into-fresh(serialize(m)))` is byte-identical to
`serialize(m)` when the current device is m's device.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory.codes import U64_MAX
from streamalloc.memory.manager import VarManager
from streamalloc.memory.mem_resource import new_mem_resource
from streamalloc.memory.pool import VarManagerPool
from streamalloc.memory.proto_desc import desc_from_proto, desc_to_proto
from streamalloc.memory.records import BroadcastInfo, DevVarInfo, TransStep, VarAddr
from streamalloc.memory.resource import VarResource


def serialize(manager: VarManager) -> pb.VarManagerInfo:
    """The manager as a VarManagerInfo; INTERNAL_ERROR when it is not initialized."""
    resource = manager.require_resource()
    info = pb.VarManagerInfo(
        version=manager.version, session_id=manager.session_id, device_id=manager.device_id,
        job_id=manager.job_id, graph_mem_max_size=manager.graph_mem_max_size,
        var_mem_max_size=manager.var_mem_max_size,
        var_mem_logic_base=manager.var_mem_logic_base,
        use_max_mem_size=manager.use_max_mem_size)
    _resource_to_proto(resource, info.var_resource)
    for mem_type, mem in manager.mem_resources.items():
        if mem is not None:  # total_size is declared but GE never fills it
            info.mem_resource_map[mem_type].var_mem_size = mem.var_mem_size
    return info


def _road_to_proto(road: Iterable[TransStep], out: pb.TransNodeMultiInfo) -> None:
    for step in road:
        item = out.node_info.add(node_type=step.node_type)
        desc_to_proto(step.input, item.input)
        desc_to_proto(step.output, item.output)


def _resource_to_proto(res: VarResource, out: pb.VarResourceInfo) -> None:
    for logical, mem_type in res.mem_type_by_logic.items():
        out.var_offset_map[logical] = mem_type
    for key, entry in res.addr_by_key.items():
        row = out.var_addr_mgr_map[key]
        desc_to_proto(entry.desc, row.desc)
        row.address, row.offset = entry.address, entry.offset & U64_MAX
        row.memory_type = entry.mem_type
    for name, desc in res.cur_desc_by_name.items():
        desc_to_proto(desc, out.cur_var_tensor_desc_map[name])
    for name, road in res.trans_road_by_name.items():
        _road_to_proto(road, out.var_to_trans_road[name])
    out.var_names_to_changed_graph_id.update(res.changed_graph_by_name)
    out.var_names_to_allocated_graph_id.update(res.allocated_graph_by_name)
    _broadcasts_to_proto(res, out)
    for logical, dev in res.dev_info_by_logic.items():
        row_dev = out.var_dev_addr_mgr_map[logical]
        desc_to_proto(dev.desc, row_dev.desc)
        row_dev.address, row_dev.dev_addr = dev.logical, dev.device or 0


def _broadcasts_to_proto(res: VarResource, out: pb.VarResourceInfo) -> None:
    for graph_id, infos in res.broadcast_by_graph.items():
        multi = out.var_broad_cast_info[graph_id]
        for var_name, b in infos.items():
            multi.broadcast_info[var_name].CopyFrom(pb.BroadcastInfo(
                var_name=b.var_name, broadcast_name=b.broadcast_name, idx=b.idx,
                input_offset=b.input_offset, input_size=b.input_size,
                output_offset=b.output_offset, output_size=b.output_size))

def deserialize(manager: VarManager, info: pb.VarManagerInfo, current_device: int = 0) -> None:
    """Load a VarManagerInfo into a manager (merge; existing entries win)."""
    if manager.resource is None:
        manager.version, manager.session_id = info.version, info.session_id
        manager.device_id, manager.job_id = current_device, info.job_id
        manager.graph_mem_max_size = info.graph_mem_max_size
        manager.var_mem_max_size = info.var_mem_max_size
        manager.use_max_mem_size = info.use_max_mem_size
        manager.var_mem_logic_base = info.var_mem_logic_base
        manager.resource = VarResource(info.session_id, manager.pool)
    _merge_resource(manager.resource, info.var_resource)
    for mem_type, mem in info.mem_resource_map.items():
        resource = manager.mem_resources.get(mem_type) or new_mem_resource(mem_type)
        if resource is not None:  # the running total is overwritten, not merged
            resource.var_mem_size = mem.var_mem_size
            manager.mem_resources[mem_type] = resource


def road_from_proto(road: pb.TransNodeMultiInfo) -> tuple[TransStep, ...]:
    return tuple(TransStep(s.node_type, desc_from_proto(s.input), desc_from_proto(s.output))
                 for s in road.node_info)


def _merge_resource(res: VarResource, src: pb.VarResourceInfo) -> None:
    for logical, mem_type in src.var_offset_map.items():
        res.mem_type_by_logic.setdefault(logical, mem_type)
    for key, row in src.var_addr_mgr_map.items():
        res.addr_by_key.setdefault(key, VarAddr(desc_from_proto(row.desc), row.address,
                                                row.offset, row.memory_type, None))
    for name, proto in src.cur_var_tensor_desc_map.items():
        res.cur_desc_by_name.setdefault(name, desc_from_proto(proto))
    for name, road in src.var_to_trans_road.items():
        res.trans_road_by_name.setdefault(name, road_from_proto(road))
    for name, graph_id in src.var_names_to_changed_graph_id.items():
        res.changed_graph_by_name.setdefault(name, graph_id)
    for name, graph_id in src.var_names_to_allocated_graph_id.items():
        res.allocated_graph_by_name.setdefault(name, graph_id)
    _merge_broadcasts(res, src)
    for logical, row_dev in src.var_dev_addr_mgr_map.items():
        res.dev_info_by_logic.setdefault(logical, DevVarInfo(
            desc_from_proto(row_dev.desc), row_dev.address, row_dev.dev_addr or None, False))


def _merge_broadcasts(res: VarResource, src: pb.VarResourceInfo) -> None:
    for graph_id, multi in src.var_broad_cast_info.items():
        infos = res.broadcast_by_graph.setdefault(graph_id, {})
        for var_name, b in multi.broadcast_info.items():
            infos.setdefault(var_name, BroadcastInfo(
                b.var_name, b.broadcast_name, b.idx, b.input_offset, b.input_size,
                b.output_offset, b.output_size))

def var_desc_info_to_serial(manager: VarManager) -> pb.VarDescInfo:
    """Current descriptors and roads (fields 1 and 2 of VarDescInfo, as the manager fills them)."""
    resource = manager.require_resource()
    info = pb.VarDescInfo()
    for name, desc in resource.cur_desc_by_name.items():
        desc_to_proto(desc, info.cur_var_tensor_desc_map[name])
    for name, road in resource.trans_road_by_name.items():
        _road_to_proto(road, info.var_to_trans_road[name])
    return info


def serialize_pool(pool: VarManagerPool) -> pb.MultiVarManagerInfo:
    """One VarManagerInfo per initialized session, in session order (what deployers receive)."""
    out = pb.MultiVarManagerInfo()
    for session_id in sorted(pool):
        manager = pool.get(session_id)
        if manager.resource is not None:
            out.var_manager_info.append(serialize(manager))
    return out


def deserialize_pool(pool: VarManagerPool, info: pb.MultiVarManagerInfo,
                     current_device: int = 0) -> None:
    """Load every session of a MultiVarManagerInfo into the pool slot of its session id."""
    for item in info.var_manager_info:
        deserialize(pool.get(item.session_id), item, current_device)
