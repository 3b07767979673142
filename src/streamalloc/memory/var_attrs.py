"""After memory assignment: ref-attr outputs and variable attributes (spec 14, last steps).

* Every output carrying the tensor attr `ref_var_src_var_name` gets its source variable's
  logical address (a RefData source is skipped).
* Per `Variable`: an `HcomBroadcast` / `HvdCallbackBroadcast` consumer gets a broadcast record
  in the manager; `Assign` / `AssignAdd` / `AssignSub` consumers at input 0 (recursively through
  chained assigns, depth 16) write into the variable, so their output offset 0 is its address;
  behind a chain of `TransData` / `Cast` / `Transpose` / `Permute` the assigns take the last trans
  node's output offset 0.

streamalloc has no feature-map assigner here, so offsets of ordinary nodes are only known when
the caller passes them (`feature_offsets`). Where GE reads a broadcast op's output offset, an
unknown one is taken as the variable's address: a broadcast writes the variable in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import RECURSION_CAP
from streamalloc.memory.compile_driver import REF_VAR_SRC, StaticAssignment
from streamalloc.memory.desc import raw_tensor_bytes, round_compile_size
from streamalloc.memory.graph_desc import desc_from_tensor
from streamalloc.memory.manager import VarManager
from streamalloc.memory.records import BroadcastInfo
from streamalloc.memory.status import Status, VarGraphError, fail

BROADCAST_TYPES = frozenset({"HcomBroadcast", "HvdCallbackBroadcast"})
ASSIGN_TYPES = frozenset({"Assign", "AssignAdd", "AssignSub"})
TRANS_TYPES = frozenset({"TransData", "Cast", "Transpose", "Permute"})

Offsets = dict[str, list[int]]


def consumers_of(graph: Graph, node: Node, port: int = 0) -> list[tuple[Node, int]]:
    """(consumer node, input slot) of one output, in link order."""
    compute = graph.graph(node.graph)
    return [(compute.node(c.node), c.slot) for c in compute.consumers.get(node.name, ())
            if c.port == port]


def input_desc(graph: Graph, node: Node, slot: int) -> TensorDesc | None:
    """The node's description of input `slot`, else its producer's output description."""
    if slot < len(node.input_descs):
        return node.input_descs[slot]
    source = node.inputs[slot] if slot < len(node.inputs) else None
    if source is None:
        return None
    producer = graph.graph(node.graph).node(source.src)
    return producer.outputs[source.port] if source.port < len(producer.outputs) else None


def _set(offsets: Offsets, node: Node, index: int, value: int) -> None:
    row = offsets.setdefault(node.name, [0] * len(node.outputs))
    row.extend([0] * (index + 1 - len(row)))
    row[index] = value


@dataclass
class _AttrRun:
    """One run of variable-attr assignment: the graph, the manager, offsets so far."""

    graph: Graph
    manager: VarManager
    graph_id: int
    offsets: Offsets
    given: Offsets  # offsets the caller knew (feature maps)


def assign_variable_attrs(graph: Graph, manager: VarManager, graph_id: int,
                          assignments: Iterable[StaticAssignment],
                          feature_offsets: Mapping[str, Iterable[int]] | None = None
                          ) -> dict[str, tuple[int, ...]]:
    """Output offsets after ref-attr and variable-attr assignment, per node (spec 14)."""
    assignments = tuple(assignments)
    given = {k: list(v) for k, v in (feature_offsets or {}).items()}
    run = _AttrRun(graph, manager, graph_id, {k: list(v) for k, v in given.items()}, given)
    for a in assignments:
        run.offsets[a.node] = list(a.op.output_offsets)
    _ref_attr_outputs(graph, run.offsets)
    for a in assignments:
        if a.kind == "Variable":
            _variable_consumers(run, graph.node(a.node), a.logical)
    return {k: tuple(v) for k, v in run.offsets.items()}


def _ref_attr_outputs(graph: Graph, offsets: Offsets) -> None:
    for node in graph.all_nodes():
        for index, out in enumerate(node.outputs):
            src = out.attrs.get(REF_VAR_SRC)
            if src is None or src.kind != "string":
                continue
            try:
                source = graph.node(src.value)
            except KeyError:
                continue
            if source.type != "RefData" and source.name in offsets:
                _set(offsets, node, index, offsets[source.name][0])


def _variable_consumers(run: _AttrRun, var: Node, address: int) -> None:
    for consumer, slot in consumers_of(run.graph, var):
        if consumer.type in BROADCAST_TYPES:
            _broadcast(run, var, consumer, slot, address)
        elif consumer.type in ASSIGN_TYPES and slot == 0:
            _assign_chain(run, consumer, address, 0)
        elif consumer.type in TRANS_TYPES:
            _trans_chain(run, consumer)


def _assign_chain(run: _AttrRun, node: Node, address: int, depth: int) -> None:
    if depth >= RECURSION_CAP:
        fail(Status.FAILED, f"assign chain through {node.name!r} is deeper than "
                            f"{RECURSION_CAP}", VarGraphError)
    _set(run.offsets, node, 0, address)
    for consumer, slot in consumers_of(run.graph, node):
        if consumer.type in ASSIGN_TYPES and slot == 0:
            _assign_chain(run, consumer, address, depth + 1)


def _trans_chain(run: _AttrRun, node: Node) -> None:
    last = node
    for _ in range(RECURSION_CAP):
        nxt = [c for c, slot in consumers_of(run.graph, last)
               if c.type in TRANS_TYPES and slot == 0]
        if not nxt:
            break
        last = nxt[0]
    else:
        fail(Status.FAILED, f"trans chain after {node.name!r} is deeper than {RECURSION_CAP}",
             VarGraphError)
    if last.name not in run.offsets:
        return  # its feature-map offset is unknown here
    address = run.offsets[last.name][0]
    for consumer, slot in consumers_of(run.graph, last):
        if consumer.type in ASSIGN_TYPES and slot == 0:
            _assign_chain(run, consumer, address, 0)


def _size(tensor: TensorDesc | None, where: str) -> int:
    if tensor is None:
        fail(Status.FAILED, f"{where} does not exist", VarGraphError)
    raw = raw_tensor_bytes(desc_from_tensor(tensor, where))
    return round_compile_size(raw or 0)


def _broadcast(run: _AttrRun, var: Node, node: Node, idx: int, address: int) -> None:
    where = f"broadcast {node.name!r}"
    in_size = _size(input_desc(run.graph, node, idx), f"{where} input {idx}")
    out_size = _size(node.outputs[idx] if idx < len(node.outputs) else None,
                     f"{where} output {idx}")
    if in_size != out_size:
        fail(Status.FAILED, f"{where}: input {idx} has {in_size} bytes but output {idx} has "
                            f"{out_size}", VarGraphError)
    known = run.given.get(node.name, [])
    offset = known[idx] if idx < len(known) else address
    run.manager.save_broadcast_info(run.graph_id, BroadcastInfo(
        var.name, node.name, idx, offset, in_size, offset, out_size))
