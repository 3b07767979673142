"""The one table of rule kinds -> heuristic passes (no registration by import side effects).

Each entry makes the pass of one rule (`RulePass.from_rule`): a frozen dataclass named after
the rule, with the kind's typed options as fields and one `apply(ctx, plan) -> PassResult`.
Label passes map stream labels before the partition, graph passes run per graph on its
`GraphPlan`, model passes once on the `ModelPlan` (see `rule_pass.py`). A kind without a pass
fails at import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from streamalloc.heuristic.allocate_dynamic import DynamicEngineStreams, DynamicRenumber
from streamalloc.heuristic.allreduce_parallel import AllReduceParallel
from streamalloc.heuristic.assign_by_dependency import AssignByDependency
from streamalloc.heuristic.assign_by_label import AssignByLabel
from streamalloc.heuristic.attached_streams import AttachedStreams
from streamalloc.heuristic.compaction import Compact
from streamalloc.heuristic.independent_stream import IndependentStream
from streamalloc.heuristic.label_rules import LabelRule
from streamalloc.heuristic.mde_group import MdeGroup
from streamalloc.heuristic.mini_dag import MiniDagStream
from streamalloc.heuristic.node_stream_update import NodeStreamUpdate
from streamalloc.heuristic.optimize_ineffective import OptimizeIneffective
from streamalloc.heuristic.parallel_group import ParallelGroup
from streamalloc.heuristic.pin_stream import PinStream
from streamalloc.heuristic.rule_pass import GraphPass, LabelPass, ModelPass
from streamalloc.heuristic.single_stream import SingleStream
from streamalloc.heuristic.skipped_engine import SkippedEngine
from streamalloc.heuristic.user_policies import DedicatedStream, SameStream, SeparateStreams
from streamalloc.rules.kinds import KINDS
from streamalloc.rules.model import Rule

LABEL_PASSES: Mapping[str, Callable[[Rule], LabelPass]] = {
    "cmo-label": LabelRule.from_rule,
    "user-stream-label": LabelRule.from_rule,
    "stream-label": LabelRule.from_rule,
}

GRAPH_PASSES: Mapping[str, Callable[[Rule], GraphPass]] = {
    "mde-group": MdeGroup.from_rule,
    "assign-by-label": AssignByLabel.from_rule,
    "independent-stream": IndependentStream.from_rule,
    "assign-by-dependency": AssignByDependency.from_rule,
    "single-stream": SingleStream.from_rule,
    "node-stream-update": NodeStreamUpdate.from_rule,
    "parallel-group": ParallelGroup.from_rule,
    "allreduce-parallel": AllReduceParallel.from_rule,
    "skipped-engine": SkippedEngine.from_rule,
    "optimize-ineffective": OptimizeIneffective.from_rule,
    "same-stream": SameStream.from_rule,
    "separate-streams": SeparateStreams.from_rule,
    "dedicated-stream": DedicatedStream.from_rule,
}

MODEL_PASSES: Mapping[str, Callable[[Rule], ModelPass]] = {
    "compact": Compact.from_rule,
    "attached-streams": AttachedStreams.from_rule,
    "pin-stream": PinStream.from_rule,
    "mini-dag": MiniDagStream.from_rule,
    "dynamic-engine-streams": DynamicEngineStreams.from_rule,
    "dynamic-renumber": DynamicRenumber.from_rule,
}

_COVERED = set(LABEL_PASSES) | set(GRAPH_PASSES) | set(MODEL_PASSES)
assert set(KINDS) == _COVERED, f"kinds without a heuristic pass: {set(KINDS) - _COVERED}"
assert all(KINDS[k].scope == scope for table, scope in ((LABEL_PASSES, "label"),
           (GRAPH_PASSES, "graph"), (MODEL_PASSES, "model")) for k in table), \
    "a pass sits in the table of another scope than its kind's"

