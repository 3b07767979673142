"""A graph node's task from the cost model: its engine, duration (launch + execution) and
block dim, the columns `program.compile_program` gives the node's task."""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.ir.graph import Graph, Node
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import CostTable

NodeTask = tuple[str | None, float, int]  # (engine, time, block dim) of a node's task
NO_TASK: NodeTask = (None, 0.0, 0)  # a node that issues no device work


def graph_node_tasks(graph: Graph, table: CostTable) -> dict[str, NodeTask]:
    """`node_task` of every node of the graph on the table."""
    nodes = list(graph.all_nodes())
    return dict(zip([n.name for n in nodes], node_tasks(graph, CostModel(graph, table), nodes),
                    strict=True))


def node_tasks(graph: Graph, costs: CostModel, nodes: Sequence[Node | None]) -> list[NodeTask]:
    """`node_task` of each node (`NO_TASK` for None). A node that gives nothing but its type,
    engine and inputs costs as every other such node of its type, engine and number of
    connected inputs while no node describes its outputs (generated graphs): one `node_task`
    per such key."""
    if costs.describes_outputs:
        return [NO_TASK if node is None else node_task(graph, costs, node) for node in nodes]
    alike: dict[tuple[str, str, int], NodeTask] = {}
    tasks: list[NodeTask] = []
    for node in nodes:
        if node is None:
            tasks.append(NO_TASK)
        elif node.attrs or node.input_descs or node.cost_us is not None \
                or node.task_count is not None:
            tasks.append(node_task(graph, costs, node))
        else:
            inputs = node.inputs
            key = (node.type, node.engine, len(inputs) - inputs.count(None))
            found = alike.get(key)
            if found is None:
                found = alike[key] = node_task(graph, costs, node)
            tasks.append(found)
    return tasks


def node_task(graph: Graph, costs: CostModel, node: Node) -> NodeTask:
    """(engine, time, block dim) of the task a graph node issues: launch + execution on block
    dim units; (None, 0, 0) for a node that issues no device work (task count 0)."""
    engine = graph.engines.get(node.engine)
    count = node.task_count if node.task_count is not None else \
        (engine.default_task_count if engine is not None else 1)
    if count == 0 and node.cost_us is None:
        return NO_TASK
    run, width = costs.kernel(node)
    return node.engine, costs.table.launch_us + run, width
