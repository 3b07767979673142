"""Transformer stacks of any depth, for the benchmark: N pre-norm encoder layers, then a training
step of them (`streamalloc.ir.training.training_step`).

The package has no transformer generator (`ir/synthetic.py` makes layered DAGs without shapes),
so this one lives with the benchmark. A layer is what `examples/graphs/transformer_layers.yaml`
sketches, with tensor shapes (batch 1, fp16) so that the emulator's cost formulas see the FLOPs:
LayerNorm, the Q/K/V projections, scores, softmax, context, output projection, residual Add,
LayerNorm, MLP up / Gelu / down, residual Add. Every weight is a Const the training step turns
into a gradient, an AllReduce and an update.

>>> graph = transformer_stack(2, hidden=64, seq=16)
>>> graph.node_count(), graph.root.nodes[-1].type
(48, 'NetOutput')
>>> step = transformer_training_step(2, hidden=64, seq=16)
>>> step.node_count() > 2 * graph.node_count()
True
"""

from __future__ import annotations

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.tensor import TensorDesc
from streamalloc.ir.training import training_step

_DTYPE = "float16"


class _Layers:
    """Adds one layer's nodes at a time; `x` is the name of the current hidden state."""

    def __init__(self, builder: GraphBuilder, hidden: int, seq: int) -> None:
        self.builder, self.hidden, self.seq = builder, hidden, seq
        self.x = "embed"

    def op(self, name: str, type_: str, inputs: list[str], shape: tuple[int, ...],
           attrs: dict[str, AttrValue] | None = None) -> str:
        self.builder.add_node(name, type_, inputs=[DataInput(i) for i in inputs], attrs=attrs,
                              outputs=[TensorDesc(shape, _DTYPE)])
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        return self.op(name, "Const", [], shape)

    def layer(self, k: int) -> None:
        """Attention block then MLP block, each pre-norm with a residual Add."""
        h, s, p = self.hidden, self.seq, f"layer{k}"
        act = (1, s, h)
        norm = self.op(f"{p}/ln1", "LayerNorm", [self.x, self.weight(f"{p}/ln1/gamma", (h,))], act)
        q, k_, v = (self.op(f"{p}/attn/{n}", "MatMul",
                            [norm, self.weight(f"{p}/attn/w{n}", (h, h))], act) for n in "qkv")
        scores = self.op(f"{p}/attn/scores", "BatchMatMul", [q, k_], (1, s, s),
                         {"adj_x2": AttrValue("bool", True)})
        soft = self.op(f"{p}/attn/softmax", "SoftmaxV2", [scores], (1, s, s))
        ctx = self.op(f"{p}/attn/context", "BatchMatMul", [soft, v], act)
        proj = self.op(f"{p}/attn/out", "MatMul", [ctx, self.weight(f"{p}/attn/wo", (h, h))], act)
        mid = self.op(f"{p}/add1", "Add", [self.x, proj], act)
        norm2 = self.op(f"{p}/ln2", "LayerNorm", [mid, self.weight(f"{p}/ln2/gamma", (h,))], act)
        up = self.op(f"{p}/mlp/up", "MatMul", [norm2, self.weight(f"{p}/mlp/w1", (h, 4 * h))],
                     (1, s, 4 * h))
        gelu = self.op(f"{p}/mlp/act", "Gelu", [up], (1, s, 4 * h))
        down = self.op(f"{p}/mlp/down", "MatMul", [gelu, self.weight(f"{p}/mlp/w2", (4 * h, h))],
                       act)
        self.x = self.op(f"{p}/add2", "Add", [mid, down], act)


def transformer_stack(layers: int, *, hidden: int = 768, seq: int = 128,
                      vocab: int = 30522) -> Graph:
    """An inference graph: token ids, an embedding Gather, `layers` encoder layers, NetOutput."""
    builder = GraphBuilder(f"transformer_{layers}x{hidden}")
    builder.add_node("tokens", "Data", outputs=[TensorDesc((1, seq), "int64")])
    stack = _Layers(builder, hidden, seq)
    table = stack.weight("embed/table", (vocab, hidden))
    builder.add_node("embed", "Gather", inputs=[DataInput(table), DataInput("tokens")],
                     outputs=[TensorDesc((1, seq, hidden), _DTYPE)])
    for k in range(layers):
        stack.layer(k)
    builder.add_node("output", "NetOutput", inputs=[DataInput(stack.x)])
    return builder.build()


def transformer_training_step(layers: int, *, hidden: int = 768, seq: int = 128) -> Graph:
    """One data-parallel training step of `transformer_stack(layers)` (per-gradient AllReduce,
    three AI CPU overflow checks)."""
    return training_step(transformer_stack(layers, hidden=hidden, seq=seq))
