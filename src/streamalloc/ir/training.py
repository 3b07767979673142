"""Synthetic training steps: an imported inference model -> one data-parallel training step.

`training_step(graph)` keeps the model as the forward pass and appends what autodiff, data
parallelism and an optimizer add to it, deterministically (same graph and seed, same bytes):

* **forward**: every node of the model as it is; subgraphs (If/While bodies) are kept as they
  are and get no backward. The root NetOutput is rebuilt last under its own name, reading the
  model's outputs, then `loss`, then every `update/<weight>` (a new `NetOutput` when the model
  has none). An explicit `partition:` is dropped (it cannot cover the new nodes); options, the
  engine table, graph attributes and `node_order` are kept.
* **what gets a gradient**: a root node is *varying* when a per-step source (Data, GetNext,
  PlaceHolder, ...) reaches one of its inputs. A varying node whose outputs are not all known to
  be non-float gets `grad/<node>`; integer chains (Shape, NonZero, token ids) do not, and no
  gradient flows back through them. Constant-foldable nodes (AI Core, GE-local or host ops whose
  inputs are all constant, e.g. ConstantOfShape of a Const) are constants like Const/Variable.
* **weights**: the constant inputs of a node with a gradient whose dtype is float (or unknown),
  except batch norms' running mean and variance (slots 3, 4); named after the producer
  (`<producer>`, or `<producer>_<port>` for port > 0).
* **backward**, in reverse G-order, seeded by `loss` (ReduceMean of the model's outputs that
  have gradients). `grad/<n>` reads `n:0`, n's weights, then its output gradients: output k of
  `grad/<c>` for each consumer c that reads n on its k-th varying input (link order), and `loss`
  when n is a model output. It has one output per varying input of n, with that input's tensor
  description, so it is costed like a forward op on the same tensors. `wgrad/<n>` (n with
  weights) reads `n:0`, n's varying inputs, the same output gradients (matmuls: the inputs
  first, with `transpose_x1`), and has one output per weight with the weight's description. So
  the emulator's conv and matmul formulas count the FLOPs of the real backprop. Types:
  Conv2DBackpropInput/Conv2DBackpropFilter for convolutions, the matmul type for matmuls,
  BNTrainingReduceGrad/BNTrainingUpdateGrad for batch norms, Reshape for GE-local views, else
  `<Type>Grad`/`<Type>WeightGrad` (unmapped types: AI Core).
* **communication**: once all gradients of a weight exist, `allreduce/<weight>` (HcomAllReduce,
  `fusion` 1 so that GE's AllReduce-parallel pass applies under `ge.hcomParallel` 1) reads them
  (several for a shared weight). `allreduce="bucketed"`: `allreduce/bucket_<k>` reduces
  `bucket` weights at a time in the order they become ready, one output per weight.
* **optimizer**: `update/<weight>` (ApplyGradientDescent: weight, `optimizer/learning_rate`,
  reduced gradient) right after the AllReduce.
* **AI CPU**: `aicpu_ops` overflow checks `aicpu/<n>` (NonZero, Unique, Where in turn: types the
  engine table runs on DNN_VM_AICPU_ASCEND) right after the `grad/<n>` chosen with numpy's
  generator from `seed` among the grad nodes whose gradient flows on; they pass its outputs
  through and its consumers read the check instead. Fewer when there are fewer such nodes.

The node list is forward, `loss`, backward in order, NetOutput; G-order follows the model's
`node_order` (an imported model is sorted with GE's depth-first sort). A new name that clashes
with a model node gets a `_1`, `_2`, ... suffix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from streamalloc.errors import GraphLoadError, UsageError
from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import ComputeGraph, DataInput, Graph, Node
from streamalloc.ir.tensor import TensorDesc

ALLREDUCE_MODES = ("per-gradient", "bucketed")
DEFAULT_BUCKET = 16
AICPU_ENGINE = "DNN_VM_AICPU_ASCEND"
AICPU_TYPES = ("NonZero", "Unique", "Where")
UPDATE_PREFIX = "update/"  # a weight's optimizer node: a step has one per weight

_CONST_TYPES = frozenset({"Const", "Constant", "Variable", "VariableV2", "ConstPlaceHolder",
                          "FileConstant"})
_FOLDING_ENGINES = frozenset({"AIcoreEngine", "DNN_VM_GE_LOCAL", "DNN_VM_HOST_CPU"})
_SINK_TYPES = frozenset({"NetOutput", "End"})
_CONV_TYPES = frozenset({"Conv", "Conv2D", "Conv3D", "DepthwiseConv2D", "ConvTranspose",
                         "Conv2DTranspose"})
_MATMUL_TYPES = {"MatMul": "MatMul", "MatMulV2": "MatMulV2", "MatMulV3": "MatMulV3",
                 "BatchMatMul": "BatchMatMul", "BatchMatMulV2": "BatchMatMulV2",
                 "Gemm": "MatMul", "FullyConnection": "MatMul"}
_BATCH_NORM_TYPES = frozenset({"BatchNormalization", "BatchNorm", "FusedBatchNorm",
                               "FusedBatchNormV3"})
_RUNNING_STATS = (3, 4)  # batch norm inputs x, scale, offset, mean, variance
_ALLREDUCE_ATTRS = {"fusion": AttrValue("int", 1), "reduction": AttrValue("string", "sum"),
                    "group": AttrValue("string", "hccl_world_group")}


def grad_types(node: Node) -> tuple[str, str]:
    """The op types of a forward node's gradient and weight-gradient nodes."""
    if node.type in _CONV_TYPES:
        return "Conv2DBackpropInput", "Conv2DBackpropFilter"
    if node.type in _MATMUL_TYPES:
        return _MATMUL_TYPES[node.type], _MATMUL_TYPES[node.type]
    if node.type in _BATCH_NORM_TYPES:
        return "BNTrainingReduceGrad", "BNTrainingUpdateGrad"
    if node.engine == "DNN_VM_GE_LOCAL" and not node.subgraphs:
        return "Reshape", "Reshape"  # the gradient of a view is a view
    return f"{node.type}Grad", f"{node.type}WeightGrad"


def _is_float(desc: TensorDesc) -> bool:
    return desc.dtype is None or "float" in desc.dtype


@dataclass
class _Forward:
    """What the backward pass needs to know about the root graph."""

    compute: ComputeGraph
    constant: set[str] = field(default_factory=set)
    varying: set[str] = field(default_factory=set)
    active: list[Node] = field(default_factory=list)  # nodes with a gradient, G-order
    grad_slots: dict[str, tuple[int, ...]] = field(default_factory=dict)  # varying inputs
    varying_in: dict[str, tuple[DataInput, ...]] = field(default_factory=dict)
    weights: dict[str, tuple[DataInput, ...]] = field(default_factory=dict)

    def desc(self, ref: DataInput) -> TensorDesc:
        outputs = self.compute.node(ref.src).outputs
        return outputs[ref.port] if ref.port < len(outputs) else TensorDesc()

    def visit(self, node: Node) -> None:
        refs = [(slot, ref) for slot, ref in enumerate(node.inputs) if ref is not None]
        if node.type in _SINK_TYPES:
            return
        if not refs:
            (self.varying if _per_step(node) else self.constant).add(node.name)
            return
        if all(r.src in self.constant for _, r in refs) and node.engine in _FOLDING_ENGINES \
                and not node.subgraphs:
            self.constant.add(node.name)
            return
        grads = [(slot, r) for slot, r in refs if r.src in self.varying]
        if not grads:
            return
        self.varying.add(node.name)
        if not any(_is_float(d) for d in node.outputs or (TensorDesc(),)):
            return  # Shape, NonZero, integer chains: no gradient flows back through them
        self.active.append(node)
        self.grad_slots[node.name] = tuple(slot for slot, _ in grads)
        self.varying_in[node.name] = tuple(r for _, r in grads)
        skip = _RUNNING_STATS if node.type in _BATCH_NORM_TYPES else ()
        self.weights[node.name] = tuple(
            r for slot, r in refs if r.src in self.constant and slot not in skip
            and _is_float(self.desc(r)))


def per_step_inputs(graph: Graph) -> dict[str, int]:
    """The root's inputs that take a new value every step, counted by type: a partitioned
    subgraph of a GE dump receives its weights as PlaceHolders, so its step has no weights."""
    return dict(sorted(Counter(n.type for n in graph.root.nodes if _per_step(n)).items()))


def _per_step(node: Node) -> bool:
    """An input of the model (no data inputs) whose value is new every step: Data, GetNext,
    PlaceHolder...; Const and Variable are constants."""
    return all(ref is None for ref in node.inputs) and node.type not in _CONST_TYPES \
        and node.type not in _SINK_TYPES


def _analyse(graph: Graph) -> _Forward:
    forward = _Forward(graph.root)
    for node in graph.root.nodes:  # G-order: producers first
        forward.visit(node)
    return forward


class _Step:
    """The builder of the training step and the names it has handed out."""

    def __init__(self, graph: Graph, forward: _Forward, allreduce: str, bucket: int) -> None:
        self.graph, self.forward = graph, forward
        self.allreduce, self.bucket = allreduce, bucket
        self.builder = GraphBuilder(f"{graph.name}_train", source=graph.source,
                                    options=graph.options, engines=graph.engines,
                                    dynamic_shape=graph.dynamic_shape)
        self.used = {n.name for n in graph.all_nodes()}
        self.grad_out: dict[str, str] = {}  # forward node -> node whose outputs are its dX
        self.contributions: dict[DataInput, list[DataInput]] = {}
        self.pending: list[DataInput] = []  # weights waiting for a bucket
        self.updates: list[str] = []
        self.loss = self.learning_rate = ""

    def name(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def add(self, base: str, type: str, inputs: Sequence[DataInput | None],
            outputs: Sequence[TensorDesc], attrs: dict[str, AttrValue] | None = None) -> str:
        name = self.name(base)
        self.builder.add_node(name, type, inputs=inputs, outputs=outputs, attrs=attrs)
        return name

    def copy(self, node: Node, inputs: Sequence[DataInput | None] | None = None) -> None:
        root = node.graph == self.graph.root.name
        self.builder.add_node(
            node.name, node.type, graph=None if root else node.graph, engine=node.engine,
            inputs=node.inputs if inputs is None else inputs, control_inputs=node.control_inputs,
            attrs=node.attrs, outputs=node.outputs, input_descs=node.input_descs,
            subgraphs=node.subgraphs, stream_id=node.stream_id, task_count=node.task_count,
            cost_us=node.cost_us)

    def backward(self, node: Node, seeds: set[str], checks: dict[str, str]) -> None:
        """grad/<node>, its AI CPU check, wgrad/<node>; AllReduce what is complete."""
        fwd = self.forward
        dy = [DataInput(self.grad_out[c.node], fwd.grad_slots[c.node].index(c.slot))
              for c in fwd.compute.consumers.get(node.name, ())
              if c.slot in fwd.grad_slots.get(c.node, ())]
        dy += [DataInput(self.loss)] if node.name in seeds else []
        out, weights, varying = DataInput(node.name), fwd.weights[node.name], \
            fwd.varying_in[node.name]
        dx = [fwd.desc(r) for r in varying]
        grad_type, wgrad_type = grad_types(node)
        grad = self.add(f"grad/{node.name}", grad_type, [out, *weights, *dy], dx)
        self.grad_out[node.name] = grad
        if node.name in checks:
            self.grad_out[node.name] = self.add(
                f"aicpu/{node.name}", checks[node.name],
                [DataInput(grad, k) for k in range(len(dx))], dx)
        if not weights:
            return
        operands, attrs = [out, *varying], None
        if node.type in _MATMUL_TYPES:  # x^T @ dy: the matmul cost formula then counts M*K*N
            operands, attrs = [*varying, out], {"transpose_x1": AttrValue("bool", True)}
        wgrad = self.add(f"wgrad/{node.name}", wgrad_type, [*operands, *dy],
                         [fwd.desc(w) for w in weights], attrs)
        for k, weight in enumerate(weights):
            self.contributions.setdefault(weight, []).append(DataInput(wgrad, k))

    def reduce(self, weights: Sequence[DataInput], last: bool = False) -> None:
        """AllReduce and update the weights whose gradients are complete."""
        if self.allreduce == "per-gradient":
            for weight in weights:
                name = self.add(f"allreduce/{_weight_name(weight)}", "HcomAllReduce",
                                self.contributions[weight], [self.forward.desc(weight)],
                                dict(_ALLREDUCE_ATTRS))
                self.update(weight, DataInput(name))
            return
        self.pending += weights
        while len(self.pending) >= self.bucket or (last and self.pending):
            batch, self.pending = self.pending[:self.bucket], self.pending[self.bucket:]
            name = self.add(f"allreduce/bucket_{len(self.updates) // self.bucket}",
                            "HcomAllReduce", [g for w in batch for g in self.contributions[w]],
                            [self.forward.desc(w) for w in batch], dict(_ALLREDUCE_ATTRS))
            for k, weight in enumerate(batch):
                self.update(weight, DataInput(name, k))

    def update(self, weight: DataInput, reduced: DataInput) -> None:
        self.updates.append(self.add(
            f"{UPDATE_PREFIX}{_weight_name(weight)}", "ApplyGradientDescent",
            [weight, DataInput(self.learning_rate), reduced], [self.forward.desc(weight)]))


def _weight_name(ref: DataInput) -> str:
    return ref.src if ref.port == 0 else f"{ref.src}_{ref.port}"


def _pick_checks(forward: _Forward, count: int, seed: int, graph: Graph) -> dict[str, str]:
    """Forward node -> AI CPU op type, for the grad nodes that get an overflow check."""
    candidates = [n.name for n in reversed(forward.active)
                  if any(r.src in forward.grad_slots for r in forward.varying_in[n.name])]
    count = min(count, len(candidates))
    picks = sorted(int(i) for i in np.random.default_rng(seed).choice(
        len(candidates), size=count, replace=False)) if count else []
    types = [t for t in AICPU_TYPES if graph.engines.engine_for(t) == AICPU_ENGINE] or \
        sorted(t for t, e in graph.engines.op_engines.items() if e == AICPU_ENGINE)
    if count and not types:
        raise GraphLoadError(f"{graph.source or graph.name}: the engine table maps no op type "
                             f"to {AICPU_ENGINE}; use --aicpu-ops 0")
    return {candidates[i]: types[k % len(types)] for k, i in enumerate(picks)}


def training_step(graph: Graph, *, allreduce: str = "per-gradient", bucket: int = DEFAULT_BUCKET,
                  aicpu_ops: int = 3, seed: int = 0) -> Graph:
    """One training step of an inference model (see the module docstring for the design)."""
    if allreduce not in ALLREDUCE_MODES:
        raise UsageError(f"allreduce {allreduce!r}: expected one of {', '.join(ALLREDUCE_MODES)}")
    if bucket < 1:
        raise UsageError(f"bucket {bucket}: a bucket holds at least 1 weight gradient")
    if aicpu_ops < 0:
        raise UsageError(f"aicpu_ops {aicpu_ops}: expected 0 or more AI CPU ops")
    forward = _analyse(graph)
    root = graph.root
    net_output = next((n for n in root.nodes if n.type == "NetOutput"), None)
    outputs = [r for n in root.nodes if n.type in _SINK_TYPES for r in n.data_sources()] or \
        [DataInput(n.name) for n in forward.active if not root.consumers.get(n.name)]
    losses = list(dict.fromkeys(r for r in outputs if r.src in forward.grad_slots))
    if not losses:
        raise GraphLoadError(f"{graph.source or graph.name}: no output of graph {graph.name!r} "
                             "depends on an input through float tensors: nothing to train")
    step = _Step(graph, forward, allreduce, bucket)
    _copy_forward(step, net_output)
    step.loss = step.add("loss", "ReduceMean", losses,
                         [TensorDesc((), forward.desc(losses[0]).dtype)])
    if any(forward.weights.values()):
        step.learning_rate = step.add("optimizer/learning_rate", "Const", [],
                                      [TensorDesc((), "float32")])
    first_use: dict[DataInput, str] = {}
    for node in forward.active:
        for weight in forward.weights[node.name]:
            first_use.setdefault(weight, node.name)
    checks = _pick_checks(forward, aicpu_ops, seed, graph)
    seeds = {r.src for r in losses}
    for node in reversed(forward.active):
        step.backward(node, seeds, checks)
        step.reduce([w for w in dict.fromkeys(forward.weights[node.name])
                     if first_use[w] == node.name])
    step.reduce([], last=True)
    final = [*(net_output.inputs if net_output else ()), DataInput(step.loss),
             *(DataInput(u) for u in step.updates)]
    if net_output:
        step.copy(net_output, final)
    else:
        step.add("NetOutput", "NetOutput", final, [])
    return step.builder.build(order=graph.node_order)


def _copy_forward(step: _Step, net_output: Node | None) -> None:
    """Every node of the model but the root NetOutput, in node-list order; subgraphs as they are."""
    graph = step.graph
    step.builder.set_graph_attrs(graph.root.attrs)
    for name, sub in graph.subgraphs.items():
        step.builder.add_subgraph(name, attrs=sub.attrs)
    for compute in graph.graphs():
        for name in compute.list_order:
            if compute.node(name) is not net_output:
                step.copy(compute.node(name))
