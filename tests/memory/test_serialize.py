"""Serialization details (spec 13) and the model-cache match (VarMatchInfo)."""

from __future__ import annotations

from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory import MemType, TransStep, VarDesc, VarManager, VarManagerPool, VarOp
from streamalloc.memory.codes import NC1HWC0, ND
from streamalloc.memory.desc_convert import desc_from_proto, desc_to_proto
from streamalloc.memory.passes import RebuildStateCtrl
from streamalloc.memory.serialize import (
    check_model_cache,
    deserialize_pool,
    serialize_pool,
    var_match_info,
)

HBM = MemType.HBM


def manager(pool: VarManagerPool, session: int) -> VarManager:
    m = pool.get(session)
    m.init(0, session, 3, 0)
    return m


def test_descriptor_proto_round_trip() -> None:
    desc = VarDesc(shape=(1, 2), format=NC1HWC0, dtype=1, origin_format=0, origin_shape=(2,),
                   size=64, inner_offset=8)
    proto = desc_to_proto(desc)
    assert (proto.layout, proto.dtype, list(proto.shape.dim), proto.size) == \
        ("NC1HWC0", 2, [1, 2], 64)  # proto DataType numbering: DT_FLOAT16 = 2
    assert desc_from_proto(proto) == desc


def test_deserialize_merges_and_keeps_existing_entries() -> None:
    pool = VarManagerPool()
    src = manager(pool, 1)
    src.assign_var_mem("v", None, VarDesc(size=8), HBM)
    src.set_trans_road("v", [TransStep("Cast", VarDesc(), VarDesc(dtype=1))])
    info = src.serialize()
    dst = manager(pool, 2)
    dst.assign_var_mem("v", None, VarDesc(size=8, shape=(9,)), HBM)
    dst.assign_var_mem("w", None, VarDesc(size=8), HBM)
    dst.deserialize(info)
    resource = dst.require_resource()
    assert resource.cur_desc_by_name["v"].shape == (9,)  # existing entry wins
    assert list(resource.get_trans_road("v") or []) == [
        TransStep("Cast", VarDesc(), VarDesc(dtype=1))]  # taken: dst had none
    assert dst.get_var_mem_size(HBM) == 1536  # overwritten, not merged
    assert dst.session_id == 2 and dst.device_id == 3  # identity kept: it had a resource


def test_uninitialized_manager_takes_identity_but_current_device() -> None:
    pool = VarManagerPool()
    src = manager(pool, 1)
    src.assign_var_mem("v", None, VarDesc(size=8), HBM)
    src.require_resource().file_const_key["x:0"] = "v2_0"
    src.set_var_is_ready("v", VarDesc(), 0)
    dst = VarManagerPool().get(9)
    dst.deserialize(src.serialize(), current_device=5)
    assert (dst.session_id, dst.device_id, dst.var_mem_logic_base) == (1, 5, 34359738368)
    res = dst.require_resource()
    assert res.session_id == 1 and not res.file_const_key and not res.ready_keys_by_device
    assert res.addr_by_key["v2_0"].op is None


def test_pool_round_trip() -> None:
    pool = VarManagerPool()
    for session in (3, 1):
        manager(pool, session).assign_var_mem(f"v{session}", None, VarDesc(size=8), HBM)
    pool.get(7)  # uninitialized: not shipped
    multi = serialize_pool(pool)
    assert [m.session_id for m in multi.var_manager_info] == [1, 3]
    other = VarManagerPool()
    deserialize_pool(other, multi, current_device=3)
    assert serialize_pool(other) == multi


def test_var_desc_info_to_serial() -> None:
    m = manager(VarManagerPool(), 0)
    m.assign_var_mem("v", None, VarDesc(size=8), HBM)
    info = m.var_desc_info_to_serial()
    assert list(info.cur_var_tensor_desc_map) == ["v"] and not info.changed_var_names


def _desc_info(fmt: int, road: list[TransStep] | None = None) -> pb.VarDescInfo:
    info = pb.VarDescInfo()
    desc_to_proto(VarDesc(format=fmt), info.cur_var_tensor_desc_map["v"])
    for step in road or []:
        item = info.var_to_trans_road["v"].node_info.add(node_type=step.node_type)
        desc_to_proto(step.input, item.input)
        desc_to_proto(step.output, item.output)
    if road:
        info.changed_var_names.append("v")
    return info


def test_model_cache_match() -> None:
    m = manager(VarManagerPool(), 0)
    m.assign_var_mem("v", VarOp("v", "Variable"), VarDesc(format=ND, size=8), HBM)
    ctrl = RebuildStateCtrl()
    road = [TransStep("ReFormat", VarDesc(format=ND), VarDesc(format=NC1HWC0))]
    assert check_model_cache(m, var_match_info(_desc_info(ND), _desc_info(ND)), 0, ctrl) == "after"
    match = var_match_info(_desc_info(ND), _desc_info(NC1HWC0, road))
    assert check_model_cache(m, match, 4, ctrl) == "before"
    assert m.get_changed_graph_id("v") == 4 and not ctrl.is_var_permit_to_change_formats("v")
    assert m.get_cur_var_desc("v").format == NC1HWC0  # a ReFormat-only road renews
    stale = var_match_info(_desc_info(0), _desc_info(1))
    assert check_model_cache(m, stale, 0, ctrl) == "miss"


def test_shared_content_reaches_the_receivers_device() -> None:
    from streamalloc.memory import EmulatedMemory
    from streamalloc.memory.serialize import receive_shared_content, shared_content
    sender = manager(VarManagerPool(), 0)
    logical = sender.assign_var_mem("w", None, VarDesc(size=16), HBM)
    message = shared_content(0, "w", b"w" * 16, logical - sender.var_mem_logic_base,
                             VarDesc(size=16))
    receiver = manager(VarManagerPool(), 0)
    receiver.set_mem_manager(memory := EmulatedMemory())
    receiver.assign_var_mem("w", None, VarDesc(size=16), HBM)
    address = receive_shared_content(receiver, pb.SharedContentDescription.FromString(
        message.SerializeToString()))
    assert memory.read(address, 16) == b"w" * 16
    assert receiver.get_var_memory_addr(logical, HBM) == address  # resolution finds it


def test_pending_conversion_on_load() -> None:
    from streamalloc.memory.runtime import take_pending_conversions
    m = manager(VarManagerPool(), 0)
    m.assign_var_mem("v", None, VarDesc(size=8), HBM)
    m.set_allocated_graph_id("v", 1)
    m.set_trans_road("v", [TransStep("TransData", VarDesc(), VarDesc(format=NC1HWC0))])
    m.set_changed_graph_id("v", 2)
    assert take_pending_conversions(m, ["v"], 1) == {}
    assert list(take_pending_conversions(m, ["v", "unknown"], 2)) == ["v"]
    assert take_pending_conversions(m, ["v"], 2) == {}  # the mark is gone
