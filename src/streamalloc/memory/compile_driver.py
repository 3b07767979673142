"""The compile-phase driver: static memory for a graph's variables and constants (spec 14).

At the start of a build GE gives every `Variable`, `Constant`, `FileConstant` and
`ConstPlaceHolder` node memory: the manager name is `_src_const_name` or the node name, the
memory type RDMA_HBM when `_output_memory_type` is 1 (else HBM), output 0's recorded size the
compile size (4.1), and the node's output offset 0 the variable's logical address. Existence is
tested by *key*, so a node re-declared with a bigger shape but the same format and dtype reuses
the old, smaller block (spec 14, QUIRK). After the build, feature-map bytes plus the HBM variable
bytes must fit the device (section 11).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from streamalloc.ir.graph import Graph, Node
from streamalloc.memory.codes import U64_MAX, MemType
from streamalloc.memory.desc import VarDesc, VarOp
from streamalloc.memory.graph_desc import op_from_node, sized_op
from streamalloc.memory.manager import VarManager
from streamalloc.memory.status import (
    Status,
    VarGraphError,
    VarManagerError,
    VarMemoryExhausted,
    fail,
)

STATIC_TYPES = ("Variable", "Constant", "FileConstant", "ConstPlaceHolder")
REF_VAR_SRC = "ref_var_src_var_name"
SRC_CONST_NAME = "_src_const_name"
SRC_VAR_NAME = "_src_var_name"
OUTPUT_MEMORY_TYPE = "_output_memory_type"


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
    out = []
    for node in graph.all_nodes():
        if node.type in wanted and not node.has_attr(REF_VAR_SRC):
            out.append(_assign_node(node, manager, graph_id))
    return tuple(out)


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
