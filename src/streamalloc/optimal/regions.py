"""Single-exit regions: the candidates of the events objective that put one region of the
network beside the main stream, with the prologue.

Every node on one stream needs no event but may run too long for the makespan limit; one
stream with its prologue (`optimal/prologue.py`) aside needs one. Where the events bound is 2,
a side stream can also take a *region*: the nodes a node x dominates (every path from the main
input to them passes x), when only one of them, its exit, feeds nodes outside. Its producers
outside are x's own, all on the main stream, so one event before x orders them; its consumers
outside read the exit, so one event after the exit orders them, and the prologue's consumers
that come after it too (paths and consumers of the transitive reduction: a dependency another
path implies needs no event). Llama tiny under the parallel options: its layer-0 k projection with
its rotary embedding beside the q projection, 2 events at 441.0 us (the limit 451.3), found
in 0.1 s where CP-SAT and the Proof took 13 s for a 2-event plan at 450.3.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import networkx as nx

from streamalloc.solver.dag import TaskDag


def single_exit_regions(dag: TaskDag, root: int, reached: Sequence[bool]
                        ) -> Iterator[tuple[int, ...]]:
    """The regions of the nodes reached from `root` (`prologue.main_input`), by their first
    node x in T-order: the nodes x dominates, at least two, of which exactly one has
    consumers outside them; each in T-order. Paths and consumers are those of the transitive
    reduction: a dependency that another path implies needs no event of its own."""
    main = nx.DiGraph()
    main.add_nodes_from(v for v in range(dag.size) if reached[v])
    main.add_edges_from((u, v) for u, v in dag.reduction if reached[u] and reached[v])
    children: dict[int, list[int]] = {}
    for v, parent in sorted(nx.immediate_dominators(main, root).items()):
        if v != parent:
            children.setdefault(parent, []).append(v)
    for x in sorted(children):
        if x == root:
            continue
        region, stack = [], [x]
        while stack:
            v = stack.pop()
            region.append(v)
            stack.extend(children.get(v, ()))
        inside = set(region)
        exits = {v for v in region if any(s not in inside for s in main.successors(v))}
        if len(exits) == 1:
            yield tuple(sorted(region))
