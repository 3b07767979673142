"""Continuous renumbering and multi-dims reuse of sync ids (spec 4.1, 4.2).

After optimisation the final ids follow sender name order (N-order), not graph order. Ids used
only inside one dim (branch) of a multi-batch Case can share numbers with the other dims.
"""

from __future__ import annotations

from streamalloc.errors import AllocationInfeasible, InternalError
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps, in_n_order

MAX_SUBGRAPH_DEPTH = 10


def renumber(maps: SyncMaps, start: int = 0) -> int:
    """Map ids to start, start+1, ... in N-order of senders; returns the next free id."""
    mapping: dict[int, int] = {}
    nxt = start
    for node in in_n_order(maps.send):
        for x in maps.send[node]:
            if x not in mapping:
                mapping[x] = nxt
                nxt += 1
    _apply(maps, mapping)
    return nxt


def _apply(maps: SyncMaps, mapping: dict[int, int]) -> None:
    if not mapping:
        return
    for node, ids in maps.send.items():
        maps.send[node] = [mapping[x] for x in ids]
    for node, ids in maps.recv.items():
        missing = [x for x in ids if x not in mapping]
        if missing:
            raise InternalError(f"receive ids {missing} of {node!r} have no sender")
        maps.recv[node] = [mapping[x] for x in ids]


def reuse_multi_dims(model: SyncModel, maps: SyncMaps) -> None:
    """Share ids between the dims of multi-batch Case nodes (`_batch_num`)."""
    senders, receivers = maps.senders(), maps.receivers()
    seen: dict[int, int] = {}
    max_id = 0
    for node in model.attributed:
        if node.type != "Case" or not node.has_attr("_batch_num"):
            continue
        case_max = max_id
        for _, dim in node.subgraphs:
            walker = _DimWalk(model, maps, (senders, receivers), seen, max_id)
            walker.walk(dim, 0)
            case_max = max(case_max, walker.cur)
        max_id = case_max
    if max_id > 0:
        _number_the_rest(maps, seen, max_id)


def _number_the_rest(maps: SyncMaps, seen: dict[int, int], start: int) -> None:
    """Ids outside every dim follow the dims' maximum, senders then receivers in N-order."""
    nxt = start
    for table in (maps.send, maps.recv):
        for node in in_n_order(table):
            for x in table[node]:
                if x not in seen:
                    seen[x] = nxt
                    nxt += 1
    maps.counter = nxt
    for node, ids in maps.send.items():
        maps.send[node] = [seen[x] for x in ids]
    for node, ids in maps.recv.items():
        maps.recv[node] = [seen[x] for x in ids]


class _DimWalk:
    """Number the ids both of whose ends are direct nodes of one dim graph."""

    def __init__(self, model: SyncModel, maps: SyncMaps,
                 ends: tuple[dict[int, str], dict[int, str]], seen: dict[int, int],
                 base: int) -> None:
        self.model, self.maps, self.ends, self.seen, self.cur = model, maps, ends, seen, base

    def walk(self, graph_name: str, depth: int) -> None:
        if depth > MAX_SUBGRAPH_DEPTH:
            raise AllocationInfeasible(f"multi-dims subgraphs nest deeper than "
                                       f"{MAX_SUBGRAPH_DEPTH} levels (at {graph_name!r})")
        senders, receivers = self.ends
        for node in self.model.graph.graph(graph_name).nodes:
            for x in self.maps.send.get(node.name, ()):
                if self.model.node(receivers[x]).graph == graph_name:
                    self._assign(x)
            for x in self.maps.recv.get(node.name, ()):
                if self.model.node(senders[x]).graph == graph_name:
                    self._assign(x)
            for _, sub in node.subgraphs:
                self.walk(sub, depth + 1)

    def _assign(self, x: int) -> None:
        if x not in self.seen:
            self.seen[x] = self.cur
            self.cur += 1
