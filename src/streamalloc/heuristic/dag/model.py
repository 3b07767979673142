"""The mini DAG of one graph (spec 6 step 2): one node per direct node, in G-order.

`topo_id` is the node's position. Execution time: the profiled time when the profile has the
node, else -1 ("weighted", cost unknown); a node whose GE stream is INVALID gets 0
("non-weight"), whatever the profile says. A node with a non-empty stream label (after the label
rules) is *serial*, keyed by its label. Edges: per node in G-order, data edges by output index
(link order), then control edges.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from streamalloc.heuristic.dag.profiling import Profile
from streamalloc.heuristic.plan import INVALID
from streamalloc.ir.graph import ComputeGraph
from streamalloc.ir.labels import NO_LABELS, NodeLabels

DEFAULT_TIME = -1.0  # GE's default execution time: weighted, cost unknown
NON_WEIGHT = 0.0


class DagNode(msgspec.Struct, frozen=True):
    """One mini DAG node."""

    name: str
    topo_id: int
    time: float
    serial: str = ""
    profiled: bool = False

    @property
    def weighted(self) -> bool:
        """GE's test is on the time: 0 means non-weight (so a profiled 0 is non-weight too)."""
        return self.time != NON_WEIGHT


class MiniDag(msgspec.Struct, frozen=True):
    """Nodes by topo id and their successors (topo ids, in edge order)."""

    nodes: tuple[DagNode, ...]
    succs: tuple[tuple[int, ...], ...]

    @property
    def profiled(self) -> bool:
        """Did any node match a profiling row (spec 6 step 3)?"""
        return any(n.profiled for n in self.nodes)


def build_mini_dag(compute: ComputeGraph, streams: Mapping[str, int],
                   labels: Mapping[str, NodeLabels], profile: Profile) -> MiniDag:
    """The mini DAG of one graph from its current streams, labels and profile."""
    nodes = tuple(_node(i, n.name, streams[n.name], labels.get(n.name, NO_LABELS), profile)
                  for i, n in enumerate(compute.nodes))
    succs = tuple(_forward(compute, i, n.name) for i, n in enumerate(compute.nodes))
    return MiniDag(nodes, succs)


def _node(topo_id: int, name: str, stream: int, labels: NodeLabels, profile: Profile) -> DagNode:
    found = profile.lookup(name)
    time = DEFAULT_TIME if found is None else found
    if stream == INVALID:
        time = NON_WEIGHT  # whatever the profile says
    return DagNode(name, topo_id, time, labels.stream_label, found is not None)


def _forward(compute: ComputeGraph, topo_id: int, name: str) -> tuple[int, ...]:
    # Loop-back edges (NextIteration -> Merge) point backwards in G-order; like GE's sort we
    # ignore them, which keeps the mini DAG acyclic. Duplicates stay (the residual dedups).
    targets = (compute.index[s] for s in compute.successors(name))
    return tuple(t for t in targets if t > topo_id)
