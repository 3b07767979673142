"""The vocabulary of rule kinds: what each kind does, where it runs, and its options.

Every GE pass is one kind, and so is every user policy. `scope` says when a rule runs:
`label` rules rewrite stream labels before GE's engine partitioning, `graph` rules run per graph
(root, then subgraphs in R-order) on the partition subgraphs and nodes of that graph, `model`
rules run once after all graphs. Each kind also states itself as constraints
(`streamalloc.rules.constraints`) so that the solver allocator honours the same rule files.
"""

from __future__ import annotations

from typing import Any

import msgspec

MATCH_REF = {"$ref": "#/$defs/match"}
# The constraint text of a kind that only chooses among allowed allocations, orders or numbers.
NO_CONSTRAINT = "none: it chooses among the allowed allocations (a solver's objective replaces it)"
_LABEL_GROUPS = ("SameStream per graph and stream label over the nodes it labels, split per "
                 "independent engine (HCCL) unless the label is a user label; only when "
                 "assign-by-label runs and the DAG allocator does not")


class KindSpec(msgspec.Struct, frozen=True):
    """One rule kind: its scope, what it does (GE's pass name where it is one), its options."""

    name: str
    scope: str
    summary: str
    ge_pass: str = ""
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    required: tuple[str, ...] = ()
    constraint: str = NO_CONSTRAINT


def _kind(name: str, scope: str, summary: str, ge_pass: str = "", *,
          options: dict[str, Any] | None = None, required: tuple[str, ...] = (),
          constraint: str = NO_CONSTRAINT) -> KindSpec:
    return KindSpec(name, scope, summary, ge_pass, options or {}, required, constraint)


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    _kind("cmo-label", "label", "every matched Cmo node gets the stream label <graph>_Cmo",
          "StreamLabelAttachPass (Cmo)", constraint=_LABEL_GROUPS),
    _kind("user-stream-label", "label", "a user stream label becomes the stream label (U_S with "
          "_enable_inner_parallel)", "TransUserStreamLabel", constraint=_LABEL_GROUPS),
    _kind("stream-label", "label", "matched nodes get a stream label (and so share a stream)", "",
          options={"label": {"type": "string", "minLength": 1},
           "user": {"type": "boolean", "description": "as a user label: merges across engines"}},
          required=("label",), constraint=_LABEL_GROUPS),
    _kind("mde-group", "graph", "NewStreamId groups reserve stream ids (overwritten later)",
          "UpdateForMdeGroupPass"),
    _kind("assign-by-label", "graph", "subgraphs with one stream label share one stream",
          "AssignByLabelPass", constraint="SameStream per graph and attribute stream label "
          "(labels from label rules: those rules' constraint), for nodes that no later pass "
          "moves (parallel groups, fused-AllReduce successors)"),
    _kind("independent-stream", "graph", "independent engines (HCCL) get their own stream per "
          "label", "IndependentStreamPass", constraint="SameStream per graph, independent "
          "engine and stream label (the label split of assign-by-label)"),
    _kind("assign-by-dependency", "graph", "reuse a predecessor's stream or open one per engine",
          "AssignByDependencyPass",
          options={"memory_priority": {"enum": ["auto", True, False],
                               "description": "auto: from ge.exec.memoryOptimizationPolicy"}},
          constraint="StreamCap per graph and engine: at most max_parallel_num "
          "(ge.streamMaxParallelNum) streams opened by a node it places"),
    _kind("single-stream", "graph", "every subgraph on one stream (the parent's in subgraphs)",
          "SingleStreamPass", constraint="SameStream per graph over the nodes of "
          "non-skip engines"),
    _kind("node-stream-update", "graph", "nodes take their subgraph's stream; RTS label nodes "
          "the default stream", "NodeStreamUpdatePass"),
    _kind("parallel-group", "graph", "nodes of one _parallel_group (per old stream) move to a "
          "new stream", "UpdateForParallelGroupPass", constraint="DisjointGroups per graph: "
          "nodes of two different _parallel_group values (other than -1) never share a stream"),
    _kind("allreduce-parallel", "graph", "successors of fused AllReduce nodes move to new "
          "streams", "AllReduceParallelPass"),
    _kind("skipped-engine", "graph", "skip-engine nodes fold onto their neighbours' stream",
          "UpdateForSkippedEnginePass"),
    _kind("optimize-ineffective", "graph", "isolated nodes move onto a neighbouring stream",
          "OptimizeIneffectiveMultiStreamPass"),
    _kind("same-stream", "graph", "matched nodes (per group_by attribute value) share a stream",
          "", options={"group_by": {"type": "string"}},
          constraint="SameStream per graph (and group_by value)"),
    _kind("separate-streams", "graph", "matched nodes never share a stream with nodes matching "
          "`from`", "", options={"from": MATCH_REF}, required=("from",),
          constraint="DifferentStreams per graph: matched nodes against the other nodes "
          "matching `from`"),
    _kind("dedicated-stream", "graph", "each matched node (or group) gets a stream of its own",
          "", options={"group_by": {"type": "string"}},
          constraint="DedicatedStream per matched node (or per graph and group_by value): no "
                     "other node of the model on its stream"),
    _kind("mini-dag", "model", "auto multi-stream: each graph's chains merged into at most N "
          "streams (NetOutput, RTS label and labelled nodes apart)",
          "MiniDAGStreamPass"),
    _kind("compact", "model", "renumber used stream ids 0..k-1 in order",
          "RefreshContinuousStreams"),
    _kind("pin-stream", "model", "matched nodes on a given stream after compaction", "",
          options={"stream": {"type": "integer", "minimum": 0}}, required=("stream",),
          constraint="PinnedStream: matched nodes on logical stream `stream`"),
    _kind("attached-streams", "model", "attached (slave) streams by reuse key",
          "AssignAttachedStreamPass", constraint="AttachedStreams: a node with a required "
          "request gets attached streams, none of them a main stream"),
    _kind("dynamic-engine-streams", "model", "dynamic shape: one stream per engine and label, "
          "reuse, ac_parallel_enable", "DynamicStreamAllocator"),
    _kind("dynamic-renumber", "model", "dynamic shape: renumber by engine cost; matched nodes on "
          "the main stream", "DynamicStreamAllocator (renumbering)",
          constraint="PinnedStream: matched nodes on stream 0 (the main stream)"),
)}


# The user policies: the kinds that are no GE pass (a rule of these kinds is the user's own).
USER_KINDS: frozenset[str] = frozenset(k for k, spec in KINDS.items() if not spec.ge_pass)


def kinds_markdown() -> str:
    """The vocabulary as a markdown table (docs/rules.md carries it; a test keeps it current)."""
    rows = ["| kind | scope | what it does (GE pass) | constraint form (both allocators) |",
            "|---|---|---|---|"]
    for spec in KINDS.values():
        ge = f" ({spec.ge_pass})" if spec.ge_pass else ""
        options = ", ".join(f"`{o}`" for o in spec.options)
        summary = spec.summary + ge + (f"; options {options}" if options else "")
        rows.append(f"| `{spec.name}` | {spec.scope} | {summary} | {spec.constraint} |")
    return "\n".join(rows) + "\n"
