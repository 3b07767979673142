"""The cluster merging of GE's engine partitioner (ge-logical-streams.md 1.6.1-1.6.3).

A cluster is a set of node positions (G-order indices) of one graph. Clusters are named by their
smallest member index; `in_`/`out` hold the names of neighbouring clusters. Merging keeps the
smaller name, so index b refers to cluster s after merge(s, b) as in GE.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from streamalloc.ir.graph import ComputeGraph, Node
from streamalloc.ir.labels import NO_LABELS, NodeLabels
from streamalloc.recent import Recent

ENGINE_DEFAULT_DATA = "ENGINE_DEFAULT_DATA"
DATA_LIKE_TYPES = frozenset({"Data", "RefData", "AippData", "AnnData", "Const", "Constant",
                             "Variable", "VariableV2"})
CV_CORE_TYPE = "_cube_vector_core_type"
ENABLE_CV_PARALLEL = "_enable_cv_parallel"


@dataclass(slots=True)
class Cluster:
    """Member node indices (ascending), cluster engine and labels, neighbour cluster names
    (slots: a graph starts with one cluster per node)."""

    nodes: list[int]
    engine: str
    label: str
    user_label: str
    id: str = ""
    in_: set[int] = field(default_factory=set)
    out: set[int] = field(default_factory=set)


# The partition and the per-graph passes of one allocation read the same table of one graph.
_IN_POSITIONS: Recent[tuple[tuple[int, ...], ...]] = Recent(4)


def in_positions(compute: ComputeGraph) -> tuple[tuple[int, ...], ...]:
    """Per node (G-order), the positions of its connected data producers (slot order), then
    of its control predecessors."""
    key = ("in_positions", id(compute))
    known = _IN_POSITIONS.get(key, compute)
    if known is not None:
        return known
    index = compute.index
    table = tuple(tuple([index[r.src] for r in node.inputs if r is not None]
                        + [index[src] for src in node.control_inputs]) for node in compute.nodes)
    return _IN_POSITIONS.put(key, (compute,), table)


def is_data_like(node: Node) -> bool:
    """GE's data-like source (1.6.1): a Data/Const/Variable-type node without any input."""
    return node.type in DATA_LIKE_TYPES and node.inputs.count(None) == len(node.inputs) \
        and not node.control_inputs


def _cluster_engine(node: Node, cv_marked: set[str]) -> str:
    if is_data_like(node):
        return ENGINE_DEFAULT_DATA
    if node.name in cv_marked or (node.attrs and node.attr(ENABLE_CV_PARALLEL) is True):
        return "VectorEngine"
    return "AIcoreEngine" if node.engine == "DNN_VM_CUSTOM" else node.engine


def seed_clusters(compute: ComputeGraph, labels: Mapping[str, NodeLabels],
                  cv_mode: bool) -> ClusterSet:
    """One cluster per node (1.6.1), after "cv" marking when `cv_mode` (1.6.2)."""
    cv_marked = cv_parallel_nodes(compute) if cv_mode else set()
    clusters: dict[int, Cluster] = {}
    for i, (node, preds) in enumerate(zip(compute.nodes, in_positions(compute), strict=True)):
        engine = _cluster_engine(node, cv_marked)
        tags = labels.get(node.name, NO_LABELS)
        user = "" if engine == ENGINE_DEFAULT_DATA else tags.user_stream_label
        # neighbours that precede it (a loop back edge comes from a later node)
        clusters[i] = Cluster([i], engine, tags.stream_label, user,
                              in_={j for j in preds if j < i})
    for i, cluster in clusters.items():
        for p in cluster.in_:
            clusters[p].out.add(i)
    return ClusterSet(clusters)


def _is_aiv(node: Node) -> bool:
    core = node.attr(CV_CORE_TYPE)
    return core in ("AIV", "MIX_AIV") or (core == "MIX" and node.attr("_mix_is_aiv") is True)


def cv_parallel_nodes(compute: ComputeGraph) -> set[str]:
    """AIV nodes GE marks `_enable_cv_parallel` (1.6.2): not ordered between its AIC neighbours."""
    nodes = compute.nodes
    aic = [i for i, n in enumerate(nodes) if n.has_attr(CV_CORE_TYPE) and not _is_aiv(n)]
    marked, k = set(), 0
    for i, node in enumerate(nodes):
        if not _is_aiv(node):
            continue
        while k < len(aic) and aic[k] < i:
            k += 1
        pre = aic[k - 1] if k > 0 else None
        post = aic[k] if k < len(aic) else None
        if not (_reaches(compute, pre, i) and (post is None or _reaches(compute, i, post))):
            marked.add(node.name)
    return marked


def _reaches(compute: ComputeGraph, start: int | None, target: int) -> bool:
    """A directed path start -> target, searching only nodes whose index is <= target's."""
    if start is None:
        return False
    stack, seen = [start], {start}
    while stack:
        current = stack.pop()
        if current == target:
            return True
        for succ in compute.successors(compute.nodes[current].name):
            j = compute.index[succ]
            if j <= target and j not in seen:
                seen.add(j)
                stack.append(j)
    return False


class ClusterSet:
    """Clusters of one graph under GE's merge rules."""

    def __init__(self, clusters: dict[int, Cluster]) -> None:
        self.clusters = clusters

    def merge_all(self, consecutive: bool) -> None:
        """GE's greedy parent merge, or the consecutive merge of `ge.topoSortingMode` "3"."""
        if consecutive:
            self._merge_consecutive()
        else:
            self._merge_parents()

    def _merge_parents(self) -> None:
        for child in range(len(self.clusters)):
            in_ = self.clusters[child].in_  # merging changes it: iterate a copy
            parents = sorted(in_, key=lambda p: (len(self.clusters[p].out), p)) \
                if len(in_) > 1 else tuple(in_)
            current = child
            for parent in parents:
                if self._mergeable(parent, current, upper=child):
                    current = self._merge(parent, current)

    def _merge_consecutive(self) -> None:
        ids = [i for i, c in sorted(self.clusters.items()) if c.engine != ENGINE_DEFAULT_DATA]
        for k in range(len(ids) - 1, 0, -1):
            if self._mergeable(ids[k - 1], ids[k], upper=ids[k]):
                self._merge(ids[k - 1], ids[k])

    def _mergeable(self, p: int, c: int, upper: int) -> bool:
        first, second = self.clusters.get(p), self.clusters.get(c)
        if first is None or second is None:
            return False
        if first.user_label and first.user_label == second.user_label:
            return True  # second partitioning: same user label merges across engines
        if first.engine != second.engine or first.label != second.label:
            return False
        return not self._reachable_without_edge(p, c, upper)

    def _reachable_without_edge(self, p: int, c: int, upper: int) -> bool:
        """Is c reachable from p other than by the direct edge p->c (GE's restricted DFS)?"""
        stack = [o for o in self.clusters[p].out if o != c and o < upper]
        seen = set(stack)
        while stack:
            current = stack.pop()
            for o in self.clusters[current].out:
                if o == c:
                    return True
                if o < upper and o not in seen:
                    seen.add(o)
                    stack.append(o)
        return False

    def _merge(self, p: int, c: int) -> int:
        s, b = (p, c) if p < c else (c, p)
        small, big = self.clusters[s], self.clusters.pop(b)
        small.nodes.extend(big.nodes)
        small.out.discard(b)
        big.in_.discard(s)
        small.in_ |= big.in_
        small.out |= big.out
        for x in big.in_:
            self.clusters[x].out.discard(b)
            self.clusters[x].out.add(s)
        for y in big.out:
            self.clusters[y].in_.discard(b)
            self.clusters[y].in_.add(s)
        small.in_.discard(s)
        small.out.discard(s)
        return s

    def groups(self) -> list[Cluster]:
        """The clusters, members sorted by G-order."""
        for cluster in self.clusters.values():
            cluster.nodes.sort()
        return list(self.clusters.values())
