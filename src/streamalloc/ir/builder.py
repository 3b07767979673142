"""GraphBuilder: the one way to make a Graph. It verifies the structure and fixes the G-order.

Checks: names unique across all graphs, every input and control input names a node of the same
graph (and an existing output when the producer declares its outputs), every subgraph is owned
by exactly one node, engines are known, no cycle (the error lists the cycle), not empty.

G-order: with `order="given"` the nodes keep the order they were added in when that order is
topological (GE's allocator takes GE's order as input); otherwise, and always with
`order="ge"`, GE's own sort is applied: depth-first by default, breadth-first when the option
`ge.topoSortingMode` is "0".
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from streamalloc.errors import GraphLoadError, OptionError
from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.ir import topo
from streamalloc.ir.attrs import AttrValue, freeze_attrs
from streamalloc.ir.engines import EngineTable, default_engine_table
from streamalloc.ir.graph import (
    ComputeGraph,
    Consumer,
    DataInput,
    Graph,
    Node,
    PartitionEntry,
)
from streamalloc.ir.tensor import TensorDesc

# Where a node or graph came from, for messages: a "file:line" string or any object whose str()
# gives one (loaders pass lazy locators so that valid files never pay for line lookups).
Origin = object

_SORT_MODES = {"": "dfs", "0": "bfs", "1": "dfs", "2": "given", "3": "given"}


def parse_ref(text: str) -> DataInput:
    """Parse "node" or "node:k" (split on the last colon, as GE's loader does)."""
    head, sep, tail = text.rpartition(":")
    if sep and tail.lstrip("-").isdigit() and head:
        return DataInput(sys.intern(head), int(tail))
    return DataInput(sys.intern(text), 0)


@dataclass(slots=True)
class _Pending:
    node: Node
    origin: Origin


@dataclass
class _GraphDraft:
    name: str
    nodes: list[_Pending] = field(default_factory=list)
    origin: Origin = ""
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)


class GraphBuilder:
    """Collects nodes graph by graph, then `build()` verifies and returns an immutable Graph.

    >>> b = GraphBuilder("demo")
    >>> b.add_node("data", "Data")
    >>> b.add_node("relu", "Relu", inputs=[DataInput("data", 0)])
    >>> [n.engine for n in b.build().root.nodes]
    ['DNN_VM_GE_LOCAL', 'AIcoreEngine']
    """

    def __init__(self, name: str, *, source: str = "", options: Mapping[str, str] | None = None,
                 engines: EngineTable | None = None, dynamic_shape: bool = False) -> None:
        self.name = name
        self.source = source
        self.options = dict(options or {})
        self.engines = engines or default_engine_table()
        self.dynamic_shape = dynamic_shape
        self._graphs: dict[str, _GraphDraft] = {name: _GraphDraft(name, origin=source)}
        self._where: dict[str, tuple[str, Origin]] = {}  # node -> (graph, origin)
        self._partition: list[tuple[PartitionEntry, Origin]] | None = None

    def add_subgraph(self, name: str, origin: Origin = "",
                     attrs: Mapping[str, AttrValue] | None = None) -> None:
        """Declare a subgraph; a node owning it lists it in `subgraphs`."""
        if name in self._graphs:
            raise GraphLoadError(f"{origin or self.source}: graph name {name!r} is used twice "
                                 f"(first at {self._graphs[name].origin or self.source})")
        self._graphs[name] = _GraphDraft(name, origin=origin, attrs=attrs or {})

    def set_graph_attrs(self, attrs: Mapping[str, AttrValue], graph: str | None = None) -> None:
        """Set the attributes of `graph` (default: the root)."""
        self._graphs[graph or self.name].attrs = attrs

    def add_node(self, name: str, type: str, *, graph: str | None = None,
                 engine: str | None = None, inputs: Sequence[DataInput | None] = (),
                 control_inputs: Sequence[str] = (), attrs: Mapping[str, AttrValue] | None = None,
                 outputs: Sequence[TensorDesc] = (), input_descs: Sequence[TensorDesc] = (),
                 subgraphs: Iterable[tuple[str, str]] = (), stream_id: int | None = None,
                 task_count: int | None = None, cost_us: float | None = None,
                 origin: Origin = "") -> None:
        """Add a node to `graph` (default: the root). Only names are checked here."""
        graph = graph or self.name
        origin = origin or self.source
        # one string object per name (refs are interned too): later lookups compare identities
        name = sys.intern(name)
        if graph not in self._graphs:
            raise GraphLoadError(f"{origin}: node {name!r} is placed in unknown graph {graph!r}")
        if name in self._where:
            first = self._where[name][1]
            raise GraphLoadError(f"{origin}: duplicate node name {name!r} (first defined at "
                                 f"{first}); node names must be unique across all graphs")
        node = Node(name=name, type=sys.intern(type),
                    engine=engine or self.engines.engine_for(type),
                    graph=graph, inputs=tuple(inputs), control_inputs=tuple(control_inputs),
                    attrs=freeze_attrs(attrs), outputs=tuple(outputs),
                    input_descs=tuple(input_descs), subgraphs=tuple(subgraphs),
                    stream_id=stream_id, task_count=task_count, cost_us=cost_us)
        self._where[name] = (graph, origin)
        self._graphs[graph].nodes.append(_Pending(node, origin))

    def set_partition(self, entries: Iterable[tuple[PartitionEntry, Origin]]) -> None:
        """Give the engine partition explicitly: (entry, origin) pairs in L-order."""
        self._partition = list(entries)

    def build(self, order: str = "given") -> Graph:
        """Verify everything and return the Graph (raises GraphLoadError on bad structure)."""
        if order not in ("given", "ge"):
            raise ValueError(f"order must be 'given' or 'ge', not {order!r}")
        if not self._graphs[self.name].nodes:
            raise GraphLoadError(f"{self.source or self.name}: graph {self.name!r} has no nodes")
        parents = self._check_ownership()
        mode = self._sort_mode(order)
        graphs = {name: self._finish(draft, parents.get(name), mode)
                  for name, draft in self._graphs.items()}
        root = graphs.pop(self.name)
        return Graph(name=self.name, root=root, subgraphs=MappingProxyType(graphs),
                     options=MappingProxyType(dict(self.options)), engines=self.engines,
                     dynamic_shape=self.dynamic_shape, partition=self._checked_partition(),
                     node_order=order, source=self.source)

    def _sort_mode(self, order: str) -> str:
        value = self.options.get("ge.topoSortingMode", "")
        if value not in _SORT_MODES:
            raise OptionError(f"{self.source}: option ge.topoSortingMode is {value!r}; "
                              f"valid: {', '.join(repr(v) for v in _SORT_MODES)}")
        if value in ("0", "1"):
            return _SORT_MODES[value]
        if value in ("2", "3"):
            return "given"  # reverse-DFS variants are not specified: take the given order as GE's
        return "dfs" if order == "ge" else "given"

    def _check_ownership(self) -> dict[str, str]:
        parents: dict[str, str] = {}
        for draft in self._graphs.values():
            for pending in draft.nodes:
                for role, sub in pending.node.subgraphs:
                    self._check_owned(pending, role, sub, parents)
                    parents[sub] = pending.node.name
        for name, draft in self._graphs.items():
            if name != self.name and name not in parents:
                raise GraphLoadError(f"{draft.origin or self.source}: subgraph {name!r} is not "
                                     "owned by any node (list it under a node's 'subgraphs')")
        self._check_nesting(parents)
        return parents

    def _check_owned(self, pending: _Pending, role: str, sub: str, parents: dict[str, str]) -> None:
        node = pending.node
        if sub not in self._graphs or sub == self.name:
            known = [g for g in self._graphs if g != self.name]
            raise GraphLoadError(f"{pending.origin}: node {node.name!r} subgraph {role!r} names "
                                 f"unknown subgraph {sub!r}; known: {known or 'none'}")
        if sub in parents:
            raise GraphLoadError(f"{pending.origin}: subgraph {sub!r} is owned by both "
                                 f"{parents[sub]!r} and {node.name!r}")
        roles = [r for r, _ in node.subgraphs]
        if roles.count(role) > 1:
            raise GraphLoadError(f"{pending.origin}: node {node.name!r} names subgraph role "
                                 f"{role!r} twice; roles must be unique per node")

    def _check_nesting(self, parents: dict[str, str]) -> None:
        for sub in parents:
            seen, graph = [sub], sub
            while graph in parents:
                graph = self._where[parents[graph]][0]
                if graph in seen:
                    raise GraphLoadError(f"{self.source}: subgraphs own each other in a loop: "
                                         + " -> ".join([*seen, graph]))
                seen.append(graph)

    def _finish(self, draft: _GraphDraft, parent: str | None, mode: str) -> ComputeGraph:
        nodes = {p.node.name: p for p in draft.nodes}
        consumers: dict[str, list[Consumer]] = defaultdict(list)
        controls: dict[str, list[str]] = defaultdict(list)
        seen: set[str] = set()
        forward = True  # every edge from an earlier node: the given list is topological
        for pending in draft.nodes:
            node = pending.node
            self._check_node(pending, nodes, draft.name)
            for slot, ref in enumerate(node.inputs):
                if ref is not None:
                    consumers[ref.src].append(Consumer(ref.port, node.name, slot))
                    if ref.src not in seen and nodes[ref.src].node.type not in LOOP_BACK_TYPES:
                        forward = False
            for src in node.control_inputs:
                controls[src].append(node.name)
                forward = forward and src in seen
            seen.add(node.name)
        frozen_consumers = {k: tuple(sorted(v, key=lambda c: c.port)) for k, v in consumers.items()}
        frozen_controls = {k: tuple(v) for k, v in controls.items()}
        if mode == "given" and not forward:
            mode = "dfs"  # the given list is not topological: GE's own sort
        ordered = self._order(draft, nodes, frozen_consumers, frozen_controls, mode)
        return ComputeGraph(name=draft.name, nodes=tuple(ordered), parent=parent,
                            index=MappingProxyType({n.name: i for i, n in enumerate(ordered)}),
                            consumers=MappingProxyType(frozen_consumers),
                            control_successors=MappingProxyType(frozen_controls),
                            list_order=tuple(p.node.name for p in draft.nodes),
                            attrs=freeze_attrs(draft.attrs))

    def _check_node(self, pending: _Pending, nodes: Mapping[str, _Pending], graph: str) -> None:
        node, origin = pending.node, pending.origin
        if node.engine not in self.engines.engines:
            known = ", ".join(sorted(self.engines.engines))
            raise GraphLoadError(f"{origin}: node {node.name!r} field 'engine': unknown engine "
                                 f"{node.engine!r}; known: {known} (add it under 'engines')")
        for slot, ref in enumerate(node.inputs):
            if ref is not None:
                if ref.src not in nodes:  # the message is only built for a bad reference
                    self._check_ref(pending, f"input {slot} ({ref})", ref.src, nodes, graph)
                producer = nodes[ref.src].node
                if ref.port < 0 or (producer.outputs and ref.port >= len(producer.outputs)):
                    raise GraphLoadError(
                        f"{origin}: node {node.name!r} input {slot} ({ref}): node {ref.src!r} "
                        f"has outputs 0..{len(producer.outputs) - 1}, not {ref.port}")
        for src in node.control_inputs:
            if src not in nodes:
                self._check_ref(pending, f"control input {src!r}", src, nodes, graph)

    def _check_ref(self, pending: _Pending, what: str, src: str, nodes: Mapping[str, _Pending],
                   graph: str) -> None:
        if src in nodes:
            return
        where = self._where.get(src)
        detail = (f"{src!r} is in graph {where[0]!r}; edges cannot cross graphs" if where
                  else f"no node named {src!r}")
        raise GraphLoadError(f"{pending.origin}: node {pending.node.name!r} {what} in graph "
                             f"{graph!r}: {detail}")

    def _order(self, draft: _GraphDraft, nodes: Mapping[str, _Pending],
               consumers: Mapping[str, tuple[Consumer, ...]],
               controls: Mapping[str, tuple[str, ...]], mode: str) -> list[Node]:
        if mode == "given":  # `_finish` found the list topological
            return [p.node for p in draft.nodes]
        names = [p.node.name for p in draft.nodes]

        def successors(name: str) -> list[str]:
            data = [] if nodes[name].node.type in LOOP_BACK_TYPES else \
                [c.node for c in consumers.get(name, ())]
            return data + list(controls.get(name, ()))

        types = {n: nodes[n].node.type for n in names}
        try:
            if mode == "bfs":
                ordered = topo.bfs_order(names, successors, types)
            else:
                ordered = topo.dfs_order(names, successors, types)
        except topo.CycleError as exc:
            raise GraphLoadError(f"{draft.origin or self.source}: graph {draft.name!r} has a "
                                 f"cycle: {exc}") from None
        return [nodes[n].node for n in ordered]

    def _checked_partition(self) -> tuple[PartitionEntry, ...] | None:
        if self._partition is None:
            return None
        seen: dict[str, str] = {}
        for entry, origin in self._partition:
            self._check_partition_entry(entry, origin, seen)
        return tuple(entry for entry, _ in self._partition)

    def _check_partition_entry(self, entry: PartitionEntry, origin: Origin,
                               seen: dict[str, str]) -> None:
        if self.engines.get(entry.engine) is None:
            known = ", ".join(sorted(self.engines.engines))
            raise GraphLoadError(f"{origin}: partition {entry.id!r} field 'engine': unknown "
                                 f"engine {entry.engine!r}; known: {known}")
        graphs = set()
        for name in entry.nodes:
            if name not in self._where:
                raise GraphLoadError(f"{origin}: partition {entry.id!r} lists unknown node "
                                     f"{name!r}")
            if name in seen:
                raise GraphLoadError(f"{origin}: node {name!r} is in partitions {seen[name]!r} "
                                     f"and {entry.id!r}")
            seen[name] = entry.id
            graphs.add(self._where[name][0])
        if len(graphs) > 1:
            raise GraphLoadError(f"{origin}: partition {entry.id!r} mixes nodes of graphs "
                                 f"{sorted(graphs)}")
