"""Engine-subgraph partitioning, exactly as GE's second partitioning (ge-logical-streams.md 1.6).

Per graph (root, then subgraphs in R-order): seed one cluster per node, greedily merge each node
with its parents (or, with `ge.topoSortingMode` "3", consecutive clusters) when engine and labels
agree and no other path would make a cycle, drop data-like source clusters, and list the rest in
L-order with their predecessor/successor subgraphs. A graph file may instead give the partition
explicitly (formats.md 1): that list is GE's L-order as GE's partitioner handed it over, used
in the listed order; then only the pred/succ relation is computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, compress
from operator import attrgetter

import msgspec
import numpy as np

from streamalloc.arrays import sorted_distinct
from streamalloc.errors import InputError, OptionError
from streamalloc.ir.clusters import ENGINE_DEFAULT_DATA, Cluster, seed_clusters
from streamalloc.ir.engines import Engine
from streamalloc.ir.graph import ComputeGraph, Graph
from streamalloc.ir.labels import NodeLabels
from streamalloc.mappings import Columns, picked

FORCE_ATTACH = "_force_attach_stream"
_ATTRS, _MEMBERS = attrgetter("attrs"), attrgetter("nodes")
NO_NEED_PARTITION = "_no_need_partition"


class EngineSubgraph(msgspec.Struct, frozen=True):
    """One partition subgraph: a group of same-engine, same-label nodes of one graph."""

    index: int
    id: str
    graph: str
    engine: Engine
    stream_label: str
    user_stream_label: str
    nodes: tuple[str, ...]
    preds: tuple[int, ...]
    succs: tuple[int, ...]
    max_parallel_num: int
    force_attach: bool

    @property
    def engine_name(self) -> str:
        """The cluster engine's name."""
        return self.engine.name


class GraphPartition(msgspec.Struct, frozen=True):
    """The L-ordered subgraph list of one graph and the nodes left outside every subgraph.

    `owner_at` gives each node's subgraph by the node's G-order position (-1: outside), the
    form the per-node passes read in order; `subgraph_of` the same by name, for the nodes of
    a subgraph (its index is made on the first lookup)."""

    graph: str
    subgraphs: tuple[EngineSubgraph, ...]
    outside: tuple[str, ...]
    subgraph_of: Mapping[str, int]
    owner_at: tuple[int, ...]


def parse_max_parallel(text: str, source: str = "") -> dict[str, int]:
    """`ge.streamMaxParallelNum` ("engine:num,engine:num") as a map; engines not listed use 1."""
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        engine, sep, num = item.rpartition(":")
        if not sep or not engine or not num.isdigit() or int(num) < 1:
            raise OptionError(f"{source}: option ge.streamMaxParallelNum item {item!r}: expected "
                              "ENGINE:N with N a positive integer, e.g. 'AIcoreEngine:4'")
        result[engine] = int(num)
    return result


def auto_multistream_mode(graph: Graph) -> str:
    """`ge.autoMultistreamParallelMode`: the root graph attribute wins over the option."""
    attr = graph.root.attrs.get("ge.autoMultistreamParallelMode")
    if attr is not None:
        return str(attr.value)
    return graph.option("ge.autoMultistreamParallelMode")


def partition_model(graph: Graph, labels: Mapping[str, NodeLabels]) -> dict[str, GraphPartition]:
    """Partitions of the root and every subgraph (R-order), keyed by graph name.

    `labels` are the stream labels after the label rules (`rules.labelling.rule_labels`).
    """
    max_parallel = parse_max_parallel(graph.option("ge.streamMaxParallelNum"), graph.source)
    consecutive = graph.option("ge.topoSortingMode") == "3"
    cv_mode = auto_multistream_mode(graph) == "cv"
    result: dict[str, GraphPartition] = {}
    for compute in [graph.root, *(graph.subgraphs[s] for s in graph.r_order())]:
        if NO_NEED_PARTITION in compute.attrs:
            continue
        if graph.partition is not None:
            groups = _explicit_groups(graph, compute, labels)
        else:
            clusters = seed_clusters(compute, labels, cv_mode)
            clusters.merge_all(consecutive)
            groups = clusters.groups()
        result[compute.name] = _listed(graph, compute, groups, max_parallel)
    return result


def _explicit_groups(graph: Graph, compute: ComputeGraph,
                     labels: Mapping[str, NodeLabels]) -> list[Cluster]:
    groups = []
    for entry in graph.partition or ():
        nodes = sorted(compute.index[n] for n in entry.nodes if n in compute.index)
        if nodes:
            user = labels[compute.nodes[nodes[0]].name].user_stream_label
            groups.append(Cluster(nodes, entry.engine, entry.stream_label, user, entry.id))
    return groups


def _listed(graph: Graph, compute: ComputeGraph, groups: Sequence[Cluster],
            max_parallel: Mapping[str, int]) -> GraphPartition:
    kept = [g for g in groups if g.engine != ENGINE_DEFAULT_DATA]
    if graph.partition is None:  # L-order: by first node (1.6.4); a given list is GE's L-order
        kept.sort(key=lambda g: g.nodes[0])
    owner_at = np.full(len(compute.nodes), -1, np.int64)  # subgraph by node position, -1: none
    if kept:  # one assignment for all groups
        sizes = list(map(len, map(_MEMBERS, kept)))
        owner_at[np.fromiter(chain.from_iterable(map(_MEMBERS, kept)), np.int64, sum(sizes))] = \
            np.repeat(np.arange(len(kept)), sizes)
    preds = _neighbour_subgraphs(compute, owner_at, len(kept))
    succs: list[set[int]] = [set() for _ in kept]
    for k, ps in enumerate(preds):
        for p in ps:
            succs[p].add(k)
    names = list(compute.index)  # G-order, without reading a node
    nodes = compute.nodes
    forced = {i for i in compress(range(len(nodes)), map(bool, map(_ATTRS, nodes)))
              if FORCE_ATTACH in nodes[i].attrs}  # few nodes have attributes
    subgraphs = tuple(
        _subgraph(graph, compute, k, g, (picked(names, g.nodes), preds[k],
                                         succs[k], max_parallel.get(g.engine, 1),
                                         not forced.isdisjoint(g.nodes)))
        for k, g in enumerate(kept))
    inside = owner_at >= 0
    owner = Columns(list(compress(names, inside.tolist())), owner_at[inside].tolist())
    outside = picked(names, np.flatnonzero(~inside).tolist())
    return GraphPartition(compute.name, subgraphs, outside, owner, tuple(owner_at.tolist()))


def _neighbour_subgraphs(compute: ComputeGraph, owner_at: np.ndarray, count: int
                         ) -> list[list[int]]:
    """Per subgraph, the other subgraphs that own a data producer or control predecessor of a
    member (ascending)."""
    if not count:
        return []
    producer, consumer = compute.producers.edges()
    src, dst = owner_at[producer], owner_at[consumer]
    between = (src >= 0) & (dst >= 0) & (src != dst)  # -1: outside every subgraph
    pairs = sorted_distinct(dst[between] * count + src[between])
    found: list[list[int]] = [[] for _ in range(count)]
    for k, p in zip((pairs // count).tolist(), (pairs % count).tolist(), strict=True):
        found[k].append(p)
    return found


def _subgraph(graph: Graph, compute: ComputeGraph, k: int, group: Cluster,
              parts: tuple[tuple[str, ...], list[int], set[int], int, bool]) -> EngineSubgraph:
    # member names, neighbour subgraphs, parallel number, whether a member forces attaching
    names, preds, succs, max_parallel_num, force_attach = parts
    engine = graph.engines.get(group.engine)
    if engine is None:
        raise InputError(f"{graph.source}: engine subgraph {k} of graph {compute.name!r} uses "
                         f"engine {group.engine!r}, which is not in the engine table")
    return EngineSubgraph(
        index=k, id=group.id or f"{compute.name}/sg{k}", graph=compute.name, engine=engine,
        stream_label=group.label, user_stream_label=group.user_label, nodes=names,
        preds=tuple(sorted(preds)), succs=tuple(sorted(succs)),
        max_parallel_num=max_parallel_num, force_attach=force_attach)
