"""The vocabulary of rule kinds: what each kind does, where it runs, and its options.

Every GE pass is one kind, and so is every user policy. `scope` says when a rule runs:
`label` rules rewrite stream labels before GE's engine partitioning, `graph` rules run per graph
(root, then subgraphs in R-order) on the partition subgraphs and nodes of that graph, `model`
rules run once after all graphs. Each kind also states itself as constraints
(`streamalloc.rules.constraints`) so that the solver allocator honours the same rule files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_MATCH_REF = {"$ref": "#/$defs/match"}


@dataclass(frozen=True, slots=True)
class KindSpec:
    """One rule kind: its scope, what it does (GE's pass name where it is one), its options."""

    name: str
    scope: str
    summary: str
    ge_pass: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()


def _kind(name: str, scope: str, summary: str, ge_pass: str = "", *,
          options: dict[str, Any] | None = None, required: tuple[str, ...] = ()) -> KindSpec:
    return KindSpec(name, scope, summary, ge_pass, options or {}, required)


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    _kind("cmo-label", "label", "every matched Cmo node gets the stream label <graph>_Cmo",
          "StreamLabelAttachPass (Cmo)"),
    _kind("user-stream-label", "label", "a user stream label becomes the stream label (U_S with "
          "_enable_inner_parallel)", "TransUserStreamLabel"),
    _kind("stream-label", "label", "matched nodes get a stream label (and so share a stream)", "",
          options={"label": {"type": "string", "minLength": 1},
           "user": {"type": "boolean", "description": "as a user label: merges across engines"}},
          required=("label",)),
    _kind("mde-group", "graph", "NewStreamId groups reserve stream ids (overwritten later)",
          "UpdateForMdeGroupPass"),
    _kind("assign-by-label", "graph", "subgraphs with one stream label share one stream",
          "AssignByLabelPass"),
    _kind("independent-stream", "graph", "independent engines (HCCL) get their own stream per "
          "label", "IndependentStreamPass"),
    _kind("assign-by-dependency", "graph", "reuse a predecessor's stream or open one per engine",
          "AssignByDependencyPass",
          options={"memory_priority": {"enum": ["auto", True, False],
                               "description": "auto: from ge.exec.memoryOptimizationPolicy"}}),
    _kind("single-stream", "graph", "every subgraph on one stream (the parent's in subgraphs)",
          "SingleStreamPass"),
    _kind("node-stream-update", "graph", "nodes take their subgraph's stream; RTS label nodes "
          "the default stream", "NodeStreamUpdatePass"),
    _kind("parallel-group", "graph", "nodes of one _parallel_group (per old stream) move to a "
          "new stream",
          "UpdateForParallelGroupPass"),
    _kind("allreduce-parallel", "graph", "successors of fused AllReduce nodes move to new "
          "streams", "AllReduceParallelPass"),
    _kind("skipped-engine", "graph", "skip-engine nodes fold onto their neighbours' stream",
          "UpdateForSkippedEnginePass"),
    _kind("optimize-ineffective", "graph", "isolated nodes move onto a neighbouring stream",
          "OptimizeIneffectiveMultiStreamPass"),
    _kind("same-stream", "graph", "matched nodes (per group_by attribute value) share a stream",
          "", options={"group_by": {"type": "string"}}),
    _kind("separate-streams", "graph", "matched nodes never share a stream with nodes matching "
          "`from`", "", options={"from": _MATCH_REF}, required=("from",)),
    _kind("dedicated-stream", "graph", "each matched node (or group) gets a stream of its own",
          "", options={"group_by": {"type": "string"}}),
    _kind("mini-dag", "model", "auto multi-stream: chains merged into at most N streams",
          "MiniDAGStreamPass"),
    _kind("compact", "model", "renumber used stream ids 0..k-1 in order",
          "RefreshContinuousStreams"),
    _kind("pin-stream", "model", "matched nodes on a given stream after compaction", "",
          options={"stream": {"type": "integer", "minimum": 0}}, required=("stream",)),
    _kind("attached-streams", "model", "attached (slave) streams by reuse key",
          "AssignAttachedStreamPass"),
    _kind("dynamic-engine-streams", "model", "dynamic shape: one stream per engine and label, "
          "reuse, ac_parallel_enable", "DynamicStreamAllocator"),
    _kind("dynamic-renumber", "model", "dynamic shape: renumber by engine cost; matched nodes on "
          "the main stream", "DynamicStreamAllocator (renumbering)"),
)}
