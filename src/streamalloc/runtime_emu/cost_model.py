"""Execution time and block dim of a node's task, from its op formula on the cost table.

Work is a roofline on ONE unit of the node's engine: `max(FLOPs / flops_per_s, bytes /
bytes_per_s)` with the per-unit numbers. FLOPs come from the op formula and the tensor
descriptions (a node's `input_descs` when the loader kept them, as GE dumps do, else the
producer's output descriptions, as for ONNX models); bytes are the input plus output bytes.
When a formula needs a shape that is unknown, the engine's `fallback_us` is used.

A task runs on `block_dim` units for `work / block_dim`. The block dim is the node's
`block_dim` (or GE's `tvm_blockdim`) attribute, else the op's `block_dim` in the table, else
enough units that each gets at least the engine's `min_core_us` of work, at most all of them.
A node's `cost_us` is its task's time as given; its block dim then comes from the attribute or
the table, else 1 (a given time says nothing about the cores it used).

>>> from streamalloc.ir import GraphBuilder, DataInput, TensorDesc
>>> b = GraphBuilder("g")
>>> b.add_node("x", "Data", outputs=[TensorDesc((1, 1024), "float16")])
>>> b.add_node("w", "Const", outputs=[TensorDesc((1024, 1024), "float16")])
>>> b.add_node("mm", "MatMul", inputs=[DataInput("x"), DataInput("w")],
...            outputs=[TensorDesc((1, 1024), "float16")])
>>> from streamalloc.runtime_emu.cost_table import default_cost_table
>>> model = CostModel(b.build(), default_cost_table())
>>> round(model.exec_us(model.node("mm")), 2)   # 2 MiB of weights at 37.5 GB/s per core
56.03
>>> time, dim = model.kernel(model.node("mm"))   # ceil(56.03 / 2 us) cores
>>> dim, round(time, 2)
(29, 1.93)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from operator import attrgetter

from streamalloc.ir.graph import Graph, Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.runtime_emu.cost_table import CostTable, EngineParams, OpFormula

# Attributes that transpose the first MatMul operand (ONNX Gemm, GE MatMul, GE BatchMatMul).
_TRANSPOSE_A = ("transA", "transpose_x1", "adj_x1")
_CHANNEL_LAST = ("NHWC", "NDHWC")
_UNKNOWN = TensorDesc()
# What the formulas read of a tensor description (its attrs never).
_desc_key = attrgetter("shape", "dtype", "format")
_UNKNOWN_KEY = _desc_key(_UNKNOWN)
# The block dim attribute: this project's name, then GE's (TVM_ATTR_NAME_BLOCKDIM, set on
# compiled AI Core nodes); values below 1 (GE writes -1 for "unset") are ignored.
BLOCK_DIM_ATTRS = ("block_dim", "tvm_blockdim")
# ceil() of a quotient that float division pushed just above an integer (1.1 / 0.1 gives
# 11.000000000000002) would add a core: the quotient is shrunk by this relative margin first.
_CEIL_MARGIN = 1e-12


def block_dim_attr(node: Node) -> int | None:
    """The block dim the graph gives the node, or None."""
    for key in BLOCK_DIM_ATTRS:
        value = node.int_attr(key, 0)
        if value >= 1:
            return value
    return None


def derived_block_dim(work_us: float, engine: EngineParams) -> int:
    """Units for `work_us` of one-unit work: at least `min_core_us` each, at most all units."""
    if engine.min_core_us is None or work_us <= 0:
        return 1
    wanted = math.ceil(work_us / engine.min_core_us * (1 - _CEIL_MARGIN))
    return max(1, min(wanted, engine.units))


def channels(desc: TensorDesc) -> int | None:
    """Channel count of an activation: C1*C0 for 5-D NC1HWC0, last dim for NHWC, else dim 1."""
    shape = desc.shape
    if shape is None or len(shape) < 2 or any(d < 0 for d in shape):
        return None
    if len(shape) == 5 and desc.format not in _CHANNEL_LAST:
        return shape[1] * shape[4]
    if desc.format in _CHANNEL_LAST:
        return shape[-1]
    return shape[1]


class CostModel:
    """Execution times of the nodes of one graph on one cost table."""

    def __init__(self, graph: Graph, table: CostTable) -> None:
        self.table = table
        self._nodes = graph.by_name
        self._memo: dict[Hashable, tuple[float, int]] = {}
        self._formulas: dict[str, str] = {}  # op type -> its formula's name
        # `_desc_key` of each output of the nodes that describe their outputs, made once: the
        # kernel key of a node reads its producers' (most nodes have no own `input_descs`)
        self._output_keys = {node.name: tuple(map(_desc_key, node.outputs))
                             for node in self._nodes.values() if node.outputs}

    @property
    def describes_outputs(self) -> bool:
        """Does any node describe its outputs (else every connected input is unknown)?"""
        return bool(self._output_keys)

    def node(self, name: str) -> Node:
        """The graph node called `name`."""
        return self._nodes[name]

    def kernel(self, node: Node) -> tuple[float, int]:
        """(execution time, block dim) of one task of `node`: it holds block dim units of its
        engine for the time (launch overhead not included).

        Memoised on everything `direct_kernel` reads (`kernel_key`): graphs repeat the same
        op on the same shapes many times, and a model's nodes are costed once per run."""
        if node.cost_us is not None:  # nothing to compute
            return self.direct_kernel(node)
        key = self.kernel_key(node)
        try:
            found = self._memo.get(key)
        except TypeError:  # a shape given as a list by a hand-built graph: not hashable
            return self.direct_kernel(node)
        if found is None:
            found = self._memo[key] = self.direct_kernel(node)
        return found

    def kernel_key(self, node: Node) -> Hashable:
        """What `direct_kernel` reads of a node without `cost_us`: op type, engine, block dim
        attribute, transposition (MatMul), and the shape, dtype and format of each connected
        input (as `input_descs` resolves it) and output. Nodes with equal keys cost the same."""
        formula = self._formulas.get(node.type)
        if formula is None:
            formula = self._formulas[node.type] = self.table.formula(node.type).formula
        given = transposed = None
        if node.attrs:
            given = block_dim_attr(node)
            transposed = any(bool(node.attr(key, False)) for key in _TRANSPOSE_A)
        if formula == "fixed":  # reads no tensor
            return node.type, node.engine, given
        return (node.type, node.engine, given, transposed, self._input_keys(node),
                tuple(map(_desc_key, node.outputs)) if node.outputs else ())

    def _input_keys(self, node: Node) -> tuple[Hashable, ...]:
        """`_desc_key` of each connected input, as `input_descs` resolves it."""
        if node.input_descs:  # GE dumps: the node's own descriptions come first
            return tuple(map(_desc_key, self.input_descs(node)))
        outputs = self._output_keys
        if not outputs:  # no node describes its outputs (generated graphs): all unknown
            return (_UNKNOWN_KEY,) * (len(node.inputs) - node.inputs.count(None))
        return tuple(_port_key(outputs.get(ref.src, ()), ref.port)
                     for ref in node.inputs if ref is not None)

    def direct_kernel(self, node: Node) -> tuple[float, int]:
        """`kernel` computed from scratch (no memo)."""
        engine = self.table.engine(node.engine)
        given = block_dim_attr(node) or self.table.formula(node.type).block_dim
        if node.cost_us is not None:
            return float(node.cost_us), min(given or 1, engine.units)
        work = self.exec_us(node)
        dim = min(given, engine.units) if given else derived_block_dim(work, engine)
        return work / dim, dim

    def exec_us(self, node: Node) -> float:
        """Work of one task of `node` on one unit in microseconds (`cost_us` as given; launch
        overhead not included)."""
        if node.cost_us is not None:
            return float(node.cost_us)
        formula = self.table.formula(node.type)
        if formula.formula == "fixed":
            return formula.us
        if formula.formula == "collective":
            return self._collective(node, formula)
        return self._roofline(node, formula)

    def _roofline(self, node: Node, formula: OpFormula) -> float:
        engine = self.table.engine(node.engine)
        moved = self.bytes_moved(node)
        flops: float | None = 0.0
        if formula.formula == "conv":
            flops = self.conv_flops(node)
        elif formula.formula == "matmul":
            flops = self.matmul_flops(node)
        if flops is None or moved is None:
            return engine.fallback_us
        compute = flops / engine.flops_per_s if engine.flops_per_s else 0.0
        return max(compute, moved / engine.bytes_per_s) * 1e6

    def _collective(self, node: Node, formula: OpFormula) -> float:
        engine = self.table.engine(node.engine)
        data = _sum_bytes(self.input_descs(node)) or _sum_bytes(node.outputs)
        if data is None:
            return engine.fallback_us
        return formula.latency_us + formula.factor * data / engine.bytes_per_s * 1e6

    def input_descs(self, node: Node) -> list[TensorDesc]:
        """Description of each connected data input (the node's own, else the producer's)."""
        own, nodes, found = node.input_descs, self._nodes, []
        if not own:  # the usual case (ONNX models, graph files): the producers' outputs
            for ref in filter(None, node.inputs):
                producer = nodes.get(ref.src)
                outputs = producer.outputs if producer is not None else ()
                found.append(outputs[ref.port] if ref.port < len(outputs) else _UNKNOWN)
            return found
        for slot, src in enumerate(node.inputs):
            if src is None:
                continue
            desc = own[slot] if slot < len(own) else None
            if desc is None or desc.shape is None:
                producer = nodes.get(src.src)
                desc = producer.outputs[src.port] if producer is not None \
                    and src.port < len(producer.outputs) else _UNKNOWN
            found.append(desc)
        return found

    def _input(self, node: Node, index: int) -> TensorDesc | None:
        descs = self.input_descs(node)
        return descs[index] if index < len(descs) else None

    def bytes_moved(self, node: Node) -> float | None:
        """Input plus output bytes that are known; None when none is known."""
        known = [d.size_bytes() for d in (*self.input_descs(node), *node.outputs)]
        sizes = [s for s in known if s is not None]
        return float(sum(sizes)) if sizes else None

    def conv_flops(self, node: Node) -> float | None:
        """2 x output elements x (filter elements / Cout): 2*N*Cout*Ho*Wo*(Cin/groups)*kh*kw."""
        weights = self._input(node, 1)
        out = node.outputs[0] if node.outputs else None
        if weights is None or out is None:
            return None
        out_elems, w_elems, cout = out.elements(), weights.elements(), channels(out)
        if not out_elems or not w_elems or not cout:
            return None
        return 2.0 * out_elems * w_elems / cout

    def matmul_flops(self, node: Node) -> float | None:
        """2 x output elements x K, K the reduced dimension of input 0 (2*M*N*K per batch)."""
        a = self._input(node, 0)
        out = node.outputs[0] if node.outputs else None
        if a is None or out is None or a.shape is None or not a.shape:
            return None
        transposed = any(bool(node.attr(key, False)) for key in _TRANSPOSE_A)
        k = a.shape[-2] if transposed and len(a.shape) >= 2 else a.shape[-1]
        out_elems = out.elements()
        if not out_elems or k <= 0:
            return None
        return 2.0 * out_elems * k


def _port_key(output_keys: tuple[Hashable, ...], port: int) -> Hashable:
    return output_keys[port] if port < len(output_keys) else _UNKNOWN_KEY


def _sum_bytes(descs: Iterable[TensorDesc]) -> float | None:
    sizes = [d.size_bytes() for d in descs]
    known = [s for s in sizes if s is not None]
    return float(sum(known)) if known else None
