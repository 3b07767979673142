"""One walk over a graph's node list, for GraphBuilder: node positions, control successors,
each input slot's producer, and whether the list is already topological."""

from __future__ import annotations

from collections import defaultdict

import msgspec

from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.ir.adjacency import Producers, make_producers
from streamalloc.ir.graph import Node


class Positions(msgspec.Struct):
    """What one walk over a graph's node list finds: node positions, control successors in
    link order, the data producer of every input slot by position (-1: unconnected, or not
    yet known: `late`), the sources and slots (flat index) of the data edges from the node
    itself or a later (or no) node, and whether the list is topological (every edge comes
    from an earlier node or is a loop back edge)."""

    position: dict[str, int]
    controls: dict[str, list[str]]
    data: list[int]
    late: list[tuple[str, int]]
    forward: bool


def producers_of(nodes: list[Node], walk: Positions) -> Producers:
    """The walk's producers by position, once every node's position is known."""
    data = walk.data
    for src, slot in walk.late:  # loop back edges (the list is well formed by now)
        data[slot] = walk.position[src]
    position = walk.position
    control = [position[src] for node in nodes for src in node.control_inputs] \
        if walk.controls else []  # most graphs have no control edge
    return make_producers(nodes, data, control)


def positions(nodes: list[Node]) -> Positions:
    """The walk's findings (`Positions`)."""
    position: dict[str, int] = {}  # the nodes before the current one, then all
    controls: dict[str, list[str]] = defaultdict(list)
    data: list[int] = []
    late: list[tuple[str, int]] = []
    forward = True
    get = position.get
    for at, node in enumerate(nodes):
        name = node.name
        for ref in node.inputs:
            found = -1 if ref is None else get(ref.src, -1)
            if found < 0 and ref is not None:
                late.append((ref.src, len(data)))
            data.append(found)
        for src in node.control_inputs:
            controls[src].append(name)
            forward = forward and src in position
        position[name] = at
    forward = forward and all(
        src in position and nodes[position[src]].type in LOOP_BACK_TYPES for src, _ in late)
    return Positions(position, controls, data, late, forward)
