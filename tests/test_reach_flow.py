"""Matchings of nodes to nodes they reach as flows along the edges (`optimal/reach_flow.py`),
checked against networkx on the explicit reachability pairs of random DAGs."""

from __future__ import annotations

import random

import networkx as nx

from streamalloc.optimal.reach_flow import most_following, reach_matching
from streamalloc.solver.dag import TaskDag


def random_dag(rng: random.Random, n: int) -> TaskDag:
    names = [f"n{i}" for i in range(n)]
    edges = [(names[u], names[v]) for v in range(n) for u in range(v)
             if rng.random() < 2.5 / n]
    return TaskDag.build(names, edges, ["g"] * n)


def pairs_flow(dag: TaskDag, before: list[int],
               groups: list[tuple[list[int], int]]) -> int:
    """The same count over the explicit pairs: u of `before` -> v it reaches -> v's group."""
    flow = nx.DiGraph()
    for u in before:
        flow.add_edge("source", ("u", u), capacity=1)
        for k, (members, _) in enumerate(groups):
            for v in members:
                if dag.reaches(u, v):
                    flow.add_edge(("u", u), ("v", k, v), capacity=1)
    for k, (members, most) in enumerate(groups):
        for v in members:
            flow.add_edge(("v", k, v), ("group", k), capacity=1)
        flow.add_edge(("group", k), "sink", capacity=most)
    if not (flow.has_node("source") and flow.has_node("sink")):
        return 0
    return round(nx.maximum_flow_value(flow, "source", "sink"))


def test_the_flow_along_the_edges_counts_as_the_pairs_do() -> None:
    rng = random.Random(5)
    for _ in range(200):
        dag = random_dag(rng, rng.randint(1, 25))
        before = [v for v in range(dag.size) if rng.random() < 0.6]
        nodes = list(range(dag.size))
        rng.shuffle(nodes)
        cut = rng.randint(0, dag.size)
        groups = [(sorted(nodes[:cut]), rng.randint(0, cut)),
                  (sorted(nodes[cut:]), rng.randint(0, dag.size - cut))]
        marked = [v in before for v in range(dag.size)]
        assert most_following(dag.size, dag.edges, marked, groups) \
            == pairs_flow(dag, before, groups)


def test_the_matching_pairs_reach_and_are_maximum() -> None:
    rng = random.Random(9)
    for _ in range(200):
        dag = random_dag(rng, rng.randint(1, 25))
        before = sorted(rng.sample(range(dag.size), rng.randint(0, dag.size)))
        after = sorted(rng.sample(range(dag.size), rng.randint(0, dag.size)))
        pairs = reach_matching(dag.size, dag.edges, before, after)
        assert all(u in before and v in after and dag.reaches(u, v) for u, v in pairs)
        assert len({u for u, _ in pairs}) == len({v for _, v in pairs}) == len(pairs)
        assert len(pairs) == pairs_flow(dag, before, [(after, len(after))])
