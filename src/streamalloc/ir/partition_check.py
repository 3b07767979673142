"""The checks of a graph's partition table (GraphBuilder): known engines, known nodes, each
node in one partition, each partition within one graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streamalloc.errors import GraphLoadError
from streamalloc.ir.engines import EngineTable
from streamalloc.ir.graph import Node, PartitionEntry


def checked_partition(entries: Sequence[tuple[PartitionEntry, object]], engines: EngineTable,
                      node_of: Mapping[str, Node]) -> tuple[PartitionEntry, ...]:
    """The entries (each with its origin, for messages), once they pass the checks
    (GraphLoadError naming the first that does not); `node_of`: every node by name."""
    seen: dict[str, str] = {}
    for entry, origin in entries:
        _check_entry(entry, origin, engines, node_of, seen)
    return tuple(entry for entry, _ in entries)


def _check_entry(entry: PartitionEntry, origin: object, engines: EngineTable,
                 node_of: Mapping[str, Node], seen: dict[str, str]) -> None:
    if engines.get(entry.engine) is None:
        known = ", ".join(sorted(engines.engines))
        raise GraphLoadError(f"{origin}: partition {entry.id!r} field 'engine': unknown "
                             f"engine {entry.engine!r}; known: {known}")
    graphs = set()
    for name in entry.nodes:
        if name not in node_of:
            raise GraphLoadError(f"{origin}: partition {entry.id!r} lists unknown node "
                                 f"{name!r}")
        if name in seen:
            raise GraphLoadError(f"{origin}: node {name!r} is in partitions {seen[name]!r} "
                                 f"and {entry.id!r}")
        seen[name] = entry.id
        graphs.add(node_of[name].graph)
    if len(graphs) > 1:
        raise GraphLoadError(f"{origin}: partition {entry.id!r} mixes nodes of graphs "
                             f"{sorted(graphs)}")
