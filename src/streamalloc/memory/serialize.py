"""The variable manager's var_manager.proto messages (package `deployer`, spec 13).

* `serialize` / `deserialize`: a whole manager <-> `VarManagerInfo`. `serialize` writes what GE
  writes: identity, limits, base, the resource tables GE transports and each memory resource's
  running total. `deserialize` merges insert-if-absent into a manager; an uninitialized one takes
  identity, limits and base from the message (the device id is the *current* device, not the
  message's). Not transported, as in GE: `file_const_key`, device tables, changed-names-by-graph,
  staged descriptors, ready / loaded sets, the batch map, external memory, the allocator,
  ConstPlaceHolder byte counts, statistics. Round trip: `serialize(deserialize-into-fresh(
  serialize(m)))` is byte-identical to `serialize(m)` when the current device is m's device.
* `serialize_pool` / `deserialize_pool`: every session of a pool (`MultiVarManagerInfo`).
* `SharedContentDescription`: weight content shipped to a remote deployer. The sender describes a
  variable's bytes with its offset in the variable region; the receiver adds its own
  `var_mem_logic_base`, allocates `align512(total_length) + 1024` bytes of device memory, writes
  the content 512 bytes in (past the front guard) and records the device address for that
  logical address, so runtime resolution finds it.
* Model-cache matching with `VarMatchInfo`: a cached model stores its variables' descriptors
  before and after compilation. If every after-compile descriptor equals the session's current
  one, the cache is usable as is ("after"); else if every before-compile descriptor matches, the
  cache is used and its after-compile roads and changed names are re-applied to the session
  ("before": road set, changed graph id, change count +1, current descriptor renewed for
  Reshape / ReFormat / SqueezeV2 / UnsqueezeV2-only roads); else it is stale ("miss"). A variable
  the session does not know yet matches (there is nothing to disagree with).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from streamalloc.ir.proto import ge_ir_pb2
from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory.assignment import new_mem_resource
from streamalloc.memory.codes import (
    FRONT_GUARD,
    U64_MAX,
    MemType,
    Status,
    VarMemoryExhausted,
    fail,
    hbm_block,
)
from streamalloc.memory.desc import VarDesc, same_layout
from streamalloc.memory.desc_convert import desc_from_proto, desc_to_proto
from streamalloc.memory.resource import VarResource
from streamalloc.memory.tables import (
    BroadcastInfo,
    DevVarInfo,
    TransStep,
    VarAddr,
    road_renews_desc,
)

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager, VarManagerPool
    from streamalloc.memory.passes.base import RebuildStateCtrl


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
    """The road a TransNodeMultiInfo describes."""
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


# ---- shared content ---------------------------------------------------------------------------


def shared_content(session_id: int, node_name: str, data: bytes, offset: int, desc: VarDesc, *,
                   mem_type: int = MemType.HBM) -> pb.SharedContentDescription:
    """The message for one variable's content at `offset` of the variable region."""
    message = pb.SharedContentDescription(
        session_id=session_id, node_name=node_name, head_offset=0, total_length=len(data),
        current_offset=offset, mem_type=mem_type, om_content=data)
    desc_to_proto(desc, message.tensor_desc)
    return message


def receive_shared_content(manager: VarManager, message: pb.SharedContentDescription,
                           device_id: int = 0) -> int:
    """Place received content on the device; returns the data address (block + 512)."""
    memory = manager.mem_manager
    if memory is None:
        fail(Status.FAILED, "cannot receive shared content: no memory manager is attached")
    block = hbm_block(message.total_length)
    device = memory.malloc(message.mem_type or MemType.HBM, block, device_id)
    if device is None:
        fail(Status.MEMALLOC_FAILED, f"device {device_id} has no {block} bytes for the content "
                                     f"of {message.node_name!r}", VarMemoryExhausted)
    memory.write(device + FRONT_GUARD, bytes(message.om_content))
    logical = manager.var_mem_logic_base + message.current_offset
    resource = manager.resource
    if resource is not None:
        resource.update_dev_var_mgr_info(device_id)
        if logical in resource.dev_info_by_device[device_id]:
            resource.set_var_mgr_dev_addr(device_id, logical, device)
    return device + FRONT_GUARD


# ---- model-cache matching ---------------------------------------------------------------------


def var_match_info(before: pb.VarDescInfo, after: pb.VarDescInfo) -> pb.VarMatchInfo:
    """The VarMatchInfo a model cache stores."""
    return pb.VarMatchInfo(desc_info_before_compile=before, desc_info_after_compile=after)


def _matches(manager: VarManager, descs: Mapping[str, ge_ir_pb2.TensorDescriptor]) -> bool:
    resource = manager.require_resource()
    for name, proto in descs.items():
        cur = resource.cur_desc_by_name.get(resource.mapped(name))
        if cur is not None and not same_layout(cur, desc_from_proto(proto)):
            return False
    return True


def check_model_cache(manager: VarManager, match: pb.VarMatchInfo, graph_id: int,
                      rebuild: RebuildStateCtrl) -> str:
    """"after", "before" (roads re-applied) or "miss" for a cached model (see module doc)."""
    after = match.desc_info_after_compile
    if _matches(manager, after.cur_var_tensor_desc_map):
        return "after"
    if not _matches(manager, match.desc_info_before_compile.cur_var_tensor_desc_map):
        return "miss"
    _reapply(manager, after, graph_id, rebuild)
    return "before"


def _reapply(manager: VarManager, after: pb.VarDescInfo, graph_id: int,
             rebuild: RebuildStateCtrl) -> None:
    changed: Iterable[str] = after.changed_var_names or after.var_to_trans_road.keys()
    for name in changed:
        road = road_from_proto(after.var_to_trans_road[name])
        manager.set_trans_road(name, road)
        manager.set_changed_graph_id(name, graph_id)
        rebuild.set_state_changed(name)
        if road_renews_desc(road) and name in after.cur_var_tensor_desc_map:
            manager.renew_cur_var_desc(name, desc_from_proto(after.cur_var_tensor_desc_map[name]))
