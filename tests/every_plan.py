"""Every plan of a tiny graph, for checking bounds exhaustively: each assignment of its
streamed nodes to streams (one per partition), synchronized and emulated in several execution
orders."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from node_graphs import fork_join_chain_nodes, graph_of, random_nodes

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal import OptimalOptions
from streamalloc.optimal.evaluate import Measured, Outcome, evaluate, task_dag
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.order import Order, Orders
from streamalloc.rules import default_rule_set
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.solver.dag import TaskDag


def partitions(size: int) -> Iterator[list[int]]:
    """Every assignment of `size` nodes to streams, once per partition (restricted growth)."""
    def grow(prefix: list[int], top: int) -> Iterator[list[int]]:
        if len(prefix) == size:
            yield list(prefix)
            return
        for k in range(top + 2):
            yield from grow([*prefix, k], max(top, k))
    yield from grow([0], 0)


def random_orders(orders: Orders, rng: random.Random, count: int) -> list[Order]:
    """The graph's order and up to `count - 1` random topological orders of its root."""
    found = {orders.start}
    for _ in range(count * 4):
        placed: list[str] = []
        while len(placed) < len(orders.start):
            ready = [n for n in orders.start if n not in placed
                     and all(p in placed for p in orders.preds[n])]
            placed.append(rng.choice(ready))
        found.add(tuple(placed))
        if len(found) == count:
            break
    return sorted(found)


def every_plan(graph: Graph, costs: CostTable, rng: random.Random, *, orders: int = 4,
               most: int = 6) -> tuple[Outcome, TaskDag, list[Measured]]:
    """Ge mode's plan (the optimal mode's baseline), the streamed nodes, and the events and
    makespan of every assignment in `orders` execution orders (those within the device's
    limits); a graph of more than `most` streamed nodes fails (their partitions grow as Bell
    numbers: 203 for 6 nodes, 4,140 for 8)."""
    evaluator = ge_evaluator(graph, OptimalOptions(objective="makespan"), costs)
    dag, baseline, ordering = evaluator.dag, evaluator.baseline, evaluator.orders
    assert dag.size <= most, f"{dag.size} streamed nodes, over {most}"
    assert ordering is not None
    runs = [evaluator.outcome(streams, order) for order in random_orders(ordering, rng, orders)
            for streams in partitions(dag.size)]
    return baseline, dag, [run for run in runs if run is not None]


def ge_evaluator(graph: Graph, options: OptimalOptions, costs: CostTable) -> Evaluator:
    """The optimal mode's probe of `graph` with ge mode's plan (GE's default rules, minimal
    sync) as its baseline, in the graph's orders."""
    rules = default_rule_set(graph)
    baseline = evaluate(graph, allocate_ge(graph, rules), rules, "minimal", costs)
    return Evaluator(graph, task_dag(graph, baseline.allocation), baseline, options, costs,
                     orders=Orders.of(graph))


def tiny_graph(tmp_path: Path, seed: int, *, engines: bool = False
               ) -> tuple[Graph, random.Random]:
    """A random DAG of 4 to 6 nodes (odd seeds) or a fork-join (even ones), and the generator
    that drew it, for the execution orders; with `engines`, about a third of the random DAG's
    tasks run on AI CPU or HCCL instead of AI Core."""
    rng = random.Random(seed)
    nodes = random_nodes(rng, rng.randint(4, 6)) if seed % 2 else fork_join_chain_nodes(rng, 1)
    if engines:
        nodes = [n.replace("type: Add,", "type: Add, engine: "
                           + rng.choice(["DNN_VM_AICPU_ASCEND", "DNN_HCCL"]) + ",")
                 if rng.random() < 0.35 else n for n in nodes]
    return graph_of(tmp_path, f"g{seed}", nodes), rng
