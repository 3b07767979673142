"""VarIsInitializedOpPass: fold `VarIsInitializedOp` / `IsVariableInitialized` to a Const (17).

In topological order each node inherits the union of its data and control predecessors' sets of
"variables initialized upstream"; an `Assign` adds the op feeding its input 0. A query node must
have exactly one data input, a `Variable`; it is initialized when the session's manager knows the
variable's name or the variable is in the node's set. The node becomes a `Const` of the same name
whose one-byte weight holds the answer, with the original output description; the variable gets a
control edge to it and the node's other edges stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.graph import ComputeGraph, Graph, Node
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import Status, VarGraphError, fail
from streamalloc.memory.passes.base import PassResult, VarPassContext, require_context
from streamalloc.memory.passes.graph_edit import GraphDraft

QUERY_TYPES = frozenset({"VarIsInitializedOp", "IsVariableInitialized"})
ASSIGN = "Assign"


@dataclass(frozen=True)
class VarIsInitializedOpPass:
    """Replace variable-initialized queries by boolean constants."""

    name: ClassVar[str] = "var-is-initialized-op"

    def apply(self, graph: Graph, ctx: VarPassContext | None = None) -> PassResult:
        """The folded graph (the input itself when it has no query nodes)."""
        ctx = require_context(ctx, self.name)
        answers: dict[str, tuple[str, bool]] = {}
        for compute in graph.graphs():
            answers.update(_answers(compute, ctx))
        if not answers:
            return PassResult(graph, False)
        draft = GraphDraft(graph)
        for name, (var, inited) in answers.items():
            node = draft.nodes[name]
            desc = node.output(0) if node.outputs else TensorDesc((), "bool")
            node.type, node.engine, node.inputs, node.input_descs = "Const", None, [], []
            node.attrs = {"value": AttrValue("tensor", TensorValue(desc, bytes([inited])))}
            node.outputs = [desc]
            node.control_inputs = [var, *(c for c in node.control_inputs if c != var)]
        return PassResult(draft.build(), True)


def _answers(compute: ComputeGraph, ctx: VarPassContext) -> dict[str, tuple[str, bool]]:
    """Query node -> (its variable, initialized?) for one graph, in topological order."""
    inherited: dict[str, frozenset[str]] = {}
    answers = {}
    for node in compute.nodes:
        preds = [i.src for i in node.data_sources()] + list(node.control_inputs)
        seen = frozenset().union(*(inherited.get(p, frozenset()) for p in preds))
        if node.type == ASSIGN:
            seen = seen | {_assigned(node)}
        inherited[node.name] = seen
        if node.type in QUERY_TYPES:
            var = _queried(compute, node)
            answers[node.name] = (var, ctx.manager.is_var_exist(var) or var in seen)
    return answers


def _assigned(node: Node) -> str:
    source = node.inputs[0] if node.inputs else None
    if source is None:
        fail(Status.PARAM_INVALID, f"Assign {node.name!r} has no input 0", VarGraphError)
    return source.src


def _queried(compute: ComputeGraph, node: Node) -> str:
    sources = list(node.data_sources())
    if len(sources) != 1 or compute.node(sources[0].src).type != "Variable":
        fail(Status.FAILED, f"{node.type} {node.name!r} needs exactly one data input, a "
                            f"Variable; it has {[s.src for s in sources]}", VarGraphError)
    return sources[0].src
