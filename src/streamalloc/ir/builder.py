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
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from operator import attrgetter
from types import MappingProxyType

import msgspec

from streamalloc.errors import GraphLoadError, OptionError
from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.ir import topo
from streamalloc.ir.adjacency import Consumer, linked_consumers
from streamalloc.ir.attrs import AttrValue, freeze_attrs
from streamalloc.ir.engines import EngineTable, default_engine_table
from streamalloc.ir.graph import ComputeGraph, DataInput, Graph, Node, PartitionEntry
from streamalloc.ir.node_walk import positions, producers_of
from streamalloc.ir.partition_check import checked_partition
from streamalloc.ir.tensor import TensorDesc

# Where a node or graph came from, for messages: a "file:line" string or any object whose str()
# gives one (loaders pass lazy locators so that valid files never pay for line lookups).
Origin = object

# Node's fields after `graph`, as `add_nodes` takes them (sequences as tuples, engine None: the
# op type's, attrs None: none): name, type, engine, inputs, control_inputs, attrs, outputs,
# input_descs, subgraphs, stream_id, task_count, cost_us.
NodeRow = tuple[str, str, str | None, tuple[DataInput | None, ...], tuple[str, ...],
                Mapping[str, AttrValue] | None, tuple[TensorDesc, ...], tuple[TensorDesc, ...],
                tuple[tuple[str, str], ...], int | None, int | None, float | None]

_SORT_MODES = {"": "dfs", "0": "bfs", "1": "dfs", "2": "given", "3": "given"}


_PORTS = {str(port): port for port in range(256)}  # the port text of nearly every reference
_ENGINE, _INPUTS, _REF_PORT = attrgetter("engine"), attrgetter("inputs"), attrgetter("port")


PORT_MAX = 2**31 - 1  # an output index is an int32 in GE (and the edge arrays' int64 must
# hold it: a port of 20 digits loaded, then overflowed them)


def parse_ref(text: str) -> DataInput:
    """Parse "node" or "node:k" (split on the last colon, as GE's loader does)."""
    head, sep, tail = text.rpartition(":")
    port = _PORTS.get(tail)
    if port is not None and head:
        return DataInput(sys.intern(head), port)
    if sep and tail.lstrip("-").isdigit() and head:
        return DataInput(sys.intern(head), int(tail))
    return DataInput(sys.intern(text), 0)


class _GraphDraft(msgspec.Struct):
    name: str
    nodes: list[Node] = msgspec.field(default_factory=list)
    origin: Origin = ""
    attrs: Mapping[str, AttrValue] = msgspec.field(default_factory=dict)
    # (position of its first node, origin of its k-th node) per `add_nodes` call: node origins
    # are only made for messages
    runs: list[tuple[int, Callable[[int], Origin]]] = msgspec.field(default_factory=list)

    def origin_of(self, name: str) -> Origin:
        """Where node `name` of this graph came from (a linear search: messages only)."""
        position = next(i for i, n in enumerate(self.nodes) if n.name == name)
        run = bisect_right([start for start, _ in self.runs], position) - 1
        start, origin_at = self.runs[run]
        return origin_at(position - start)


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
        # an op type's engine from a dict of its own (made once: `add_node` comes per node):
        # through the table's read-only proxy a lookup costs twice as much
        self._engine_of = dict(self.engines.op_engines).get
        self.dynamic_shape = dynamic_shape
        self._graphs: dict[str, _GraphDraft] = {name: _GraphDraft(name, origin=source)}
        # every node by name, in the order added: the model's `by_name` when that order is
        # the final one (one graph, its list topological)
        self._node_of: dict[str, Node] = {}
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
        row = (name, type, engine, tuple(inputs), tuple(control_inputs), attrs, tuple(outputs),
               tuple(input_descs), tuple(subgraphs), stream_id, task_count, cost_us)
        self.add_nodes(graph or self.name, [row], (origin or self.source,).__getitem__)

    def add_nodes(self, graph: str, rows: Iterable[NodeRow],
                  origin_at: Callable[[int], Origin]) -> None:
        """Add a node per row to `graph`, as `add_node` does; `origin_at(k)` tells where the
        k-th row came from (called only for a message). Rows are taken one at a time, so an
        error the caller finds making row k comes after the errors of the rows before it."""
        draft = self._graphs.get(graph)
        nodes: list[Node] = draft.nodes if draft else []
        if draft:
            draft.runs.append((len(nodes), origin_at))
        node_of = self._node_of
        engine_of, default_engine = self._engine_of, self.engines.default_engine
        no_attrs = freeze_attrs(None)
        for k, (text, type, engine, inputs, control_inputs, attrs, outputs, input_descs,
                subgraphs, stream_id, task_count, cost_us) in enumerate(rows):
            # one string object per name (refs are interned too): lookups compare identities
            name = sys.intern(text)
            if draft is None or name in node_of:
                self._reject_node(name, graph, origin_at(k))
            node = Node(name, sys.intern(type), engine or engine_of(type, default_engine), graph,
                        inputs, control_inputs, freeze_attrs(attrs) if attrs else no_attrs,
                        outputs, input_descs, subgraphs, stream_id, task_count, cost_us)
            node_of[name] = node
            nodes.append(node)

    def _reject_node(self, name: str, graph: str, origin: Origin) -> None:
        if graph not in self._graphs:
            raise GraphLoadError(f"{origin}: node {name!r} is placed in unknown graph {graph!r}")
        first = self._graphs[self._node_of[name].graph].origin_of(name)
        raise GraphLoadError(f"{origin}: duplicate node name {name!r} (first defined at "
                             f"{first}); node names must be unique across all graphs")

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
        # without subgraphs, nodes kept in the order added are `by_name` as Graph would make it
        # (the builder keeps a copy: it may go on adding nodes)
        in_order = not graphs and tuple(self._node_of.values()) == root.nodes
        partition = None if self._partition is None else \
            checked_partition(self._partition, self.engines, self._node_of)
        by_name, self._node_of = self._node_of, dict(self._node_of)
        return Graph(name=self.name, root=root, subgraphs=MappingProxyType(graphs),
                     options=MappingProxyType(dict(self.options)), engines=self.engines,
                     dynamic_shape=self.dynamic_shape, partition=partition,
                     node_order=order, source=self.source,
                     by_name=MappingProxyType(by_name if in_order else {}))

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
            for node in draft.nodes:
                for role, sub in node.subgraphs:
                    self._check_owned(draft, node, role, sub, parents)
                    parents[sub] = node.name
        for name, draft in self._graphs.items():
            if name != self.name and name not in parents:
                raise GraphLoadError(f"{draft.origin or self.source}: subgraph {name!r} is not "
                                     "owned by any node (list it under a node's 'subgraphs')")
        self._check_nesting(parents)
        return parents

    def _check_owned(self, draft: _GraphDraft, node: Node, role: str, sub: str,
                     parents: dict[str, str]) -> None:
        if sub not in self._graphs or sub == self.name:
            known = [g for g in self._graphs if g != self.name]
            raise GraphLoadError(f"{draft.origin_of(node.name)}: node {node.name!r} subgraph "
                                 f"{role!r} names unknown subgraph {sub!r}; known: "
                                 f"{known or 'none'}")
        if sub in parents:
            raise GraphLoadError(f"{draft.origin_of(node.name)}: subgraph {sub!r} is owned by "
                                 f"both {parents[sub]!r} and {node.name!r}")
        roles = [r for r, _ in node.subgraphs]
        if roles.count(role) > 1:
            raise GraphLoadError(f"{draft.origin_of(node.name)}: node {node.name!r} names "
                                 f"subgraph role {role!r} twice; roles must be unique per node")

    def _check_nesting(self, parents: dict[str, str]) -> None:
        for sub in parents:
            seen, graph = [sub], sub
            while graph in parents:
                graph = self._node_of[parents[graph]].graph
                if graph in seen:
                    raise GraphLoadError(f"{self.source}: subgraphs own each other in a loop: "
                                         + " -> ".join([*seen, graph]))
                seen.append(graph)

    def _finish(self, draft: _GraphDraft, parent: str | None, mode: str) -> ComputeGraph:
        nodes = draft.nodes
        walk = positions(nodes)
        position, controls = walk.position, walk.controls
        if not self._well_formed(nodes, position, controls, [src for src, _ in walk.late]):
            for node in nodes:  # the first problem in node order, with its message
                self._check_node(draft, node, position)
        frozen_controls = {src: tuple(c) for src, c in controls.items()}
        consumers = None  # made on first use (`ComputeGraph.consumers`) unless sorted here
        producers = None  # likewise (`ComputeGraph.producers`) unless the walk found them
        if mode == "given" and walk.forward:
            ordered, index = nodes, position
            producers = producers_of(nodes, walk)
        else:  # the given list is not topological, or GE's own sort was asked for
            consumers = linked_consumers(nodes)
            ordered = self._order(draft, consumers, frozen_controls,
                                  "dfs" if mode == "given" else mode)
            index = {n.name: i for i, n in enumerate(ordered)}
        return ComputeGraph(name=draft.name, nodes=tuple(ordered), parent=parent,
                            index=MappingProxyType(index),
                            control_successors=MappingProxyType(frozen_controls),
                            list_order=tuple(position), attrs=freeze_attrs(draft.attrs),
                            consumer_table=None if consumers is None
                            else MappingProxyType(consumers), producer_table=producers)

    def _well_formed(self, nodes: list[Node], position: Mapping[str, int],
                     controls: Mapping[str, list[str]], late: list[str]) -> bool:
        """The checks of `_check_node` on the whole graph at once (known engines, references
        to nodes of the graph, ports in range): False when any node fails one."""
        refs = list(filter(None, chain.from_iterable(map(_INPUTS, nodes))))
        if not (set(map(_ENGINE, nodes)).issubset(self.engines.engines)
                and position.keys() >= set(late) and position.keys() >= controls.keys()
                and min(map(_REF_PORT, refs), default=0) >= 0
                and max(map(_REF_PORT, refs), default=0) <= PORT_MAX):
            return False
        described = {n.name: len(n.outputs) for n in nodes if n.outputs}
        return not described or all(ref.port < described.get(ref.src, ref.port + 1) for ref in refs)

    def _check_node(self, draft: _GraphDraft, node: Node, nodes: Mapping[str, int]) -> None:
        if node.engine not in self.engines.engines:
            known = ", ".join(sorted(self.engines.engines))
            raise GraphLoadError(f"{draft.origin_of(node.name)}: node {node.name!r} field "
                                 f"'engine': unknown engine {node.engine!r}; known: {known} (add "
                                 "it under 'engines')")
        for slot, ref in enumerate(node.inputs):
            if ref is not None:
                self._check_ref(draft, node, f"input {slot} ({ref})", ref.src, nodes)
                producer = draft.nodes[nodes[ref.src]]
                if ref.port < 0 or ref.port > PORT_MAX or \
                        (producer.outputs and ref.port >= len(producer.outputs)):
                    has = f"outputs 0..{len(producer.outputs) - 1}" if producer.outputs else \
                        f"no described outputs, and a port runs 0..{PORT_MAX}"
                    raise GraphLoadError(
                        f"{draft.origin_of(node.name)}: node {node.name!r} input {slot} ({ref}): "
                        f"node {ref.src!r} has {has}, not {ref.port}")
        for src in node.control_inputs:
            self._check_ref(draft, node, f"control input {src!r}", src, nodes)

    def _check_ref(self, draft: _GraphDraft, node: Node, what: str, src: str,
                   nodes: Mapping[str, int]) -> None:
        if src in nodes:
            return
        found = self._node_of.get(src)
        graph = found.graph if found is not None else None
        detail = (f"{src!r} is in graph {graph!r}; edges cannot cross graphs" if graph
                  else f"no node named {src!r}")
        raise GraphLoadError(f"{draft.origin_of(node.name)}: node {node.name!r} {what} in graph "
                             f"{draft.name!r}: {detail}")

    def _order(self, draft: _GraphDraft, consumers: Mapping[str, tuple[Consumer, ...]],
               controls: Mapping[str, tuple[str, ...]], mode: str) -> list[Node]:
        nodes = {n.name: n for n in draft.nodes}
        names = list(nodes)

        def successors(name: str) -> list[str]:
            data = [] if nodes[name].type in LOOP_BACK_TYPES else \
                [c.node for c in consumers.get(name, ())]
            return data + list(controls.get(name, ()))

        types = {n: nodes[n].type for n in names}
        try:
            if mode == "bfs":
                ordered = topo.bfs_order(names, successors, types)
            else:
                ordered = topo.dfs_order(names, successors, types)
        except topo.CycleError as exc:
            raise GraphLoadError(f"{draft.origin or self.source}: graph {draft.name!r} has a "
                                 f"cycle: {exc}") from None
        return [nodes[n] for n in ordered]
