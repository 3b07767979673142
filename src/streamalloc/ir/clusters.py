"""The cluster merging of GE's engine partitioner (ge-logical-streams.md 1.6.1-1.6.3).

A cluster is a set of node positions (G-order indices) of one graph. Clusters are named by their
smallest member index; a cluster's successor set holds the names of the clusters it feeds.
Merging keeps the smaller name, so index b refers to cluster s after merge(s, b) as in GE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate, compress, pairwise, repeat
from operator import attrgetter, eq

import msgspec
import numpy as np

from streamalloc.ir.graph import ComputeGraph, Node
from streamalloc.ir.labels import NO_LABELS, NodeLabels
from streamalloc.mappings import values_of

ENGINE_DEFAULT_DATA = "ENGINE_DEFAULT_DATA"
DATA_LIKE_TYPES = frozenset({"Data", "RefData", "AippData", "AnnData", "Const", "Constant",
                             "Variable", "VariableV2"})
CV_CORE_TYPE = "_cube_vector_core_type"
_USER_LABEL, _TYPE = attrgetter("user_stream_label"), attrgetter("type")
_STREAM_LABEL = attrgetter("stream_label")
ENABLE_CV_PARALLEL = "_enable_cv_parallel"


class Cluster(msgspec.Struct):
    """A cluster that remains after merging: member node indices (ascending), engine, labels."""

    nodes: list[int]
    engine: str
    label: str
    user_label: str
    id: str = ""


def in_positions(compute: ComputeGraph) -> list[list[int]]:
    """Per node (G-order), the positions of its connected data producers (slot order), then
    of its control predecessors."""
    producers = compute.producers
    data, control = producers.data.tolist(), producers.control.tolist()
    data_ends = accumulate(producers.data_counts.tolist())
    if not control and -1 not in data:  # most graphs: every slot connected, no control edge
        return [data[start:end] for start, end in pairwise([0, *data_ends])]
    control_ends = accumulate(producers.control_counts.tolist())
    return [[p for p in data[a:b] if p >= 0] + control[c:d]
            for (a, b), (c, d) in zip(pairwise([0, *data_ends]), pairwise([0, *control_ends]),
                                      strict=True)]


def is_data_like(node: Node) -> bool:
    """GE's data-like source (1.6.1): a Data/Const/Variable-type node without any input."""
    return node.type in DATA_LIKE_TYPES and node.inputs.count(None) == len(node.inputs) \
        and not node.control_inputs


def task_nodes(nodes: Iterable[Node]) -> tuple[Node, ...]:
    """The nodes that may issue tasks: all but the data-like sources (few: the type is tested
    first, at C speed, and only the nodes of a data-like type are looked at)."""
    nodes = tuple(nodes)
    keep = bytearray(b"\x01") * len(nodes)
    for i in compress(range(len(nodes)), map(DATA_LIKE_TYPES.__contains__, map(_TYPE, nodes))):
        keep[i] = not is_data_like(nodes[i])
    return tuple(compress(nodes, keep))


def _cluster_engine(node: Node, cv_marked: set[str]) -> str:
    if is_data_like(node):
        return ENGINE_DEFAULT_DATA
    if node.name in cv_marked or (node.attrs and node.attr(ENABLE_CV_PARALLEL) is True):
        return "VectorEngine"
    return "AIcoreEngine" if node.engine == "DNN_VM_CUSTOM" else node.engine


def _cluster_engines(nodes: Sequence[Node], cv_marked: set[str]) -> list[str]:
    """Per node, its cluster engine; a node without attributes, of no data-like type, not
    "cv"-marked and not DNN_VM_CUSTOM keeps its own engine (the common case, tested inline)."""
    return [node.engine if node.type not in DATA_LIKE_TYPES and not node.attrs
            and node.engine != "DNN_VM_CUSTOM" and node.name not in cv_marked
            else _cluster_engine(node, cv_marked) for node in nodes]


def _successors(preds: Sequence[Sequence[int]]) -> list[list[int]]:
    """Per node, the later nodes it feeds, once each; a loop back edge (from a later node) is
    no cluster edge (1.6.1)."""
    succs: list[list[int]] = [[] for _ in preds]
    for i, ps in enumerate(preds):
        for j in ps:
            if j < i and (not (out := succs[j]) or out[-1] != i):  # i's repeats come together
                out.append(i)
    return succs


def seed_clusters(compute: ComputeGraph, labels: Mapping[str, NodeLabels],
                  cv_mode: bool) -> ClusterSet:
    """One cluster per node (1.6.1), after "cv" marking when `cv_mode` (1.6.2)."""
    nodes = compute.nodes
    engines = _cluster_engines(nodes, cv_parallel_nodes(compute) if cv_mode else set())
    names = list(compute.index)  # G-order, without reading a node
    tags = values_of(labels, names, NO_LABELS)
    users = list(map(_USER_LABEL, tags))
    for i in compress(range(len(engines)), map(eq, engines, repeat(ENGINE_DEFAULT_DATA))):
        users[i] = ""  # a data-like source never joins a user-labelled cluster
    preds = in_positions(compute)
    return ClusterSet(engines, list(map(_STREAM_LABEL, tags)), users, preds, _successors(preds))


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
    """Clusters of one graph under GE's merge rules, kept in tables by node position.

    A cluster's engine and labels are those of its name node: merging keeps the smaller name's.
    `cluster_of` names every node's cluster; `members` lists merged clusters only (a seed
    cluster is its node); `outs` holds each cluster's successor clusters, a seed's as the list
    of its successor nodes until a merge changes it. No predecessor sets: a merge finds the
    predecessors of the cluster merged away from its members' inputs. Cluster objects are made
    only for the clusters that remain (`groups`).
    """

    def __init__(self, engines: list[str], labels: list[str], users: list[str],
                 preds: Sequence[Sequence[int]], succs: list[list[int]]) -> None:
        self.engines, self.labels, self.users = engines, labels, users
        self.preds = preds
        self.cluster_of = list(range(len(engines)))
        self.members: dict[int, list[int]] = {}
        self.outs: list[list[int] | set[int]] = list(succs)

    def merge_all(self, consecutive: bool) -> None:
        """GE's greedy parent merge, or the consecutive merge of `ge.topoSortingMode` "3"."""
        if consecutive:
            self._merge_consecutive()
        else:
            self._merge_parents()

    def _merge_parents(self) -> None:
        # A node's cluster is still its seed cluster when its turn comes: merges so far only
        # joined clusters named below it, so its parents are the clusters of its earlier preds.
        cluster_of, outs, members = self.cluster_of, self.outs, self.members
        engines, labels, users = self.engines, self.labels, self.users
        for child, preds in enumerate(self.preds):
            if len(preds) == 1:
                if preds[0] >= child:
                    continue
                parent = cluster_of[preds[0]]
            else:
                parents = {cluster_of[j] for j in preds if j < child}
                if len(parents) != 1:
                    self._merge_into_parents(child, parents)
                    continue
                (parent,) = parents
            # one parent cluster, the common case: `_mergeable`, then `_merge` of a seed
            # cluster into it (no other predecessor to rename, only later successors)
            out = outs[parent]
            if not users[parent] or users[parent] != users[child]:
                if engines[parent] != engines[child] or labels[parent] != labels[child]:
                    continue
                # a seed's successors are a list in G-order: its first is its least
                if out and (out[0] if type(out) is list else min(out)) < child and \
                        self._reachable_without_edge(parent, child, child):
                    continue
            # the join, inline (most nodes): the child's seed cluster into its parent's
            cluster_of[child] = parent
            joined = members.get(parent)
            if joined is None:
                members[parent] = [parent, child]
            else:
                joined.append(child)
            owned = out if isinstance(out, set) else set(out)  # `_own_out`, inline
            outs[parent] = owned
            owned.discard(child)
            owned.update(outs[child])
            outs[child] = []

    def _merge_into_parents(self, child: int, parents: set[int]) -> None:
        """A node joins those of its several parent clusters that it may, the one with the
        fewest successors first."""
        outs = self.outs
        current = child
        for parent in sorted(parents, key=lambda p: (len(outs[p]), p)):
            if self._mergeable(parent, current, upper=child):
                current = self._merge(parent, current)

    def _merge_consecutive(self) -> None:
        ids = [i for i, engine in enumerate(self.engines) if engine != ENGINE_DEFAULT_DATA]
        for k in range(len(ids) - 1, 0, -1):
            if self._mergeable(ids[k - 1], ids[k], upper=ids[k]):
                self._merge(ids[k - 1], ids[k])

    def _mergeable(self, p: int, c: int, upper: int) -> bool:
        user = self.users[p]
        if user and user == self.users[c]:
            return True  # second partitioning: same user label merges across engines
        if self.engines[p] != self.engines[c] or self.labels[p] != self.labels[c]:
            return False
        return not self._reachable_without_edge(p, c, upper)

    def _reachable_without_edge(self, p: int, c: int, upper: int) -> bool:
        """Is c reachable from p other than by the direct edge p->c (GE's restricted DFS)?"""
        others = [o for o in self.outs[p] if o != c and o < upper]
        # the common case: p feeds no other cluster below the bound
        return bool(others) and self._reaches(others, c, upper)

    def _reaches(self, starts: list[int], c: int, upper: int) -> bool:
        """Is c reachable from `starts` through clusters below `upper` (GE's DFS)?"""
        outs, stack, seen = self.outs, starts, set(starts)
        while stack:
            for o in outs[stack.pop()]:
                if o == c:
                    return True
                if o < upper and o not in seen:
                    seen.add(o)
                    stack.append(o)
        return False

    def _merge(self, p: int, c: int) -> int:
        s, b = (p, c) if p < c else (c, p)
        moved = self.members.pop(b, None) or [b]
        for x in self._predecessors(moved):
            if x not in (s, b):
                out = self._own_out(x)
                out.discard(b)
                out.add(s)
        cluster_of = self.cluster_of
        for x in moved:
            cluster_of[x] = s
        self.members.setdefault(s, [s]).extend(moved)
        out = self._own_out(s)
        out.update(self.outs[b])
        out.discard(b)
        out.discard(s)
        self.outs[b] = []
        return s

    def _predecessors(self, members: list[int]) -> set[int]:
        """The clusters that feed these members (forward edges only, as seeded)."""
        cluster_of, preds = self.cluster_of, self.preds
        return {cluster_of[j] for m in members for j in preds[m] if j < m}

    def _own_out(self, x: int) -> set[int]:
        """Cluster x's successor set, made a set when it is still a seed's list."""
        out = self.outs[x]
        if isinstance(out, set):
            return out
        owned = self.outs[x] = set(out)
        return owned

    def groups(self) -> list[Cluster]:
        """The remaining clusters by name, members sorted by G-order."""
        members, engines, labels, users = self.members, self.engines, self.labels, self.users
        named = np.array(self.cluster_of, np.int64)
        roots = np.flatnonzero(named == np.arange(len(named))).tolist()  # clusters named so
        return [Cluster(sorted(members[s]) if s in members else [s], engines[s], labels[s],
                        users[s]) for s in roots]
