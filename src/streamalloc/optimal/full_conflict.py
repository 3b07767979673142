"""Rules and stream limits no plan under `--concurrency full` can hold, found before any
search.

Under full concurrency two nodes share a stream only if one reaches the other, so nodes that
no path orders need a stream each. Nodes of equal depth (longest path from a source, or to a
sink) are such nodes. So:

* the device's stream limit (less the attached streams) must hold the most nodes of a depth,
  and the fewest chains that hold every node (a maximum flow, as for the caps below);
* a rule that keeps nodes on one stream (`SameStream`, `DedicatedStream`, `PinnedStream`)
  can hold only if its nodes form a chain: in T-order, each reaches the next;
* an engine cap (`StreamCap`: at most N streams of a graph opened by the engine's nodes)
  needs, for nodes A of the cap that no path orders (each depth's), a stream each. A
  stream's opener is its node of least rank in the graph (`Derived.openers` in
  `rules/check.py`), and on a chain it is ordered with every other node of the stream. So at
  most N of those streams are opened by the cap's nodes, and each other one by a distinct
  node outside the cap that is ordered with its member of A and ranks before it:
  |A| <= N + a maximum matching of A to such nodes. And where ranks follow the paths, a
  chain's opener is its first node of the graph: every other node of the cap follows a node
  of its own that reaches it, so the cap's nodes open at least their number less the most
  that can (a maximum flow), which catches caps that no one depth shows; and the caps of a
  graph together, one flow for all their engines' nodes (a node is before one node at most).

CP-SAT can take its whole time limit to prove a cap's conflict (BERT base under GE's rules:
UNKNOWN after 10 s), and then said only that a longer limit might find a plan; where it
proved one, its answer named two nodes ge mode's plan puts on one stream, not the cause. A
conflict found here is a proof, named by its rule or limit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from streamalloc.ir.graph import Graph
from streamalloc.optimal.fork_join import closure
from streamalloc.optimal.nimble import width
from streamalloc.optimal.reach_flow import most_following
from streamalloc.rules.constraints import (
    Constraint,
    DedicatedStream,
    PinnedStream,
    SameStream,
    StreamCap,
)
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.limits import limits_of

NAMED = 3  # nodes a message names


def full_concurrency_conflict(graph: Graph, dag: TaskDag, constraints: Sequence[Constraint],
                              attached: int = 0, *, streams: int | None = None) -> str | None:
    """Why no plan under full concurrency holds `constraints` within the device's stream
    limit (less the `attached` streams the nodes ask for): the limit, or the first rule
    found that none can hold; None where this finds neither. `streams`: the streams of a plan
    of chains (Nimble's): within the limit, the fewest chains need not be counted."""
    order = _Order(dag)
    found = _over_stream_limit(graph, order, attached, streams)
    if found:
        return found
    caps: dict[str, list[StreamCap]] = {}
    for c in constraints:
        if isinstance(c, StreamCap):
            caps.setdefault(c.graph, []).append(c)
            found = _over_cap(graph, order, c)
        elif isinstance(c, SameStream | DedicatedStream | PinnedStream):
            found = _unchained(dag, c.rule, sorted(order.index[n] for n in c.nodes
                                                   if n in order.index))
        if found:
            return found
    for together in caps.values():
        found = _caps_together(graph, order, together)
        if found:
            return found
    return None


@dataclass
class _Order:
    """The dag's node indices, and what the caps' checks read of its order, made once."""

    dag: TaskDag
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {n: v for v, n in enumerate(self.dag.names)}

    @cached_property
    def depths(self) -> tuple[list[int], list[int]]:
        """Per node its longest path from a source, and to a sink (in edges)."""
        dag = self.dag
        down, up = [0] * dag.size, [0] * dag.size
        for v in range(dag.size):
            down[v] = max((down[u] + 1 for u in dag.preds[v]), default=0)
        for v in range(dag.size - 1, -1, -1):
            up[v] = max((up[w] + 1 for w in dag.succs[v]), default=0)
        return down, up

    @cached_property
    def after(self) -> dict[int, int]:
        """Bitset of the nodes each node reaches (itself excluded)."""
        return closure(range(self.dag.size - 1, -1, -1), self.dag.succs)

    def members(self, cap: StreamCap) -> list[int]:
        """The cap's nodes with a stream, in its graph."""
        index, graphs = self.index, self.dag.graphs
        return [index[n] for n in cap.nodes if n in index and graphs[index[n]] == cap.graph]

    def rank(self, graph: Graph, cap: StreamCap) -> Callable[[int], tuple[int, int]]:
        """A node's rank in the order that picks a stream's opener in the cap's graph: its
        engine subgraph's, then its position in G-order (`Derived.openers`)."""
        position, names = graph.graph(cap.graph).index, self.dag.names
        return lambda v: (cap.order.get(names[v], -1), position[names[v]])


def widest_level(dag: TaskDag) -> list[int]:
    """The most nodes of one depth (from a source or to a sink): nodes no path orders, so a
    plan under full concurrency needs as many streams at least."""
    return _widest(_Order(dag))


def _widest(order: _Order) -> list[int]:
    return max((level for depth in order.depths for level in _levels(depth, order.dag.size)),
               key=len, default=[])


def _over_stream_limit(graph: Graph, order: _Order, attached: int, streams: int | None
                       ) -> str | None:
    """Nodes of equal depth, more than the streams the device leaves, named; else (where
    `streams`, Nimble's, are over the limit) the fewest chains that hold every node, more than
    it leaves: each node but a chain's first follows a node of its own that reaches it, and
    the most that can is a maximum flow (Dilworth's width, from the graph's edges)."""
    device = limits_of(graph)
    usable = device.model_streams - attached
    given = f"over the {max(usable, 0)} the device leaves (option streamalloc.max_streams: " \
        f"{device.max_streams} slots, less the caller's stream" + \
        (f", less the {attached} attached streams its nodes ask for)" if attached else ")")
    dag, widest = order.dag, _widest(order)
    if len(widest) > usable:
        return f"{_named(dag, widest)}, which no path orders, need {len(widest)} streams, {given}"
    if streams is not None and streams <= usable:
        return None
    chains = width(dag)
    if chains <= usable:
        return None
    return (f"its {dag.size} streamed nodes need {chains} streams of nodes that paths order "
            f"at least (each node but a stream's first follows a node of its own that reaches "
            f"it, and at most {dag.size - chains} can: a maximum flow), {given}")


def _levels(depth: list[int], size: int, members: Sequence[int] | None = None
            ) -> list[list[int]]:
    """The nodes of `members` (default: all) by equal depth, largest first."""
    levels: dict[int, list[int]] = {}
    for v in range(size) if members is None else members:
        levels.setdefault(depth[v], []).append(v)
    return sorted(levels.values(), key=len, reverse=True)


def _named(dag: TaskDag, nodes: list[int]) -> str:
    """"nodes 'a', 'b', 'c' and 2 more"."""
    names = ", ".join(repr(dag.names[v]) for v in nodes[:NAMED])
    return f"nodes {names}" + (f" and {len(nodes) - NAMED} more" if len(nodes) > NAMED else "")


def _unchained(dag: TaskDag, rule: str, members: list[int]) -> str | None:
    """Two of a one-stream rule's members (in T-order) that no path orders, named."""
    for u, v in itertools.pairwise(members):
        if not dag.reaches(u, v):  # T-order: v never reaches u either
            return (f"rule {rule!r} keeps {dag.names[u]!r} and {dag.names[v]!r}, which no path "
                    "orders, on one stream")
    return None


def _over_cap(graph: Graph, order: _Order, cap: StreamCap) -> str | None:
    """A set of the cap's nodes that no path orders and that need more streams than the cap
    and the other nodes can open (the module docstring), named."""
    dag, members = order.dag, order.members(cap)
    if len(members) <= cap.cap:
        return None
    rank = order.rank(graph, cap)
    outside = 0  # the graph's streamed nodes outside the cap: the other possible openers
    for v in range(dag.size):
        if dag.graphs[v] == cap.graph and dag.names[v] not in cap.members:
            outside |= 1 << v
    for depth in order.depths:
        for level in _levels(depth, dag.size, members):
            if len(level) <= cap.cap:
                break
            opened = _openers_outside(level, outside, dag, order.after, rank)
            if len(level) > cap.cap + opened:
                return (f"rule {cap.rule!r} lets engine {cap.engine} open at most {cap.cap} "
                        f"stream{'s' if cap.cap != 1 else ''} in graph {cap.graph!r}, and "
                        f"its {_named(dag, level)}, which no path orders, need "
                        f"{len(level)} streams, of which other nodes can open at most "
                        f"{opened}")
    return _heads_over_cap(dag, cap, members, rank)


def _heads_over_cap(dag: TaskDag, cap: StreamCap, members: list[int],
                    rank: Callable[[int], tuple[int, int]]) -> str | None:
    """The cap's nodes that open a stream in every plan of chains, more than the cap allows:
    where rank follows the paths of the graph (no subgraph cycle), a chain's opener is its
    first node of the graph, so each other node of the cap has its own node of the graph
    before it on its stream, one that reaches it. The most of them that can, each after a
    node of its own, are a maximum flow: a unit from each node of the graph along the paths,
    one into each node of the cap (a matching of nodes to nodes that reach them, on the
    graph's edges instead of its pairs). Llama tiny: 6 openers against a cap of 4, which nodes
    of one depth did not show."""
    in_graph = [dag.graphs[v] == cap.graph for v in range(dag.size)]
    if not _rank_follows_paths(dag, in_graph, rank):
        return None  # a subgraph cycle: an opener may come after a node it reaches
    following = most_following(dag.size, dag.edges, in_graph, [(members, len(members))])
    if len(members) - following <= cap.cap:
        return None
    return (f"rule {cap.rule!r} lets engine {cap.engine} open at most {cap.cap} "
            f"stream{'s' if cap.cap != 1 else ''} in graph {cap.graph!r}, and its "
            f"{len(members)} nodes open {len(members) - following} at least: on a stream whose "
            f"nodes are ordered, each node of the engine but its opener follows a node of the "
            f"graph that reaches it, and at most {following} of them can, each after a node of "
            "its own (a maximum matching)")


def _caps_together(graph: Graph, order: _Order, caps: list[StreamCap]) -> str | None:
    """The caps of one graph (engines' nodes are apart) counted together, as
    `_heads_over_cap` counts one: each cap's nodes but the cap's number must follow a node of
    their own, and one node can be before only one (every engine cap of a graph ranks by one
    order). A random graph whose AI Core streams need two AI CPU openers, and whose AI CPU
    nodes need both AI CPU streams the cap allows, fits either cap alone."""
    dag = order.dag
    groups = [(members, len(members) - c.cap) for c in caps for members in [order.members(c)]
              if len(members) > c.cap]
    if len(groups) < 2:
        return None
    in_graph = [dag.graphs[v] == caps[0].graph for v in range(dag.size)]
    if not _rank_follows_paths(dag, in_graph, order.rank(graph, caps[0])):
        return None
    needed = sum(most for _, most in groups)
    following = most_following(dag.size, dag.edges, in_graph, groups)
    if following >= needed:
        return None
    limits = " and ".join(f"{c.engine} at most {c.cap}" for c in caps)
    rules = ", ".join(dict.fromkeys(repr(c.rule) for c in caps))
    return (f"rule {rules} lets engines open streams in graph {caps[0].graph!r}, {limits}; "
            f"on a stream whose nodes are ordered, each node of theirs but the stream's opener "
            f"follows a node of the graph that reaches it, so {needed} of them must, and at "
            f"most {following} can, each after a node of its own (a maximum flow)")


def _rank_follows_paths(dag: TaskDag, in_graph: list[bool],
                        rank: Callable[[int], tuple[int, int]]) -> bool:
    """Does every node of the graph rank above every node of the graph that reaches it?"""
    latest: list[tuple[int, int]] = [(-2, -1)] * dag.size  # the highest rank reaching a node
    for v in range(dag.size):
        for u in dag.preds[v]:
            latest[v] = max(latest[v], latest[u], rank(u) if in_graph[u] else (-2, -1))
        if in_graph[v] and latest[v] >= rank(v):
            return False
    return True


def _openers_outside(level: list[int], outside: int, dag: TaskDag, after: dict[int, int],
                     rank: Callable[[int], tuple[int, int]]) -> int:
    """The most of `level`'s streams that nodes outside the cap can open: a maximum matching
    of each member to a node of `outside` ordered with it and ranked before it. A member
    with as many such nodes as the level has members always finds a free one, so only the
    others are matched (their lists are short)."""
    short: dict[int, list[int]] = {}
    for v in level:
        mine = rank(v)
        found: list[int] = []
        bits = (dag.ancestors[v] | after[v]) & outside
        while bits and len(found) < len(level):
            low = bits & -bits
            o = low.bit_length() - 1
            bits ^= low
            if rank(o) < mine:
                found.append(o)
        if len(found) < len(level):
            short[v] = found
    if not short:
        return len(level)
    pairs = nx.Graph()
    pairs.add_nodes_from(("a", v) for v in short)
    pairs.add_edges_from((("a", v), ("o", o)) for v, found in short.items() for o in found)
    matched = nx.bipartite.maximum_matching(pairs, top_nodes=[("a", v) for v in short])
    return len(level) - len(short) + len(matched) // 2
