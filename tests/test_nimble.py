"""Nimble's setting without rules (`optimal/nimble.py`): the chains have Nimble's minimum of
events on the fewest streams any plan with that minimum needs, checked against every
partition of small random DAGs into streams."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import onnx
import pytest
from set_partitions import partitions

from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.optimal import nimble
from streamalloc.optimal.driver import _baseline
from streamalloc.optimal.evaluate import task_dag
from streamalloc.optimal.options import OptimalOptions
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.solver.dag import TaskDag

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def random_dag(rng: random.Random, n: int) -> TaskDag:
    """Layers of 1-3 nodes, each node fed by some nodes of the layer before: chains of a
    matching of the reduction edges alone often end where another one's head is reached
    (20 of these 150 cases need fewer streams than the matching's)."""
    layers: list[list[int]] = []
    while (made := sum(map(len, layers))) < n:
        layers.append(list(range(made, made + min(rng.randint(1, 3), n - made))))
    names = [f"n{i}" for i in range(n)]
    edges = [(names[u], names[v]) for before, layer in itertools.pairwise(layers)
             for v in layer for u in rng.sample(before, rng.randint(1, len(before)))]
    return TaskDag.build(names, edges, ["g"] * n)


def best_by_brute_force(dag: TaskDag) -> tuple[int, int]:
    """(events, streams) lexicographically least over every partition into chains."""
    best = (len(dag.reduction) + 1, dag.size + 1)
    for blocks in partitions(list(range(dag.size))):
        if not all(dag.reaches(u, v) for block in blocks
                   for u, v in itertools.combinations(sorted(block), 2)):
            continue
        stream = {v: k for k, block in enumerate(blocks) for v in block}
        events = sum(stream[u] != stream[v] for u, v in dag.reduction)
        best = min(best, (events, len(blocks)))
    return best


def events_of(dag: TaskDag, chains: tuple[tuple[int, ...], ...]) -> int:
    stream = {v: k for k, chain in enumerate(chains) for v in chain}
    return sum(stream[u] != stream[v] for u, v in dag.reduction)


def test_fewest_streams_is_the_least_events_then_streams_of_every_partition() -> None:
    rng = random.Random(7)
    for _ in range(150):
        dag = random_dag(rng, rng.randint(2, 9))
        chains, exact = nimble.fewest_streams(dag)
        assert exact and sorted(v for c in chains for v in c) == list(range(dag.size))
        assert all(dag.reaches(u, v) for c in chains for u, v in itertools.pairwise(c))
        assert (events_of(dag, chains), len(chains)) == best_by_brute_force(dag)
        assert events_of(dag, chains) == nimble.nimble_min_events(dag)


def test_above_the_node_limit_the_joined_matching_is_proven_only_at_the_width(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above EXACT_MAX_NODES: the matching's chains joined keep Nimble's minimum, and are the
    fewest where they are as few as the width; where they are more, the flow may need fewer
    (random cases: 4 joined, 3 by the flow), and they are not called the fewest."""
    rng = random.Random(3)
    cases = [random_dag(rng, rng.randint(2, 10)) for _ in range(700)]
    fewest = [len(nimble.fewest_streams(dag)[0]) for dag in cases]
    monkeypatch.setattr(nimble, "EXACT_MAX_NODES", 0)
    unproven = 0
    for dag, streams in zip(cases, fewest, strict=True):
        chains, exact = nimble.fewest_streams(dag)
        assert events_of(dag, chains) == nimble.nimble_min_events(dag)
        assert exact == (len(chains) == nimble.width(dag))
        assert len(chains) == streams if exact else len(chains) > streams
        unproven += not exact
    assert unproven >= 3


def inception_v1_dag() -> TaskDag:
    graph = load_graph(LIGHT / "light_inception_v1.onnx")
    baseline, _ = _baseline(graph, default_rule_set(graph), OptimalOptions(),
                            default_cost_table())
    return task_dag(graph, baseline.allocation)


def test_inception_v1_keeps_nimbles_events_on_four_streams() -> None:
    dag = inception_v1_dag()
    chains, exact = nimble.fewest_streams(dag)
    matched = nimble.matching_chains(dag)
    assert exact and len(chains) == 4 == nimble.width(dag) and len(matched) == 28
    assert events_of(dag, chains) == events_of(dag, matched) == 54


def test_linking_the_matchings_chains_keeps_their_events() -> None:
    rng = random.Random(11)
    for _ in range(150):
        dag = random_dag(rng, rng.randint(2, 12))
        matched = nimble.matching_chains(dag)
        joined = nimble.linked(dag, matched)
        assert sorted(v for c in joined for v in c) == list(range(dag.size))
        assert all(dag.reaches(u, v) for c in joined for u, v in itertools.pairwise(c))
        assert events_of(dag, joined) == events_of(dag, matched)
        assert len(joined) <= len(matched)


@pytest.mark.parametrize("exact_max", [12_000, 0])
def test_a_deep_graph_gets_the_fewest_streams_either_way(monkeypatch: pytest.MonkeyPatch,
                                                          exact_max: int) -> None:
    """A generated 3,000-node layered graph: millions of ordered pairs, never listed. The flow,
    and the matching's chains joined, both reach its width."""
    graph = layered_graph(3000)
    baseline, _ = _baseline(graph, default_rule_set(graph), OptimalOptions(),
                            default_cost_table())
    dag = task_dag(graph, baseline.allocation)
    monkeypatch.setattr(nimble, "EXACT_MAX_NODES", exact_max)
    matched = nimble.matching_chains(dag)
    chains, exact = nimble.fewest_streams(dag)
    assert sum(bits.bit_count() for bits in dag.ancestors) > 4_000_000
    assert exact and len(matched) > 100 and len(chains) == nimble.width(dag) == 3
    assert events_of(dag, chains) == events_of(dag, matched)


def test_cuts_fall_between_neighbours_no_reduction_edge_joins() -> None:
    """The pieces keep each chain's order and the events of the chains; each is cut only
    where no reduction edge joins the neighbours, and holds at most the capacity (its nodes'
    units, 1 per Send, 2 per Recv) unless no such cut within it would have fitted."""
    rng = random.Random(17)
    cut_somewhere = over = 0
    for _ in range(300):
        dag = random_dag(rng, rng.randint(2, 30))
        chains, _ = nimble.fewest_streams(dag)
        units = [rng.randint(1, 4) for _ in range(dag.size)]
        capacity = rng.randint(3, 20)
        pieces = nimble.cut_to_fit(dag, chains, units, capacity, send=1, recv=2)
        joined = {pair for chain in chains for pair in itertools.pairwise(chain)}
        kept = {pair for piece in pieces for pair in itertools.pairwise(piece)}
        reduction = set(dag.reduction)
        assert kept <= joined and not (joined - kept) & reduction
        assert sorted(v for piece in pieces for v in piece) == list(range(dag.size))
        assert events_of(dag, pieces) == events_of(dag, chains)
        stream = {v: k for k, piece in enumerate(pieces) for v in piece}
        weight = list(units)
        for u, v in reduction:
            if stream[u] != stream[v]:
                weight[u] += 1
                weight[v] += 2
        for piece in pieces:
            if sum(weight[v] for v in piece) > capacity:
                over += 1
                assert all(sum(weight[v] for v in piece[:i]) > capacity
                           for i in range(1, len(piece))
                           if (piece[i - 1], piece[i]) not in reduction)
        cut_somewhere += len(pieces) > len(chains)
    assert cut_somewhere > 50 and over > 0


def best_with_group(dag: TaskDag, group: tuple[int, ...]) -> int:
    """The fewest events over every partition into chains that keeps `group` on one chain."""
    best = len(dag.reduction) + 1
    for blocks in partitions(list(range(dag.size))):
        if not any(set(group) <= set(block) for block in blocks) or not all(
                dag.reaches(u, v) for block in blocks
                for u, v in itertools.combinations(sorted(block), 2)):
            continue
        stream = {v: k for k, block in enumerate(blocks) for v in block}
        best = min(best, sum(stream[u] != stream[v] for u, v in dag.reduction))
    return best


def test_a_grouped_cover_keeps_each_group_on_one_chain() -> None:
    """Random DAGs with a group of pairwise ordered nodes (a stream label's, say): the cover
    is chains, the group on one of them, never fewer events than the best partition that
    keeps the group together, and on most cases (the count is pinned) exactly that many; the
    same events above EXACT_MAX_NODES, where a matching of the reduction edges stands in for
    the min-cost flow."""
    rng = random.Random(23)
    exact = cases = 0
    for _ in range(300):
        dag = random_dag(rng, rng.randint(3, 9))
        v, group = rng.randrange(dag.size), []
        while v is not None:  # members along a random path, some of its nodes skipped
            if rng.random() < 0.6:
                group.append(v)
            v = rng.choice(dag.succs[v]) if dag.succs[v] else None
        if len(group) < 2:
            continue
        cases += 1
        chains = nimble.grouped_cover(dag, [tuple(group)])
        with pytest.MonkeyPatch.context() as patch:  # as above EXACT_MAX_NODES
            patch.setattr(nimble, "EXACT_MAX_NODES", 0)
            matched = nimble.grouped_cover(dag, [tuple(group)])
        best = best_with_group(dag, tuple(group))
        for cover in (chains, matched):
            assert sorted(v for c in cover for v in c) == list(range(dag.size))
            assert all(dag.reaches(u, v) for c in cover for u, v in itertools.pairwise(c))
            assert any(set(group) <= set(c) for c in cover)
            assert events_of(dag, cover) >= best
        assert events_of(dag, matched) == events_of(dag, chains)
        exact += events_of(dag, chains) == best
    assert (cases, exact) == (107, 106)


def test_group_members_are_joined_along_free_reduction_edges() -> None:
    """s -> a -> x -> b -> t beside s -> y -> t, the group {a, b}: joined through x, the
    cover has Nimble's minimum (the two edges of y); joined directly (no path searched), x
    leaves the chain and its two edges cost events too."""
    names = ["s", "a", "y", "x", "b", "t"]
    dag = TaskDag.build(names, [("s", "a"), ("a", "x"), ("x", "b"), ("b", "t"), ("s", "y"),
                                ("y", "t")], ["g"] * 6)
    group = (names.index("a"), names.index("b"))
    chains = nimble.grouped_cover(dag, [group])
    assert chains is not None and events_of(dag, chains) == nimble.nimble_min_events(dag) == 2
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nimble, "JOIN_MAX_VISITS", 0)
        direct = nimble.grouped_cover(dag, [group])
    assert direct is not None and events_of(dag, direct) == 4
    assert any(set(group) <= set(c) for c in direct)


def test_a_route_passes_over_a_node_an_earlier_group_took() -> None:
    """Two branches meet at j and part again. The group {a1, a2} is joined first, through j;
    the group {b1, b2} then passes over j and keeps b1x and b2y on its chain: Nimble's
    minimum, 4 events. Joined directly, b1x and b2y leave both chains: 6."""
    names = ["s", "a1", "b1", "b1x", "j", "a2", "b2y", "b2", "t"]
    edges = [("s", "a1"), ("s", "b1"), ("b1", "b1x"), ("a1", "j"), ("b1x", "j"), ("j", "a2"),
             ("j", "b2y"), ("b2y", "b2"), ("a2", "t"), ("b2", "t")]
    dag = TaskDag.build(names, edges, ["g"] * len(names))
    groups = [(names.index("a1"), names.index("a2")), (names.index("b1"), names.index("b2"))]
    chains = nimble.grouped_cover(dag, groups)
    assert events_of(dag, chains) == nimble.nimble_min_events(dag) == 4
    named = [[names[v] for v in chain] for chain in chains]
    assert ["b1", "b1x", "b2y", "b2"] in [[v for v in c if v.startswith("b")] for c in named]
    assert any({"a1", "j", "a2"} <= set(c) for c in named)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nimble, "JOIN_MAX_VISITS", 0)
        direct = nimble.grouped_cover(dag, groups)
    assert events_of(dag, direct) == 6
    assert all(any(set(g) <= set(c) for c in direct) for g in groups)


def test_a_grouped_cover_of_several_groups_is_chains() -> None:
    """Several groups, some sharing a node, some with members no path orders: the cover is
    still chains of every node (a member two groups share is joined for the first only, the
    rest left to the repair), and each group of ordered members that shares no node with
    another is on one chain."""
    rng = random.Random(29)
    together = 0
    for _ in range(300):
        dag = random_dag(rng, rng.randint(4, 40))
        groups = [tuple(sorted(rng.sample(range(dag.size), rng.randint(2, min(5, dag.size)))))
                  for _ in range(rng.randint(1, 4))]
        for exact in (True, False):
            with pytest.MonkeyPatch.context() as patch:
                if not exact:
                    patch.setattr(nimble, "EXACT_MAX_NODES", 0)
                chains = nimble.grouped_cover(dag, groups)
            assert sorted(v for c in chains for v in c) == list(range(dag.size))
            assert all(dag.reaches(u, v) for c in chains for u, v in itertools.pairwise(c))
            for group in groups:
                shared = any(set(group) & set(other) for other in groups if other is not group)
                if not shared and all(dag.reaches(u, v) for u, v in itertools.pairwise(group)):
                    assert any(set(group) <= set(c) for c in chains)
                    together += exact
    assert together == 127
