"""MiniDAGStreamPass (spec 6): the auto multi-stream DAG allocator, a custom stream pass.

Runs only when ge.autoMultistreamParallelMode (root graph attribute first, else the option)
parses to a DAG mode (LoadBalance:N, MainStream:N, WeightedLoadBalance:N with N in 1..64);
`cv`, `default` and no mode leave the plan unchanged; anything else is GE's error E10001.

As a custom stream pass (spec 3.4) it starts from "current max" = next_stream - 1 and, per graph
(root, then the root's subgraph registry in R-order; in the dynamic flow only the root and the
unknown-shape subgraphs, the graphs the dynamic allocator numbers), allocates a base id, computes
the DAG streams (`streamalloc.heuristic.dag`), allocates the ids they need and writes them back
to the nodes. The new ids are GE's `_custom_logical_stream_ids`. In the dynamic flow the pass
then recompacts by node ids (spec 4.4 step 5); in the static flow the `compact` rule follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
from msgspec.structs import replace

from streamalloc.errors import OptionError
from streamalloc.heuristic.allocate_dynamic import dynamic_graphs
from streamalloc.heuristic.context import ModelContext
from streamalloc.heuristic.dag.allocate import dag_streams
from streamalloc.heuristic.dag.model import DagNode, build_mini_dag
from streamalloc.heuristic.dag.profiling import Profile, load_profile
from streamalloc.heuristic.plan import INVALID, ModelPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.labels import NodeLabels
from streamalloc.ir.partition import auto_multistream_mode
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule
from streamalloc.rules.predicates import NodePredicate

DAG_STRATEGIES = ("LoadBalance", "MainStream", "WeightedLoadBalance")
_MODE = re.compile(r"^(LoadBalance|MainStream|WeightedLoadBalance):([0-9]+)$")
RTS_LABEL_NODE = "_rts_label_node"

Changes = dict[str, tuple[int, Note]]


def parse_dag_mode(graph: Graph) -> tuple[str, int] | None:
    """(strategy, max streams) of a DAG mode, None for no/cv/default mode; OptionError else."""
    mode = auto_multistream_mode(graph)
    from_attr = "ge.autoMultistreamParallelMode" in graph.root.attrs
    if mode in ("", "cv") or (mode == "default" and from_attr):
        return None
    found = _MODE.match(mode)
    if found is None or not 1 <= int(found.group(2)) <= 64:
        raise OptionError(f"{graph.source}: ge.autoMultistreamParallelMode is {mode!r}; valid: "
                          "'cv', 'default' (graph attribute only), or STRATEGY:N with STRATEGY "
                          f"one of {', '.join(DAG_STRATEGIES)} and N in 1..64 (GE E10001)")
    return found.group(1), int(found.group(2))


class _Run(msgspec.Struct, frozen=True):
    """What every graph of one run shares: the rule, the mode, labels and profile."""

    rule: Rule
    graph: Graph
    strategy: str
    limit: int
    labels: Mapping[str, NodeLabels]
    profile: Profile

    def graph_changes(self, plan: ModelPlan, name: str, base: int) -> tuple[Changes, int]:
        """New streams for one graph's nodes, and how many ids the graph needs after `base`."""
        compute = self.graph.graph(name)
        streams = plan.graphs[name].streams
        dag = build_mini_dag(compute, streams, self.labels, self.profile)
        result = dag_streams(dag, self.strategy, self.limit)
        changes: Changes = {}
        for node in compute.nodes:
            topo = compute.index[node.name]
            if topo in result.offsets and _writable(node, streams[node.name], dag.nodes[topo]):
                stream = base + result.offsets[topo]
                changes[node.name] = (stream, Note(self.rule.name, stream, result.reasons[topo]))
        return changes, result.required


def _writable(node: Node, stream: int, dag_node: DagNode) -> bool:
    """Spec 6 step 8: NetOutput, RTS label nodes (value true, unlike the static passes'
    presence test), non-weight DAG nodes and nodes without a stream keep their stream."""
    return (node.type != "NetOutput" and node.attr(RTS_LABEL_NODE) is not True
            and dag_node.weighted and stream != INVALID)


class MiniDagStream(RulePass):
    """mini-dag (MiniDAGStreamPass); its mode comes from the graph (`parse_dag_mode`)."""

    __slots__ = ()

    def apply(self, ctx: ModelContext, plan: ModelPlan) -> PassResult[ModelPlan]:
        """Replace engine-based streams by DAG streams when a DAG mode is set.

        Reads the stream labels after the label rules from `ctx.labels`; in the dynamic flow
        `ctx.forced_main` (the rule set's `dynamic-renumber` rule) matches the nodes the
        recompaction forces onto the main stream (None: none).
        """
        graph = ctx.graph
        mode = parse_dag_mode(graph)
        if mode is None:
            return PassResult(plan, False)
        run = _Run(self.rule, graph, strategy=mode[0], limit=mode[1],
                   profile=load_profile(graph), labels=ctx.labels)
        names = dynamic_graphs(graph) if graph.dynamic_shape else list(plan.graphs)
        new = _all_graphs(run, plan, names)
        if graph.dynamic_shape:
            # No node is INVALID after renumbering, so Data/NetOutput-like nodes were weighted
            # and Data got a DAG stream; recompaction puts the forced-main nodes back on 0
            # (spec 4.4).
            forced = ctx.forced_main.match if ctx.forced_main else _nothing
            new = recompact(self.rule, graph, new, forced)
        return outcome(plan, new)


def _all_graphs(run: _Run, plan: ModelPlan, names: list[str]) -> ModelPlan:
    """Spec 3.4 + 6 per graph: ids from current max + 1 on, recorded as the custom ids."""
    first = plan.next_stream  # GE: current max = next_stream - 1, each new id is ++current max
    current = first
    for name in names:
        base = current  # spec 6 step 1: base := ++current_max
        changes, required = run.graph_changes(plan, name, base)
        plan = plan.set_nodes(name, changes)
        # step 7: then `required` more ids. The graph uses base .. base+required-1, so one id
        # per graph (base+required) stays unused until compaction (spec 6, "net effect").
        current = base + 1 + required
    plan = replace(plan, next_stream=current,
                   custom_stream_ids=(*plan.custom_stream_ids, *range(first, current)))
    return plan


def _nothing(_: Node) -> bool:
    return False


def recompact(rule: Rule, graph: Graph, plan: ModelPlan, forced_main: NodePredicate) -> ModelPlan:
    """Spec 4.4 step 5: ids used by ordinary nodes become 0..k-1 (k >= 1); the nodes left out
    (no stream, owning subgraphs, or `forced_main`) go to stream 0."""
    names = dynamic_graphs(graph)
    used = {s for g in names for n, s in _counted(graph, plan, g, forced_main) if s != INVALID}
    remap = {old: new for new, old in enumerate(sorted(used))}
    for g in names:
        changes: Changes = {}
        for name, old in _counted(graph, plan, g, forced_main):
            new = 0 if old == INVALID else remap[old]
            if new != plan.graphs[g].streams[name]:
                why = "main stream" if old == INVALID else f"stream {old} recompacted"
                changes[name] = (new, Note(rule.name, new, why, decides=old == INVALID))
        plan = plan.set_nodes(g, changes)
    count = max(len(remap), 1)
    return replace(plan, next_stream=count, main_stream_num=count)


def _counted(graph: Graph, plan: ModelPlan, name: str, forced_main: NodePredicate
             ) -> list[tuple[str, int]]:
    """(node, stream) per direct node; INVALID for the nodes the recompaction leaves out."""
    streams = plan.graphs[name].streams
    return [(n.name, INVALID if n.subgraphs or forced_main(n) else streams[n.name])
            for n in graph.graph(name).nodes]
