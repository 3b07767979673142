"""What the constraint forms read: the enabled rules, final stream labels and who set them,
the nodes that later GE passes may move, and GE's engine partition (for the engine caps)."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import compress
from operator import attrgetter

import msgspec

from streamalloc.ir.attached import DISABLE, requests
from streamalloc.ir.clusters import task_nodes
from streamalloc.ir.engines import Engine
from streamalloc.ir.graph import ComputeGraph, Graph, Node
from streamalloc.ir.labels import NodeLabels
from streamalloc.ir.partition import (
    EngineSubgraph,
    GraphPartition,
    auto_multistream_mode,
    partition_model,
)
from streamalloc.mappings import Columns
from streamalloc.rules import labelling
from streamalloc.rules.model import Rule, RuleSet
from streamalloc.rules.predicates import match_all

# user policies that move matched nodes after GE's passes placed them
_MOVING_POLICIES = frozenset({"same-stream", "separate-streams", "dedicated-stream",
                              "pin-stream"})
_NO_DAG_MODES = ("", "cv", "default")
RTS_LABEL = "_rts_label_node"
_STREAM_LABEL, _ATTRS = attrgetter("stream_label"), attrgetter("attrs")


class LabelGroup(msgspec.Struct, frozen=True):
    """Nodes that assign-by-label (and independent-stream) put on one stream."""

    nodes: tuple[str, ...]
    rules: frozenset[str]  # label rules that set a member's final label
    independent: bool      # split off per independent engine


class RuleLabels(msgspec.Struct, frozen=True):
    """The labels after the label rules, and per node they changed the last rule that did."""

    labels: Mapping[str, NodeLabels]
    setter: Mapping[str, str]


@dataclass(frozen=True)
class Inputs:
    """One graph under one rule set, as the constraint builders read it."""

    graph: Graph
    flow: str
    enabled: tuple[Rule, ...]
    labels: Mapping[str, NodeLabels]
    label_rule: Mapping[str, str]
    known_partitions: Mapping[str, GraphPartition] | None = None

    @classmethod
    def of(cls, rules: RuleSet, graph: Graph,
           partitions: Mapping[str, GraphPartition] | None = None,
           labels: RuleLabels | None = None) -> Inputs:
        """Enabled rules (their `when:` holds) and the labels after the label rules;
        `partitions` and `labels`: GE's partition and the labels when the caller has them."""
        enabled = tuple(r for r in rules.rules if r.enabled(graph.options))
        if labels is None:
            labels = rule_labels(rules, graph)
        return cls(graph, rules.flow, enabled, labels.labels, labels.setter, partitions)

    @cached_property
    def tasks(self) -> tuple[Node, ...]:
        """Nodes that may issue tasks (data-like sources excluded), in T-order."""
        return task_nodes(self.graph.all_nodes())

    def engine(self, node: Node) -> Engine:
        """The node's engine entry."""
        return self.graph.engines.engines[node.engine]

    @staticmethod
    def rts_label(node: Node) -> bool:
        """GE's RTS label nodes take the default stream, not their subgraph's (spec 2.6)."""
        return node.has_attr(RTS_LABEL)

    def kinds(self, kind: str) -> list[Rule]:
        """The enabled rules of one kind."""
        return [r for r in self.enabled if r.kind == kind]

    @cached_property
    def dag_active(self) -> bool:
        """The DAG allocator replaces the engine-based streams (spec 6)."""
        return bool(self.kinds("mini-dag")) and \
            auto_multistream_mode(self.graph) not in _NO_DAG_MODES

    @cached_property
    def moved(self) -> frozenset[str]:
        """Nodes a later pass may take off the stream the earlier passes gave them."""
        found = {n.name for rule in self.kinds("parallel-group") for n in rule.matching(self.tasks)}
        for rule in self.kinds("allreduce-parallel"):
            found |= _data_descendants(self.graph, list(rule.matching(self.tasks)))
        found |= {n.name for kind in _MOVING_POLICIES for rule in self.kinds(kind)
                  for n in rule.matching(self.tasks)}
        return frozenset(found)

    @cached_property
    def partitions(self) -> Mapping[str, GraphPartition]:
        """GE's engine partition under these labels."""
        if self.known_partitions is not None:
            return self.known_partitions
        return partition_model(self.graph, self.labels)

    def dependency_nodes(self, rule: Rule) -> dict[tuple[str, str], tuple[tuple[str, ...], int]]:
        """(graph, engine) -> (nodes assign-by-dependency places and nothing moves, the cap)."""
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        caps: dict[tuple[str, str], int] = {}
        by_name = self.graph.by_name
        every = rule.match is match_all  # the usual rule: no node to test
        # moved nodes and RTS label nodes, few: most subgraphs are taken whole
        left_out = self.moved | {n.name for n in filter(_ATTRS, self.tasks) if RTS_LABEL in n.attrs}
        for graph, partition in self.partitions.items():
            for sg in partition.subgraphs:
                if sg.stream_label or sg.engine.independent or sg.engine.skip_assign_stream:
                    continue
                if not every and not all(rule.matches(by_name[n]) for n in sg.nodes):
                    continue
                key = (graph, sg.engine_name)
                caps[key] = sg.max_parallel_num
                if _heir(partition, sg, self.moved):
                    continue
                found[key] += [n for n in sg.nodes if n not in left_out] \
                    if not left_out.isdisjoint(sg.nodes) else sg.nodes
        return {k: (tuple(v), caps[k]) for k, v in found.items() if v}

    @cached_property
    def opening_orders(self) -> Mapping[str, Mapping[str, int]]:
        """Per graph and node, the rank of the node's engine subgraph in a topological order
        of the graph's subgraphs (the ready one first in L-order): the order in which a
        stream's nodes came to it. GE hands a stream to a subgraph before the subgraphs that
        reuse it, which are its successors (an attach engine's reuser may have nodes earlier
        in G-order, spec 2.4.3), and a later pass moves a node onto a stream only after a node
        it depends on (optimize-ineffective, 2.10), so the node of least rank opened the
        stream. Every engine cap of a graph shares its order."""
        return {graph: _subgraph_ranks(self.graph.graph(graph), p)
                for graph, p in self.partitions.items()}

    def requests_attached(self, node: Node) -> bool:
        """Static flow: the node asks for at least one attached stream (spec 5.1)."""
        if not node.attrs or self.flow != "static" or node.has_attr(DISABLE):  # asked by attrs
            return False
        return any(count > 0 for _, _, count in requests(self.graph, node, 0))

    @cached_property
    def label_groups(self) -> tuple[LabelGroup, ...]:
        """Per graph and label (and independent engine): the nodes assign-by-label joins."""
        by_label = self.kinds("assign-by-label")
        if self.flow != "static" or not by_label or self.dag_active:
            return ()
        split_rules = self.kinds("independent-stream")
        groups: dict[tuple[str, str, str], list[Node]] = defaultdict(list)
        labelled = set(compress(self.labels.keys(), map(_STREAM_LABEL, self.labels.values())))
        for node in self.tasks if labelled else ():  # most models label no node
            tags = self.labels[node.name]
            if node.name not in labelled or node.name in self.moved or self.rts_label(node) \
                    or not all(r.matches(node) for r in by_label):
                continue
            split = self.engine(node).independent and not tags.user_stream_label \
                and any(r.matches(node) for r in split_rules)
            groups[(node.graph, node.engine if split else "", tags.stream_label)].append(node)
        return tuple(LabelGroup(tuple(n.name for n in members),
                                frozenset(self.label_rule[n.name] for n in members
                                          if n.name in self.label_rule), bool(engine))
                     for (_, engine, _), members in groups.items())


def _heir(partition: GraphPartition, sg: EngineSubgraph, moved: frozenset[str]) -> bool:
    """May `sg` continue on a stream whose opener a later pass takes off it (spec 2.4.3: an
    attach engine reuses the stream of an unlabelled, not independent predecessor of its
    scheduler)? Either a skip-engine predecessor (steps 1, 2 and 5), whose nodes the
    skip-engine pass (2.9) takes off the stream (a Reshape that issues no task), or one whose
    nodes all move later (`moved`: an AllReduce's consumers under ge.hcomParallel). `sg`'s
    nodes are then the first left on a stream their engine did not open, and never count as
    its openers: an AI CPU op after a Reshape, under an AI CPU cap of 2, is on the third
    stream of AI CPU nodes in GE's own plan. Step 4 (the predecessor's other consumers of its
    own engine) is left out: a cap then counts a stream too few, never one too many."""
    if not sg.engine.attach:
        return False
    subgraphs = partition.subgraphs
    return any(not p.engine.independent and not p.stream_label
               and p.engine.scheduler_id == sg.engine.scheduler_id
               and (p.engine.skip_assign_stream or moved.issuperset(p.nodes))
               for p in map(subgraphs.__getitem__, sg.preds))


def _subgraph_ranks(compute: ComputeGraph, partition: GraphPartition) -> Columns[str, int]:
    """Kahn's algorithm over the subgraphs' predecessors, the lowest L-order index first; per
    node of the graph in G-order, its subgraph's rank (-1 outside every subgraph): columns,
    which `rules.check` reads in that order without a lookup per node. Where no subgraph is
    ready but some are left, the subgraphs form a cycle (GE merges clusters of one user label
    without its path check, spec 1.6.3): the lowest index left goes next."""
    subgraphs = partition.subgraphs
    missing = [len(sg.preds) for sg in subgraphs]
    ready = [sg.index for sg in subgraphs if not sg.preds]
    heapq.heapify(ready)
    rank_of = [-1] * len(subgraphs)
    rank = 0
    left = iter(range(len(subgraphs)))  # the lowest index not ranked yet, when a cycle stalls
    while rank < len(subgraphs):
        if not ready:
            heapq.heappush(ready, next(i for i in left if rank_of[i] < 0))
        index = heapq.heappop(ready)
        if rank_of[index] >= 0:  # a cycle's member pushed again when its last pred came
            continue
        rank_of[index] = rank
        rank += 1
        for succ in subgraphs[index].succs:
            missing[succ] -= 1
            if not missing[succ] and rank_of[succ] < 0:
                heapq.heappush(ready, succ)
    rank_of.append(-1)  # owner -1 (outside) reads the last entry
    return Columns(list(compute.index), list(map(rank_of.__getitem__, partition.owner_at)))


def rule_labels(rules: RuleSet, graph: Graph) -> RuleLabels:
    """The labels after the enabled label rules of `rules`, and who set them."""
    labels, changes = labelling.rule_labels(rules, graph)
    return RuleLabels(labels, {name: steps[-1][0].name for name, steps in changes.items()})


def _data_descendants(graph: Graph, sources: list[Node]) -> set[str]:
    found: set[str] = set()
    stack = [n.name for n in sources if _fusion(n) > 0]
    while stack:
        node = graph.node(stack.pop())
        for consumer in graph.graph(node.graph).data_consumers(node.name):
            if consumer not in found:
                found.add(consumer)
                stack.append(consumer)
    return found


def _fusion(node: Node) -> int:
    """GE moves successors only of fused AllReduce nodes (`fusion` > 0, spec 2.8)."""
    value = node.attr("fusion", -1)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
