"""The compile-phase driver: static memory for a graph's variables and constants (spec 14).

At the start of a build GE gives every `Variable`, `Constant`, `FileConstant` and
`ConstPlaceHolder` node memory: the manager name is `_src_const_name` or the node name, the
memory type RDMA_HBM when `_output_memory_type` is 1 (else HBM), output 0's recorded size the
compile size (4.1), and the node's output offset 0 the variable's logical address. Existence is
tested by *key*, so a node re-declared with a bigger shape but the same format and dtype reuses
the old, smaller block (spec 14, QUIRK). After the build, feature-map bytes plus the HBM variable
bytes must fit the device (section 11).

After memory assignment come ref-attr outputs and variable attributes (spec 14, last steps):

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
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import (
    RECURSION_CAP,
    REF_VAR_SRC,
    U64_MAX,
    MemType,
    Status,
    VarGraphError,
    VarManagerError,
    VarMemoryExhausted,
    fail,
)
from streamalloc.memory.desc import VarDesc, VarOp, raw_tensor_bytes, round_compile_size, sized_op
from streamalloc.memory.desc_convert import desc_from_tensor, op_from_node
from streamalloc.memory.tables import BroadcastInfo

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager

STATIC_TYPES = ("Variable", "Constant", "FileConstant", "ConstPlaceHolder")
SRC_CONST_NAME = "_src_const_name"
SRC_VAR_NAME = "_src_var_name"
OUTPUT_MEMORY_TYPE = "_output_memory_type"
BROADCAST_TYPES = frozenset({"HcomBroadcast", "HvdCallbackBroadcast"})
ASSIGN_TYPES = frozenset({"Assign", "AssignAdd", "AssignSub"})
TRANS_TYPES = frozenset({"TransData", "Cast", "Transpose", "Permute"})

Offsets = dict[str, list[int]]
_TYPE, _OUTPUTS = attrgetter("type"), attrgetter("outputs")


@dataclass(frozen=True, slots=True)
class StaticAssignment:
    """Where one node's output 0 went.

    `fresh` says the node got new memory (its address was not registered before); `block` is the
    number of bytes that added to the running totals (0 for reuse).
    """

    node: str
    kind: str
    manager_name: str
    op: VarOp
    desc: VarDesc
    mem_type: int
    logical: int
    fresh: bool
    block: int


def _manager_name(node: Node) -> str:
    src = node.attr(SRC_CONST_NAME)
    return src if isinstance(src, str) and src else node.name


def _mem_type(node: Node) -> int:
    return MemType.RDMA_HBM if node.attr(OUTPUT_MEMORY_TYPE) == 1 else MemType.HBM


def _running_total(manager: VarManager) -> int:
    return sum(r.var_mem_size for r in manager.mem_resources.values() if r is not None)


def assign_static_memory(graph: Graph, manager: VarManager, graph_id: int = 0,
                         types: Iterable[str] = STATIC_TYPES) -> tuple[StaticAssignment, ...]:
    """Give every node of `types` (root and subgraphs, T-order) its memory (spec 14).

    VarRef copies (nodes with `ref_var_src_var_name`) are skipped: they share their variable.
    Raises VarGraphError (a node without output, a bad descriptor, an unknown `_src_var_name`)
    or VarMemoryExhausted.
    """
    wanted = frozenset(types)
    nodes = graph.t_ordered_nodes()  # few are of `types`: those are found in C
    return tuple(_assign_node(node, manager, graph_id)
                 for node in compress(nodes, map(wanted.__contains__, map(_TYPE, nodes)))
                 if not node.has_attr(REF_VAR_SRC))


def _assign_node(node: Node, manager: VarManager, graph_id: int) -> StaticAssignment:
    if not node.outputs:
        fail(Status.PARAM_INVALID, f"node {node.name!r} ({node.type}) has no output description; "
                                   "a variable needs output 0's shape and dtype", VarGraphError)
    name, mem_type = _manager_name(node), _mem_type(node)
    op = sized_op(op_from_node(node))
    desc = op.outputs[0]
    resource = manager.require_resource()
    known, total = len(resource.mem_type_by_logic), _running_total(manager)
    if not manager.is_var_exist(name, desc):
        manager.assign_var_mem(name, op, desc, mem_type)
        if node.type == "Variable" and op.str_attr(SRC_VAR_NAME):
            _alias_source_variable(manager, node, op)
        manager.set_allocated_graph_id(name, graph_id)
    logical, actual_type = manager.get_var_addr(name, desc)
    op = op.with_output_offsets((logical, *op.output_offsets[1:]))
    return StaticAssignment(node.name, node.type, name, op, desc, actual_type, logical,
                            len(resource.mem_type_by_logic) > known,
                            _running_total(manager) - total)


def _alias_source_variable(manager: VarManager, node: Node, op: VarOp) -> None:
    """GE's AssignData2Fp32Var: the node's name under the source's current descriptor."""
    src = op.str_attr(SRC_VAR_NAME)
    try:
        cur = manager.get_cur_var_desc(src)
        address, mem_type = manager.get_var_addr(src, cur)
    except VarManagerError as exc:
        fail(exc.status, f"node {node.name!r}: its {SRC_VAR_NAME} {src!r} is not a known "
                         f"variable ({exc.detail})", VarGraphError)
    manager.set_var_addr(node.name, cur, address, mem_type, op)


def check_build_memory(manager: VarManager, feature_map_bytes: int,
                       device_memory_size: int) -> None:
    """The build-time limit: feature maps plus HBM variables must fit the device (spec 11)."""
    variables = manager.get_var_mem_size(MemType.HBM)
    need = feature_map_bytes + variables
    if need > device_memory_size:
        fail(Status.ACL_ERROR_GE_MEMORY_ALLOCATION,
             f"graph needs {need} bytes of device memory ({feature_map_bytes} feature map + "
             f"{variables} variables), more than the device's {device_memory_size} by "
             f"{need - device_memory_size}; reduce the variables or use a larger device",
             VarMemoryExhausted)


def available_memory(manager: VarManager, unknown_variable_sizes: Iterable[int]) -> int:
    """GE's estimate for a new graph: use_max - max(var_max, var size) - new variables.

    Unsigned 64-bit arithmetic, as in GE: the estimate wraps around when it goes negative.
    """
    used = max(manager.var_mem_max_size, manager.get_var_mem_size(MemType.HBM))
    return (manager.get_use_max_memory_size() - used - sum(unknown_variable_sizes)) & U64_MAX


# ---- ref-attr outputs and variable attributes (spec 14) -----------------------------------


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
    for node in filter(_OUTPUTS, graph.all_nodes()):  # nodes that describe their outputs
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


def _size(tensor: TensorDesc | None, where: str, missing: str) -> int:
    if tensor is None:
        fail(Status.FAILED, f"{where}, {missing}", VarGraphError)
    raw = raw_tensor_bytes(desc_from_tensor(tensor, where))
    return round_compile_size(raw or 0)


def _broadcast(run: _AttrRun, var: Node, node: Node, idx: int, address: int) -> None:
    where = f"broadcast {node.name!r}"
    reads = f"node {node.name!r} ({node.type}) broadcasts variable {var.name!r} on input {idx}"
    in_size = _size(input_desc(run.graph, node, idx), reads,
                    "and GE sizes it from that input, which the graph does not describe: give "
                    "the input, or its producer's output, a shape and dtype")
    out_size = _size(node.outputs[idx] if idx < len(node.outputs) else None, reads,
                     f"and GE sizes it from output {idx} too, which the graph does not describe: "
                     f"give node {node.name!r} an `outputs` entry {idx} with a shape and dtype")
    if in_size != out_size:
        fail(Status.FAILED, f"{where}: input {idx} has {in_size} bytes but output {idx} has "
                            f"{out_size}", VarGraphError)
    known = run.given.get(node.name, [])
    offset = known[idx] if idx < len(known) else address
    run.manager.save_broadcast_info(run.graph_id, BroadcastInfo(
        var.name, node.name, idx, offset, in_size, offset, out_size))
