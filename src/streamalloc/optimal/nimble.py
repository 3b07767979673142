"""Nimble's setting without rules: the fewest events, then the fewest streams, exactly.

Under full concurrency a stream holds only nodes that are pairwise ordered, so its nodes in
T-order form a chain of the reachability order, and a plan is a chain cover: a matching of
the bipartite graph (u out, v in) over the pairs where u reaches v, each matched pair putting v
right after u on a stream. A stream holds a reduction edge only between neighbours (with w
between them, u -> w -> v makes u -> v no reduction edge), so the plan's events are |E_TR| less
the matched reduction edges, and its streams n less the matched pairs. Weighting a reduction
edge n + 1 and any other pair 1, a maximum-weight matching first takes as many reduction edges
as a maximum matching of E_TR does (Nimble's minimum of events: no pair's weight adds up to
one reduction edge's), then as many pairs as those allow (the fewest streams). It is solved as
a min-cost flow (OR-Tools). Inception v1: 54 events on 4 streams, where the matching of E_TR
alone left 28; BERT base 50 on 4 (27), GPT-2 small 73 on 4 (38).

The pairs grow with the square of the nodes (the 48-layer transformer training step, 2,506
streamed nodes: 2.1 million pairs, 0.7 s); above PAIRS_MAX the chains of the E_TR matching
are kept, joined where one's last node reaches another's first (`linked`, a flow on the
graph's edges): the fewest events on fewer streams, proven the fewest where they are as few as
the width. A generated 11,500-node layered graph (66 million pairs): 3,273 chains before
joining, 3 after, its width.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from ortools.graph.python import min_cost_flow

from streamalloc.optimal.reach_flow import most_following, reach_matching
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.run import chains_of

PAIRS_MAX = 4_000_000  # ordered pairs of nodes for the exact chains (memory: a few arrays of
# this length; time about half a second per million)


def fewest_streams(dag: TaskDag) -> tuple[tuple[tuple[int, ...], ...], bool]:
    """Streams with Nimble's minimum of events, and whether they are also the fewest such
    streams (above PAIRS_MAX ordered pairs they are `matching_chains` joined by `linked`,
    proven only where they are as few as `width`)."""
    if sum(bits.bit_count() for bits in dag.ancestors) > PAIRS_MAX:
        chains = linked(dag, matching_chains(dag))
        return chains, len(chains) == width(dag)
    n = dag.size
    before, after = _ordered_pairs(dag)
    reduction = np.array([u * n + v for u, v in dag.reduction], dtype=np.int64)
    weight = np.where(np.isin(before * n + after, reduction), n + 1, 1)
    flow = min_cost_flow.SimpleMinCostFlow()
    source, sink, nodes = 2 * n, 2 * n + 1, np.arange(n, dtype=np.int64)
    pairs = flow.add_arcs_with_capacity_and_unit_cost(
        before, n + after, np.ones(len(before), dtype=np.int64), -weight)
    flow.add_arcs_with_capacity_and_unit_cost(np.full(n, source), nodes, np.ones(n, np.int64),
                                              np.zeros(n, np.int64))
    flow.add_arcs_with_capacity_and_unit_cost(n + nodes, np.full(n, sink), np.ones(n, np.int64),
                                              np.zeros(n, np.int64))
    flow.add_arc_with_capacity_and_unit_cost(source, sink, n, 0)  # the nodes left unmatched
    flow.set_nodes_supplies(np.array([source, sink]), np.array([n, -n]))
    if flow.solve() != flow.OPTIMAL:
        raise AssertionError("the chain cover's flow has no optimum")
    used = np.flatnonzero(flow.flows(pairs))
    return chains_of(n, {(int(before[i]), int(after[i])) for i in used}), True


def linked(dag: TaskDag, chains: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """`chains` joined end to start where a chain's last node reaches another's first (a
    maximum matching of those pairs, `reach_flow.reach_matching`; no pair is a reduction edge,
    or the chains' matching was not maximum, so the events stay): fewer streams, not proven
    the fewest."""
    joins = reach_matching(dag.size, dag.edges, [chain[-1] for chain in chains],
                           sorted(chain[0] for chain in chains))
    arcs = set(joins) | {pair for chain in chains for pair in itertools.pairwise(chain)}
    return chains_of(dag.size, arcs)


def width(dag: TaskDag) -> int:
    """The fewest chains that hold every node (Dilworth's width): each node but a chain's
    first can follow a node of its own that reaches it, at most `reach_flow.most_following`
    of them."""
    return dag.size - most_following(dag.size, dag.edges, [True] * dag.size,
                                     [(range(dag.size), dag.size)])


def _ordered_pairs(dag: TaskDag) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) for every u that reaches v, v ascending, u ascending within."""
    width = (dag.size + 7) // 8
    before, after = [], []
    for v, bits in enumerate(dag.ancestors):
        if bits:
            row = np.unpackbits(np.frombuffer(bits.to_bytes(width, "little"), dtype=np.uint8),
                                bitorder="little")
            found = np.flatnonzero(row)
            before.append(found)
            after.append(np.full(len(found), v))
    if not before:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (np.concatenate(before).astype(np.int64),
            np.concatenate(after).astype(np.int64))


def matching_chains(dag: TaskDag) -> tuple[tuple[int, ...], ...]:
    """Chains of a maximum matching on the reduction edges: Nimble's minimum-event streams.
    Integer vertices (u out, n + v in) and sorted insertion keep the matching the same in
    every process (string hashes vary with PYTHONHASHSEED)."""
    n = dag.size
    bipartite = nx.Graph()
    bipartite.add_nodes_from(range(2 * n))
    bipartite.add_edges_from((u, n + v) for u, v in dag.reduction)
    matching = nx.bipartite.hopcroft_karp_matching(bipartite, top_nodes=range(n))
    arcs = {(u, v - n) for u, v in matching.items() if u < n}
    return chains_of(n, arcs)


def unordered_neighbours(dag: TaskDag, chains: tuple[tuple[int, ...], ...]
                         ) -> tuple[str, str] | None:
    """Two nodes next to each other on a stream that no path orders (full concurrency
    forbids them a stream), or None; a stream is in T-order, so its neighbours decide."""
    for chain in chains:
        for u, v in itertools.pairwise(chain):
            if not dag.reaches(u, v):
                return dag.names[u], dag.names[v]
    return None


def chain_events(dag: TaskDag, chains: tuple[tuple[int, ...], ...]) -> int:
    """The events of a chain cover: the reduction edges not between neighbours on a stream
    (Nimble's minimum for `fewest_streams`'s chains)."""
    reduction = set(dag.reduction)
    return len(reduction) - sum(pair in reduction for chain in chains
                                for pair in itertools.pairwise(chain))


def nimble_min_events(dag: TaskDag) -> int:
    """|E_TR| - |maximum matching on E_TR|: Nimble's minimum number of events."""
    return len(dag.reduction) - (dag.size - len(matching_chains(dag)))
