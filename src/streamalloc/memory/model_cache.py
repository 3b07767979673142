"""Model-cache variable matching with `deployer.VarMatchInfo` (spec 13).

A cached model stores its variables' descriptors before and after compilation. Loading it into a
session: if every after-compile descriptor equals the session's current one, the cache is usable
as is ("after"); else if every before-compile descriptor matches, the cache is used and its
after-compile roads and changed names are re-applied to the session ("before": road set, changed
graph id, change count +1, current descriptor renewed for Reshape / ReFormat / SqueezeV2 /
UnsqueezeV2-only roads); else it is stale ("miss"). A variable the session does not know yet
matches (there is nothing to disagree with).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from streamalloc.ir.proto import ge_ir_pb2
from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory.desc import same_layout
from streamalloc.memory.manager import VarManager
from streamalloc.memory.passes.rebuild_state import RebuildStateCtrl
from streamalloc.memory.passes.trans_support import RENEW_TYPES
from streamalloc.memory.proto_desc import desc_from_proto
from streamalloc.memory.serialize import road_from_proto


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
        if road and all(step.node_type in RENEW_TYPES for step in road) and \
                name in after.cur_var_tensor_desc_map:
            manager.renew_cur_var_desc(name, desc_from_proto(after.cur_var_tensor_desc_map[name]))
