"""optimize-ineffective visits only the nodes without a neighbour on their own stream: such a
pair keeps each other in place for the whole pass (spec 2.10: a node with a neighbour on its
stream has no target). Checked against the pass visiting every node, on random models and
layered graphs, from the plan each one has before the pass."""

from __future__ import annotations

from collections import defaultdict
from itertools import compress
from operator import attrgetter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from sortedcontainers import SortedList
from test_heuristic_properties import SETTINGS, build, models

from streamalloc.facts import INVALID
from streamalloc.heuristic import optimize_ineffective as oi
from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.heuristic.plan import GraphPlan, Note
from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import partition_model
from streamalloc.ir.synthetic import layered_graph
from streamalloc.mappings import own_dict
from streamalloc.passes import PassRecord
from streamalloc.rules.labelling import default_labels
from streamalloc.rules.loader import default_rule_set
from streamalloc.rules.model import Rule


def _every_node(rule: Rule, ctx: GraphContext, plan: GraphPlan) -> GraphPlan:
    """The pass as spec 2.10 states it: every node in G-order."""
    named = own_dict(plan.streams)
    streams = [named[n.name] for n in ctx.nodes]  # by position, as `_targets` reads them
    at = np.array(streams, np.int64)
    by_stream: defaultdict[int, SortedList] = defaultdict(SortedList,
                                                          oi._positions_by_stream(at))
    labels, here = ctx.labels, ctx.compute.index
    label_streams = {named[n] for n in compress(labels.keys(),
                                                map(attrgetter("present"), labels.values()))
                     if n in here and named[n] != INVALID}
    changes: dict[str, tuple[int, Note]] = {}
    for me, node in enumerate(ctx.nodes):
        if not rule.matches(node) or oi._pinned(ctx, node, streams[me]):
            continue
        for stream in oi._targets(ctx, node, streams, by_stream, label_streams):
            oi._move(by_stream, me, streams[me], stream)
            streams[me] = stream
            changes[node.name] = (stream, Note(rule.name, stream, "isolated between two "
                                               f"consecutive nodes of stream {stream}"))
    return plan.set_nodes(changes)


class _Before:
    """The plan of each graph before optimize-ineffective ran on it."""

    def __init__(self) -> None:
        self.last: dict[str, GraphPlan] = {}
        self.before: dict[str, GraphPlan] = {}

    def after_pass(self, record: PassRecord) -> None:
        if record.name == "optimize-ineffective":
            self.before[record.graph] = self.last[record.graph]
        if isinstance(record.plan, GraphPlan):
            self.last[record.graph] = record.plan


def _check(graph: Graph) -> int:
    """The pass and the every-node pass agree on every graph of the model; returns the moves."""
    rules = default_rule_set(graph)
    [rule] = [r for r in rules.rules if r.kind == "optimize-ineffective"] or [None]
    if rule is None or not rule.enabled(graph.options):
        return 0
    seen = _Before()
    allocate_ge(graph, rules, observer=seen)
    labels = default_labels(graph)
    partitions = partition_model(graph, labels)
    moves = 0
    for name, plan in seen.before.items():
        ctx = GraphContext(graph, graph.graph(name), partitions[name], labels)
        fast, slow = oi._optimize(rule, ctx, plan), _every_node(rule, ctx, plan)
        assert dict(fast.streams) == dict(slow.streams)
        assert dict(fast.notes) == dict(slow.notes)
        moves += sum(a != b for a, b in zip(plan.streams.values(), fast.streams.values(),
                                            strict=True))
    return moves


@SETTINGS
@given(data=st.data())
def test_random_models_move_as_when_every_node_is_visited(data: st.DataObject) -> None:
    _check(build(data.draw(models("multi"))))


def test_layered_graphs_move_as_when_every_node_is_visited() -> None:
    moved = [_check(layered_graph(400, seed=seed).with_options(
        {"ge.streamMaxParallelNum": "AIcoreEngine:4"})) for seed in range(6)]
    assert sum(moved) > 0  # the graphs exercise the pass
