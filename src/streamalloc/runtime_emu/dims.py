"""Multi-dims Case nodes (a `Case` with `_batch_num`, sync spec 4.2): one dim runs.

A multi-batch Case runs exactly one of its subgraph instances ("dims") per execution; GE
lowers it to a label switch that jumps over the tasks of the others, which is why event ids
used only inside one dim are shared with the other dims. The emulator runs one dim (`dim`:
instance `dim % count` of every multi-dims Case) and turns the tasks of the other dims into
no-ops: no time, no record, no wait, no dependency to check. A graph node belongs to its
graph; a Send (Recv) of an id the dims share belongs to the graph node it follows (precedes)
on its stream, as GE places them (sync spec 7). Every other Send and Recv runs whatever dim
is chosen: the ids outside the dims (4.2's tail) and the split's events, which order the
pieces of a stream and may sit next to a node of any dim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

from streamalloc.ir.graph import Graph, Node

MULTI_DIMS_ATTR = "_batch_num"


def idle_graphs(graph: Graph, dim: int) -> frozenset[str]:
    """The subgraphs (nested ones included) of the dims that do not run."""
    idle: set[str] = set()
    if not graph.subgraphs:  # dims are subgraphs: most models have none, and no walk is needed
        return frozenset()
    for node in graph.all_nodes():
        if node.type == "Case" and node.has_attr(MULTI_DIMS_ATTR) and node.subgraphs:
            chosen = dim % len(node.subgraphs)
            for i, (_, sub) in enumerate(node.subgraphs):
                if i != chosen:
                    idle |= _nested(graph, sub)
    return frozenset(idle)


def _nested(graph: Graph, name: str) -> set[str]:
    found, stack = set(), [name]
    while stack:
        current = stack.pop()
        found.add(current)
        stack.extend(sub for n in graph.graph(current).nodes for _, sub in n.subgraphs)
    return found


def idle_tasks(streams: Mapping[int, Sequence[str]], nodes: Mapping[str, Node],
               idle: frozenset[str], shared: tuple[Iterable[str], Iterable[str]]) -> set[str]:
    """Names of the listed tasks that belong to an idle dim: its graph nodes, and the Sends
    and Recvs (`shared`: the Send names, the Recv names) of the ids the dims share."""
    if not idle:
        return set()
    sends, recvs = set(shared[0]), set(shared[1])
    result: set[str] = set()
    for names in streams.values():
        for pos, name in enumerate(names):
            if name not in nodes and name not in sends and name not in recvs:
                continue
            owner = _owner(names, pos, nodes, name not in sends)
            if owner is not None and owner.graph in idle:
                result.add(name)
    return result


def _owner(names: Sequence[str], pos: int, nodes: Mapping[str, Node],
           forward: bool) -> Node | None:
    """The graph node a task belongs to: itself, else the nearest one after it (before it,
    for a Send), else on the other side."""
    if names[pos] in nodes:
        return nodes[names[pos]]
    after, before = range(pos + 1, len(names)), range(pos - 1, -1, -1)
    for i in chain(after, before) if forward else chain(before, after):
        if names[i] in nodes:
            return nodes[names[i]]
    return None
