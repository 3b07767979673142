"""OptimizeIneffectiveMultiStreamPass (spec 2.10): move an isolated node onto a neighbouring
stream when no node of that stream lies between its closest input and output there.

Kept as GE does: the loop over candidate streams does not stop at a move (the node ends on the
largest qualifying stream id); updates are progressive; HCCL nodes are not protected.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import compress
from operator import attrgetter

import numpy as np
from sortedcontainers import SortedList

from streamalloc.arrays import sorted_distinct
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.graph import Node
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule

_PINNED_ATTRS = ("NewStreamId", "_parallel_group")
_PRESENT = attrgetter("present")


class OptimizeIneffective(RulePass):
    """optimize-ineffective (OptimizeIneffectiveMultiStreamPass)."""

    __slots__ = ()

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Visit nodes in G-order and move those that qualify."""
        return outcome(plan, _optimize(self.rule, ctx, plan))


def _optimize(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    streams = list(plan.streams.column())  # by position, changed as nodes move
    at = np.array(streams, np.int64)
    by_stream: defaultdict[int, SortedList] = defaultdict(SortedList, _positions_by_stream(at))
    labels, here = ctx.labels, ctx.compute.index
    # labelled nodes are few: found over the labels at C speed, kept when in this graph
    label_streams = {streams[here[n]] for n in compress(labels.keys(),
                                                        map(_PRESENT, labels.values()))
                     if n in here and streams[here[n]] != INVALID}
    # A node with a neighbour on its own stream has no target, and neither has that neighbour:
    # the two keep each other where they are for the whole pass. Only the other nodes are
    # visited (in G-order; a node's position is its G-order index).
    settled = _sharing_a_stream(ctx, at)
    changes: dict[str, tuple[int, Note]] = {}
    for me in np.setdiff1d(np.arange(len(ctx.nodes)), settled, assume_unique=True).tolist():
        node = ctx.nodes[me]
        if not rule.matches(node) or _pinned(ctx, node, streams[me]):
            continue
        for stream in _targets(ctx, node, streams, by_stream, label_streams):
            _move(by_stream, me, streams[me], stream)
            streams[me] = stream
            changes[node.name] = (stream, Note(rule.name, stream, "isolated between two "
                                               f"consecutive nodes of stream {stream}"))
    return plan.set_nodes(changes)


def _sharing_a_stream(ctx: GraphContext, at: np.ndarray) -> np.ndarray:
    """The positions (ascending) of both ends of every data or control edge whose ends are on
    one stream (an edge is a producer's out-neighbour and its consumer's in-neighbour alike);
    `at`: each position's stream."""
    src, dst = ctx.compute.producers.edges()
    shared = at[src] == at[dst]
    return sorted_distinct(np.concatenate([src[shared], dst[shared]]))


def _positions_by_stream(at: np.ndarray) -> dict[int, SortedList]:
    """The positions of each stream's nodes, ascending; `at`: each position's stream. Sorted
    lists (a B-tree-like list of lists): a move takes a position off one stream and puts it
    on another, and a stream may hold most of a million nodes (a plain list moves half of it
    on each)."""
    order = np.argsort(at, kind="stable")
    ordered = at[order]
    starts = np.flatnonzero(np.diff(ordered, prepend=INVALID - 1))  # where each stream begins
    return {s: SortedList(part.tolist()) for s, part in zip(ordered[starts].tolist(),
                                                            np.split(order, starts[1:]),
                                                            strict=True)
            if s != INVALID}


def _move(by_stream: dict[int, SortedList], position: int, old: int, new: int) -> None:
    """Move a position between two streams' sorted lists."""
    by_stream[old].remove(position)
    by_stream[new].add(position)


def _pinned(ctx: GraphContext, node: Node, stream: int) -> bool:
    return stream == INVALID or ctx.label(node.name).present or \
        (bool(node.attrs) and any(node.has_attr(a) for a in _PINNED_ATTRS))


def _targets(ctx: GraphContext, node: Node, streams: list[int],
             by_stream: dict[int, SortedList], label_streams: set[int]) -> list[int]:
    """Streams (ascending) the node qualifies for; none if a neighbour shares its stream
    (`streams`: each position's stream)."""
    own = streams[ctx.position(node.name)]
    closest_in: dict[int, int] = {}
    closest_out: dict[int, int] = {}
    for name in ctx.in_neighbours(node):
        pos = ctx.position(name)
        s = streams[pos]
        if s == own:
            return []
        if s != INVALID:
            closest_in[s] = max(closest_in.get(s, pos), pos)
    for name in ctx.out_neighbours(node):
        pos = ctx.position(name)
        s = streams[pos]
        if s == own:
            return []
        if s != INVALID:
            closest_out[s] = min(closest_out.get(s, pos), pos)
    targets = []
    for s in sorted(set(closest_in) & set(closest_out)):
        if s in label_streams:
            continue
        ids = by_stream[s]
        after = ids.bisect_right(closest_in[s])
        if after < len(ids) and ids[after] == closest_out[s]:
            targets.append(s)
    return targets
