"""Nimble's setting without rules: the fewest events, then the fewest streams, exactly.

Under full concurrency a stream holds only nodes that are pairwise ordered, so its nodes in
T-order form a chain of the reachability order, and a plan is a chain cover: a matching of
the bipartite graph (u out, v in) over the pairs where u reaches v, each matched pair putting v
right after u on a stream. A stream holds a reduction edge only between neighbours (with w
between them, u -> w -> v makes u -> v no reduction edge), so the plan's events are |E_TR| less
the matched reduction edges, and its streams n less the matched pairs. Weighting a reduction
edge 3 and any other pair 1, a maximum-weight matching first takes as many reduction edges as
a maximum matching of E_TR does (Nimble's minimum of events), then as many pairs as those
allow (the fewest streams): were it d reduction edges short, a component of its symmetric
difference with such a matching would have d' >= 1 more of them there and at most d' + 1
fewer pairs of other kinds, and swapping it would gain 3d' - (d' + 1) > 0.

The pairs grow with the square of the nodes (a generated 11,500-node layered graph has 66
million), so the matching is a min-cost flow (OR-Tools) along the graph's edges: a pair other
than a reduction edge leaves u along one of its edges and travels the edges to v
(`reach_flow`). Inception v1: 54 events on 4 streams, where the matching of E_TR alone left
28; BERT base 50 on 4 (27), GPT-2 small 73 on 4 (38). It is exact, and slow on deep graphs
(11,500 nodes: 2.2 s; 100,000: 140 s), so above EXACT_MAX_NODES the chains of a maximum
matching of E_TR are joined end to start where one's last node reaches another's first
(`linked`): Nimble's minimum still, the fewest streams where they are as few as the graph's
width (`width`); that 100,000-node graph: 28,619 chains joined into 3, its width, in 1.2 s.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Collection, Sequence

import networkx as nx
import numpy as np
from ortools.graph.python import min_cost_flow

from streamalloc.optimal.reach_flow import most_following, reach_matching, unit_pairs
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.run import chains_of

EXACT_MAX_NODES = 12_000  # streamed nodes up to which the chains are the min-cost flow's (a
# deep generated graph of 11,500 nodes: 2.2 s; of 100,000: 140 s, where the joined matching
# takes 1.2 s)
REDUCTION_WEIGHT = 3  # a reduction edge's weight in the matching, any other pair's being 1
JOIN_MAX_VISITS = 256  # nodes the search for a route between two members of a group visits
# before it joins them directly (it visits only nodes between them)


def fewest_streams(dag: TaskDag) -> tuple[tuple[tuple[int, ...], ...], bool]:
    """Streams with Nimble's minimum of events, and whether they are also the fewest such
    streams: `_cheapest_cover` up to EXACT_MAX_NODES streamed nodes; above, the chains of a
    maximum matching of the reduction edges, `linked`, the fewest where they are as few as
    the graph's `width` (no chain cover has fewer)."""
    chains = _cover(dag, ())
    return chains, dag.size <= EXACT_MAX_NODES or len(chains) == width(dag)


def grouped_cover(dag: TaskDag, groups: Sequence[Sequence[int]]
                  ) -> tuple[tuple[int, ...], ...]:
    """Chains with each group's members (ascending; a `same-stream` rule's nodes, such as a
    stream label's) on one chain, else as few events as the rest allows: the members joined
    first (`_group_joins`), then the min-cost flow of `_cheapest_cover` around them (above
    EXACT_MAX_NODES, `linked(matching_chains)` around them). A generated 3,000-node graph with
    three stream labels under GE's rules and the parallel options: Nimble's minimum, 1,686
    events, within the rules, where Nimble's chains with the groups apart needed 2,191."""
    return _cover(dag, _group_joins(dag, groups))


def _cover(dag: TaskDag, joins: Collection[tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    """Chains around the pairs `joins` made, with the fewest events: `_cheapest_cover` up to
    EXACT_MAX_NODES streamed nodes, above `linked(matching_chains)`."""
    if dag.size <= EXACT_MAX_NODES:
        return _cheapest_cover(dag, joins)
    return linked(dag, matching_chains(dag, joins))


def _group_joins(dag: TaskDag, groups: Sequence[Sequence[int]]) -> set[tuple[int, int]]:
    """Pairs that put each group's consecutive members on one chain, in T-order of the
    earlier member: the free nodes of `_route` between them, each joined to the next, so each
    keeps its reduction edges along the route; where no route is found, the two members
    directly (their reduction edges to other streams then cost events). A node is free when
    no group holds it and no earlier join took it. Members no path orders are left to the
    repair."""
    barred = {v for group in groups for v in group}  # and the nodes joins took
    after: set[int] = set()  # nodes a join leaves, and nodes it arrives at
    before: set[int] = set()
    joins: set[tuple[int, int]] = set()
    for a, b in sorted(pair for group in groups for pair in itertools.pairwise(group)):
        if a in after or b in before or not dag.reaches(a, b):
            continue
        route = _route(dag, a, b, barred) or [a, b]
        joins.update(itertools.pairwise(route))
        after.update(route[:-1])
        before.update(route[1:])
        barred.update(route[1:-1])
    return joins


def _route(dag: TaskDag, a: int, b: int, barred: set[int]) -> list[int] | None:
    """a, the free nodes of a path a -> b of reduction edges through the fewest `barred`
    nodes (passed over: the free nodes either side of them are still ordered), and b; a 0-1
    breadth-first search over nodes that reach b. None where it does not reach b within
    JOIN_MAX_VISITS nodes. On a layered graph whose joins an earlier group took, a route
    passes over the join from one branch to the next: with three stream labels, a generated
    3,000-node graph's cover keeps Nimble's minimum of events."""
    cost, came = {a: 0}, {a: a}
    queue, visits = deque([a]), 0
    while queue and visits < JOIN_MAX_VISITS:
        u = queue.popleft()
        visits += 1
        if u == b:
            break
        for v in dag.reduction_succs[u]:
            step = int(v != b and v in barred)
            if (v == b or dag.reaches(v, b)) and cost[u] + step < cost.get(v, dag.size):
                cost[v], came[v] = cost[u] + step, u
                if step:
                    queue.append(v)
                else:
                    queue.appendleft(v)
    else:
        return None
    nodes, v = [b], b
    while v != a:
        v = came[v]
        if v == a or v not in barred:
            nodes.append(v)
    return nodes[::-1]


def _cheapest_cover(dag: TaskDag, joins: Collection[tuple[int, int]] = ()
                    ) -> tuple[tuple[int, ...], ...]:
    """The min-cost flow of the module docstring, its pairs carried along the graph's
    edges, around the pairs `joins` already made. Network: u leaves as u, v arrives as
    n + v, units travel as 2n + v; then the source and the sink. A reduction edge (u, v) is
    an arc u -> n + v of cost -REDUCTION_WEIGHT; any other pair leaves u along an edge (cost
    -1), travels the edges and arrives at a node it reaches (a reduction edge taken that way
    costs only -1, so the direct arc is taken first)."""
    n = dag.size
    edges = np.array(dag.edges, dtype=np.int64).reshape(-1, 2)
    reduction = np.array(dag.reduction, dtype=np.int64).reshape(-1, 2)
    source, sink, nodes = 3 * n, 3 * n + 1, np.arange(n, dtype=np.int64)
    flow = min_cost_flow.SimpleMinCostFlow()

    def arcs(tails: np.ndarray, heads: np.ndarray, capacity: int | np.ndarray,
             cost: int) -> np.ndarray:
        return np.asarray(flow.add_arcs_with_capacity_and_unit_cost(
            tails, heads, np.broadcast_to(np.asarray(capacity, dtype=np.int64), len(tails)),
            np.full(len(tails), cost, dtype=np.int64)))

    leaves, arrives = np.ones(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    for u, v in joins:  # the pairs made: u has its successor, v its predecessor
        leaves[u] = arrives[v] = 0

    direct = arcs(reduction[:, 0], n + reduction[:, 1], 1, -REDUCTION_WEIGHT)
    firsts = arcs(edges[:, 0], 2 * n + edges[:, 1], 1, -1)
    paths = arcs(2 * n + edges[:, 0], 2 * n + edges[:, 1], n, 0)
    exits = arcs(2 * n + nodes, n + nodes, 1, 0)
    arcs(np.full(n, source), nodes, leaves, 0)
    arcs(n + nodes, np.full(n, sink), arrives, 0)
    flow.add_arc_with_capacity_and_unit_cost(source, sink, n, 0)  # the nodes left unmatched
    flow.set_nodes_supplies(np.array([source, sink]), np.array([n, -n]))
    if flow.solve() != flow.OPTIMAL:
        raise AssertionError("the chain cover's flow has no optimum")
    pairs = {(u, v) for u, v in reduction[flow.flows(direct) > 0].tolist()} | set(joins)
    pairs.update(unit_pairs(n, edges, edges, started=flow.flows(firsts),
                            carried=flow.flows(paths), ending=flow.flows(exits) > 0))
    return chains_of(n, pairs)


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


def matching_chains(dag: TaskDag, joins: Collection[tuple[int, int]] = ()
                    ) -> tuple[tuple[int, ...], ...]:
    """Chains of a maximum matching on the reduction edges: Nimble's minimum-event streams;
    with `joins`, those pairs and a maximum matching of the reduction edges around them.
    Integer vertices (u out, n + v in) and sorted insertion keep the matching the same in
    every process (string hashes vary with PYTHONHASHSEED)."""
    n = dag.size
    after, before = {u for u, _ in joins}, {v for _, v in joins}
    bipartite = nx.Graph()
    bipartite.add_nodes_from(range(2 * n))
    bipartite.add_edges_from((u, n + v) for u, v in dag.reduction
                             if u not in after and v not in before)
    matching = nx.bipartite.hopcroft_karp_matching(bipartite, top_nodes=range(n))
    arcs = {(u, v - n) for u, v in matching.items() if u < n} | set(joins)
    return chains_of(n, arcs)


def cut_to_fit(dag: TaskDag, chains: tuple[tuple[int, ...], ...], units: Sequence[int],
               capacity: int, *, send: int, recv: int) -> tuple[tuple[int, ...], ...]:
    """`chains` cut so that no stream holds more than `capacity` task units (its nodes'
    `units`, `send` per event it sends and `recv` per event it receives), each cut between
    neighbours that no reduction edge joins: the earlier reaches the later through other
    streams, whose events order them already, so the cut adds no event, where GE's split of a
    full stream adds one. Each piece runs to the last such cut that fits; where none does (a
    node alone over the capacity, or a run of reduction edges), to the first one after, and
    the split cuts it as before."""
    reduction = set(dag.reduction)
    sync = [0] * dag.size  # the Send/Recv tasks of the cross-stream reduction edges
    for u, v in reduction:
        sync[u] += send
        sync[v] += recv
    for chain in chains:
        for u, v in itertools.pairwise(chain):
            if (u, v) in reduction:
                sync[u] -= send
                sync[v] -= recv
    return tuple(sorted(piece for chain in chains for piece in _pieces(
        chain, [units[v] + sync[v] for v in chain], capacity, reduction)))


def _pieces(chain: tuple[int, ...], weights: list[int], capacity: int,
            reduction: set[tuple[int, int]]) -> list[tuple[int, ...]]:
    """`chain` cut as `cut_to_fit` says, its nodes weighing `weights`."""
    load = list(itertools.accumulate(weights, initial=0))
    pieces, start = [], 0
    while load[-1] - load[start] > capacity:
        cut = None
        for i in range(start + 1, len(chain)):
            fits = load[i] - load[start] <= capacity
            if not fits and cut is not None:
                break
            if (chain[i - 1], chain[i]) not in reduction:
                cut = i
                if not fits:
                    break
        if cut is None:
            break
        pieces.append(chain[start:cut])
        start = cut
    pieces.append(chain[start:])
    return pieces


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
