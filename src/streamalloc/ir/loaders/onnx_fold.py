"""Constant folding of ONNX models at import, as GE folds constants before stream allocation.

GE replaces every node whose value is known at build time by a `Const` before it partitions the
graph and assigns streams (ConstantFoldingPass: all data inputs constant; DimensionComputePass:
Shape and Size of a tensor whose shape is static). Exported ONNX models often compute their
weights that way (`ConstantOfShape` of a shape initializer in the light zoo models and in
tests/data/onnx), so without folding those weights run as AI Core tasks and are missing from
the variable plan. `fold_constants(model)` returns a copy of the model in which:

* a node folds when its op is in the default domain and in `FOLDABLE_OPS`, it has no subgraph
  attribute, every output's shape and dtype are static in the model's types (value_info after
  shape inference: an unknown shape leaves the node as written), and either every data input is
  constant (an initializer, a `Constant` node's output, an output of a node already folded) or
  the op is one of `SHAPE_OPS` and its input's shape is static. Only values of the node's own
  graph count as constant: a body reading an enclosing graph's value reads a Data node.
* each output of a folded node becomes an initializer with the output's dims and dtype and no
  data, so the importer makes it a `Const` named after the tensor, like any initializer. Values
  are not computed: stream allocation and the variable plan need a weight's size, not its bytes.
* initializers, `Constant` nodes and folded outputs that only folded nodes read are removed (GE
  deletes a folded node's inputs left without consumers); values nothing read in the model as
  written stay.

Random ops (`RANDOM_OPS`) never fold, whatever their inputs: a folded value would be drawn once
at build time, while the model draws a new one per run; GE folds with host kernels of
deterministic ops only. Dropout is left too (random in training mode).

>>> from onnx import TensorProto, helper
>>> shape = helper.make_tensor("s", TensorProto.INT64, [2], [4, 8])
>>> node = helper.make_node("ConstantOfShape", ["s"], ["w"])
>>> out = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 8])
>>> model = helper.make_model(helper.make_graph([node], "g", [], [out], [shape]))
>>> folded = fold_constants(model).graph
>>> len(folded.node), [(t.name, list(t.dims)) for t in folded.initializer]
(0, [('w', [4, 8])])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

import onnx
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from google.protobuf.message import Message
from onnx import AttributeProto, GraphProto, NodeProto, TensorProto, TypeProto, ValueInfoProto

_M = TypeVar("_M", bound=Message)

DEFAULT_DOMAINS = ("", "ai.onnx")

# Deterministic ops GE folds when their inputs are constant (its host kernels and host CPU
# engine): creation, shape and view ops, data movement, elementwise math, logic, reductions.
FOLDABLE_OPS = frozenset({
    "ConstantOfShape", "Range", "EyeLike", "Shape", "Size",
    "Identity", "Cast", "CastLike", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
    "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand", "Tile",
    "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Sqrt", "Reciprocal", "Pow", "Exp", "Log",
    "Floor", "Ceil", "Round", "Sign", "Mod", "Min", "Max", "Sum", "Erf", "Tanh", "Sigmoid",
    "Sin", "Cos", "MatMul", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
    "And", "Or", "Xor", "Where", "ReduceSum", "ReduceProd", "ReduceMean", "ReduceMax", "ReduceMin",
})
# Fold when the input's shape is static, constant or not (GE's DimensionComputePass).
SHAPE_OPS = frozenset({"Shape", "Size"})
# Never folded: a new draw per run (see the module docstring).
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli", "Dropout"})
assert not FOLDABLE_OPS & RANDOM_OPS


def fold_constants(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` with its constant-only nodes folded into initializers (see above)."""
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    _fold_graph(folded.graph, reads_wanted=False)
    return folded


def _fold_graph(graph: GraphProto, *, reads_wanted: bool) -> set[str]:
    """Fold one graph in place, its bodies first (they only see their own constants). With
    `reads_wanted` (the enclosing graph needs them) returns every value name the folded graph
    and its bodies read, else an empty set."""
    nodes = list(graph.node)
    types = _static_types(graph)
    constant = {t.name for t in graph.initializer} | {s.values.name
                                                      for s in graph.sparse_initializer}
    constant |= {v for n in graph.node if _is_constant_node(n) for v in n.output}
    # a node with a body never folds, so folding the bodies cannot change the split
    folded, kept = _split(nodes, constant, types)
    inner = _fold_bodies(nodes, reads_wanted=reads_wanted or bool(folded))
    if folded:
        dead = _reads(nodes, graph.output, inner) - _reads(kept, graph.output, inner)
        _remove_folded(graph, folded, dead, types, constant)
        kept = [n for n in kept if not _dead_constant(n, dead)]
    return _reads(kept, graph.output, inner) if reads_wanted else set()


def _fold_bodies(nodes: list[NodeProto], *, reads_wanted: bool) -> dict[int, set[str]]:
    """Fold the nodes' bodies; returns what each node's bodies read (empty sets unless
    `reads_wanted`) by node id, which `nodes` keeps valid. Gathered as the bodies fold: walking
    them again for every graph around them took nesting depth x size."""
    inner: dict[int, set[str]] = {}
    for node in nodes:
        for body in _bodies(node):
            inner.setdefault(id(node), set()).update(_fold_graph(body, reads_wanted=reads_wanted))
    return inner


def _remove_folded(graph: GraphProto, folded: list[NodeProto], dead: set[str],
                   types: dict[str, TypeProto], constant: set[str]) -> None:
    """Replace the folded nodes by weights and remove the values in `dead`, in place."""
    weights = [_weight(v, types[v]) for n in folded for v in n.output if v and v not in dead]
    _drop(graph.initializer, lambda t: t.name in dead)
    graph.initializer.extend(weights)
    _drop(graph.sparse_initializer, lambda s: s.values.name in dead)
    _drop(graph.input, lambda v: v.name in dead)  # IR < 4 lists initializers too
    # `_split` stops when no node is foldable: a node folded iff it is with the final constants
    _drop(graph.node, lambda n: _foldable(n, constant, types) or _dead_constant(n, dead))


def _split(nodes: list[NodeProto], constant: set[str], types: dict[str, TypeProto]
           ) -> tuple[list[NodeProto], list[NodeProto]]:
    """(folded nodes in fold order, kept nodes in graph order); `constant` grows as they fold.

    Passes repeat until nothing folds, so a graph whose nodes are not sorted folds the same.
    """
    folded: list[NodeProto] = []
    kept = nodes
    while True:
        still = []
        for node in kept:
            if _foldable(node, constant, types):
                folded.append(node)
                constant.update(v for v in node.output if v)
            else:
                still.append(node)
        if len(still) == len(kept):
            return folded, kept
        kept = still


def _foldable(node: NodeProto, constant: set[str], types: dict[str, TypeProto]) -> bool:
    if node.domain not in DEFAULT_DOMAINS or node.op_type not in FOLDABLE_OPS:
        return False
    if any(True for _ in _bodies(node)):
        return False
    if not all(v in types for v in node.output if v):
        return False  # an output of unknown shape or dtype: GE could not build the Const
    inputs = [v for v in node.input if v]
    if all(v in constant for v in inputs):
        return True
    return node.op_type in SHAPE_OPS and len(inputs) == 1 and _static(types.get(inputs[0]))


def _is_constant_node(node: NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS


def _dead_constant(node: NodeProto, dead: set[str]) -> bool:
    return _is_constant_node(node) and all(v in dead for v in node.output)


def _bodies(node: NodeProto) -> Iterator[GraphProto]:
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == AttributeProto.GRAPHS:
            yield from attr.graphs


def _static_types(graph: GraphProto) -> dict[str, TypeProto]:
    """Value -> tensor type with a known dtype and every dim known; declared types win."""
    types: dict[str, TypeProto] = {}
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.name not in types:
            types[value.name] = value.type
    return {name: t for name, t in types.items() if _static(t)}


def _static(type_proto: TypeProto | None) -> bool:
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return False
    tensor = type_proto.tensor_type
    return (tensor.elem_type != TensorProto.UNDEFINED and tensor.HasField("shape")
            and all(d.HasField("dim_value") for d in tensor.shape.dim))


def _reads(nodes: Iterable[NodeProto], outputs: Iterable[ValueInfoProto],
           inner: Mapping[int, set[str]]) -> set[str]:
    """Every value name read: node inputs, names the nodes' bodies read (`inner`, by node id),
    graph outputs."""
    reads = {v.name for v in outputs}
    for node in nodes:
        reads.update(v for v in node.input if v)
        reads.update(inner.get(id(node), ()))
    return reads


def _weight(name: str, type_proto: TypeProto) -> TensorProto:
    """A data-less initializer: the dims and dtype of a folded value."""
    tensor = type_proto.tensor_type
    return TensorProto(name=name, data_type=tensor.elem_type,
                       dims=[d.dim_value for d in tensor.shape.dim])


def _drop(field: RepeatedCompositeFieldContainer[_M], dropped: Callable[[_M], bool]) -> None:
    """Remove the elements `dropped` picks, the others keeping their order: a stable sort moves
    them to the end without copying messages (a copy of an If node copies its bodies)."""
    count = sum(map(dropped, field))
    field.sort(key=dropped)
    del field[len(field) - count:]
