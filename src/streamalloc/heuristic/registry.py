"""The one table of rule kinds -> heuristic steps (no registration by import side effects)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from streamalloc.heuristic import (
                                   allocate_dynamic,
                                   assign_by_dependency,
                                   assign_by_label,
                                   attached_streams,
                                   compaction,
                                   independent_stream,
                                   mde_group,
                                   mini_dag,
                                   node_stream_update,
                                   optimize_ineffective,
                                   parallel_group,
                                   pin_stream,
                                   single_stream,
                                   skipped_engine,
                                   user_policies,
)
from streamalloc.heuristic import allreduce_parallel as allreduce
from streamalloc.rules.kinds import KINDS

GraphStep = Callable[..., Any]

LABEL_KINDS = frozenset({"cmo-label", "user-stream-label", "stream-label"})

GRAPH_STEPS: Mapping[str, GraphStep] = {
    "mde-group": mde_group.apply,
    "assign-by-label": assign_by_label.apply,
    "independent-stream": independent_stream.apply,
    "assign-by-dependency": assign_by_dependency.apply,
    "single-stream": single_stream.apply,
    "node-stream-update": node_stream_update.apply,
    "parallel-group": parallel_group.apply,
    "allreduce-parallel": allreduce.apply,
    "skipped-engine": skipped_engine.apply,
    "optimize-ineffective": optimize_ineffective.apply,
    "same-stream": user_policies.same_stream,
    "separate-streams": user_policies.separate_streams,
    "dedicated-stream": user_policies.dedicated_stream,
}

MODEL_STEPS: Mapping[str, GraphStep] = {
    "compact": compaction.apply,
    "attached-streams": attached_streams.apply,
    "pin-stream": pin_stream.apply,
    "mini-dag": mini_dag.apply,
    "dynamic-engine-streams": allocate_dynamic.engine_streams,
    "dynamic-renumber": allocate_dynamic.renumber,
}

_COVERED = LABEL_KINDS | set(GRAPH_STEPS) | set(MODEL_STEPS)
assert set(KINDS) == _COVERED, f"kinds without a heuristic step: {set(KINDS) - _COVERED}"
