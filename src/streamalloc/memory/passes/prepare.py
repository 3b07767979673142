"""VariablePrepareOpPass: a VarRef after the last in-place writer of each variable (spec 16).

For each var-like node (Variable, VariableV2, RefData) of the root graph and each consumer that
writes it (a ref input), the chain of writers is walked depth-first (a writer's ref output feeding
another ref input continues it). The last writer gets a VarRef `<var>_TO_<writer>_REF_<k>` after
its ref output k, or, when it has no ref output, a `RefIdentity` is inserted on the ref input and
feeds the VarRef, with a control edge writer -> VarRef. A writer inside the chain that has
control successors gets a VarRef too. A VarRef has the variable's op type and output descriptor,
`ref_var_src_var_name = <var>`, the writer's stream label, and a control edge to every existing
successor of the writer (so it runs first); a Merge / RefMerge successor gets an
`Identity_<writer>_TO_<succ>_<in>` on that edge instead, and the control edge goes to it.

Which inputs are written in place ("ref" inputs) and which output returns them: GE pairs an input
with the output of the same IR name; an input whose descriptor has a ref-port index but no
same-named output maps to "output index = number of outputs" (no ref output). A `FrameworkOp`
whose original type is `RefSwitch` maps input 0 to outputs 0 and 1. Our graphs do not carry IR
port names, so they come from, in order: the node's `_input_name_idx_key` /
`_input_name_idx_value` (and `_output_name_idx_*`) attributes, which GE dumps carry, else the IR
names of common ref ops (`IR_NAMES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.memory.codes import REF_VAR_SRC, Status, VarGraphError, fail
from streamalloc.memory.passes.base import STREAM_LABEL, VAR_LIKE, PassResult, VarPassContext
from streamalloc.memory.passes.graph_edit import GraphDraft, NodeDraft

MERGE_TYPES = frozenset({"Merge", "RefMerge"})
FRAMEWORK_OP = "FrameworkOp"
REF_SWITCH = "RefSwitch"
ORIGINAL_TYPE = "original_type"
REF_PORT_INDEX = "ref_port_index"

_VAR_IN = ("var",)
# op type -> (input names, output names), GE's IR registration of common in-place writers.
IR_NAMES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MappingProxyType({
    "Assign": (("ref", "value"), ("ref",)),
    "AssignAdd": (("ref", "value"), ("ref",)),
    "AssignSub": (("ref", "value"), ("ref",)),
    "ScatterUpdate": (("var", "indices", "updates"), _VAR_IN),
    "ScatterAdd": (("var", "indices", "updates"), _VAR_IN),
    "ScatterSub": (("var", "indices", "updates"), _VAR_IN),
    "ScatterNdUpdate": (("var", "indices", "updates"), _VAR_IN),
    "ApplyGradientDescent": (("var", "alpha", "delta"), _VAR_IN),
    "ApplyMomentum": (("var", "accum", "lr", "grad", "momentum"), _VAR_IN),
    "ApplyAdam": (("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                   "epsilon", "grad"), _VAR_IN),
    "HcomBroadcast": (("x",), ("y",)),
})


def _named(node: NodeDraft, side: str) -> dict[str, int] | None:
    keys, values = node.attr(f"_{side}_name_idx_key"), node.attr(f"_{side}_name_idx_value")
    if isinstance(keys, tuple) and isinstance(values, tuple) and len(keys) == len(values):
        return {str(k): int(v) for k, v in zip(keys, values, strict=True)}
    return None


def port_names(node: NodeDraft) -> tuple[dict[str, int], dict[str, int]]:
    """(input name -> index, output name -> index) of a node."""
    ins, outs = IR_NAMES.get(node.type, ((), ()))
    inputs = _named(node, "input") or {n: i for i, n in enumerate(ins)}
    outputs = _named(node, "output") or {n: i for i, n in enumerate(outs)}
    return inputs, outputs


def output_count(node: NodeDraft) -> int:
    """The node's number of outputs: declared descriptions, else its IR output names."""
    return len(node.outputs) or len(port_names(node)[1])


def ref_pairs(node: NodeDraft) -> dict[int, list[int]]:
    """Ref input index -> output indexes for one node (empty when it writes nothing)."""
    inputs, outputs = port_names(node)
    pairs: dict[int, list[int]] = {}
    for name, index in sorted(inputs.items(), key=lambda kv: kv[1]):
        if name in outputs:
            pairs[index] = [outputs[name]]
        elif index < len(node.input_descs) and node.input_descs[index].attrs.get(REF_PORT_INDEX):
            pairs[index] = [output_count(node)]  # a ref input without a ref output
    return pairs


class RefOpTable:
    """Per op type, its ref pairing; a type's table is fixed by its first node that has one."""

    def __init__(self, nodes: Iterable[NodeDraft]) -> None:
        self.pairs: dict[str, dict[int, list[int]]] = {}
        for node in nodes:
            if node.type not in self.pairs:
                found = ref_pairs(node)
                if found:
                    self.pairs[node.type] = found

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def writable_outputs(self, node: NodeDraft, input_index: int) -> list[int]:
        """The outputs returning input `input_index` when the node writes it, else []."""
        if node.type == FRAMEWORK_OP:
            if node.attr(ORIGINAL_TYPE) == REF_SWITCH and input_index == 0:
                return [0, 1]
            return []
        return list(self.pairs.get(node.type, {}).get(input_index, []))


@dataclass(frozen=True)
class VariablePrepareOpPass:
    """Insert VarRefs (and RefIdentity / Identity helpers) for in-place writers of variables."""

    name: ClassVar[str] = "variable-prepare-op"

    def apply(self, graph: Graph, ctx: VarPassContext | None = None) -> PassResult:
        """The graph with VarRefs; unchanged (the same object) when nothing writes a variable."""
        draft = GraphDraft(graph)
        table = RefOpTable(draft.direct())
        if not table:
            return PassResult(graph, False)
        work = _Prepare(draft, table)
        for var in [n for n in draft.direct() if n.type in VAR_LIKE]:
            for consumer, slot, _ in draft.consumers(var.name):
                for out in table.writable_outputs(consumer, slot):
                    work.deal_writable(consumer, slot, out, var)
        return PassResult(draft.build(), True) if work.changed else PassResult(graph, False)


class _Prepare:
    def __init__(self, draft: GraphDraft, table: RefOpTable) -> None:
        self.draft = draft
        self.table = table
        self.changed = False

    def outputs(self, node: NodeDraft) -> int:
        ports = [port for _, _, port in self.draft.consumers(node.name)]
        return max(output_count(node), 1 + max(ports, default=-1))

    def deal_writable(self, writer: NodeDraft, in_index: int, out_index: int,
                      var: NodeDraft) -> None:
        """GE's DealWritableNode: walk the writer chain with a stack."""
        stack = [(writer, in_index, out_index)]
        while stack:
            cur, cur_in, cur_out = stack.pop()
            size = len(stack)
            self._push_ref_peers(cur, cur_out, stack)
            if len(stack) > size:
                if self.draft.control_successors(cur.name):
                    self.add_variable_ref(cur, var, cur_out)
                continue
            if cur.type == FRAMEWORK_OP:
                continue  # no VarRef for framework ops
            if cur_out < self.outputs(cur):
                self.add_variable_ref(cur, var, cur_out)
            else:
                self.insert_variable_ref(cur, cur_in, var)

    def _push_ref_peers(self, node: NodeDraft, out_index: int,
                        stack: list[tuple[NodeDraft, int, int]]) -> None:
        count = self.outputs(node)
        if out_index < 0 or out_index > count:
            fail(Status.PARAM_INVALID, f"node {node.name!r}: ref output {out_index} is outside "
                                       f"its {count} outputs", VarGraphError)
        if out_index == count:
            return
        for peer, slot, _ in self.draft.consumers(node.name, out_index):
            stack.extend((peer, slot, out) for out in self.table.writable_outputs(peer, slot))

    def _var_ref(self, name: str, var: NodeDraft, writer: NodeDraft) -> NodeDraft:
        desc = var.output(0)
        ref = NodeDraft(name, var.type, writer.graph, outputs=[desc], input_descs=[desc],
                        attrs={REF_VAR_SRC: AttrValue("string", var.name)})
        label = writer.attrs.get(STREAM_LABEL)
        if label is not None:
            ref.attrs[STREAM_LABEL] = label
        return ref

    def add_variable_ref(self, writer: NodeDraft, var: NodeDraft, index: int) -> None:
        """A VarRef after the writer's output `index` (once per output)."""
        for peer, _, _ in self.draft.consumers(writer.name, index):
            if peer.attr(REF_VAR_SRC) == var.name and peer.type == var.type:
                return
        ref = self._var_ref(self.draft.unique_name(f"{var.name}_TO_{writer.name}_REF_{index}"),
                            var, writer)
        self.draft.add(ref, after=writer.name)
        self._control_to_successors(writer, ref)  # before the VarRef itself is a consumer
        ref.inputs = [DataInput(writer.name, index)]
        self.changed = True

    def _control_to_successors(self, writer: NodeDraft, ref: NodeDraft) -> None:
        for peer, slot, port in self.draft.consumers(writer.name):
            if peer.name == ref.name:
                continue
            if peer.type in MERGE_TYPES:
                self._identity_before(writer, peer, slot, port, ref)
            else:
                self.draft.add_control(ref.name, peer.name)
        for succ in self.draft.control_successors(writer.name):
            self.draft.add_control(ref.name, succ.name)

    def _identity_before(self, writer: NodeDraft, merge: NodeDraft, slot: int, port: int,
                         ref: NodeDraft) -> None:
        desc = writer.output(port)
        name = self.draft.unique_name(f"Identity_{writer.name}_TO_{merge.name}_{slot}")
        identity = NodeDraft(name, "Identity", merge.graph, inputs=[DataInput(writer.name, port)],
                             outputs=[desc], input_descs=[desc])
        self.draft.add(identity, before=merge.name)
        merge.inputs[slot] = DataInput(name, 0)
        self.draft.add_control(ref.name, name)

    def insert_variable_ref(self, writer: NodeDraft, in_index: int, var: NodeDraft) -> None:
        """A RefIdentity on the writer's ref input, feeding a VarRef; control writer -> VarRef."""
        src = self.draft.producer(writer, in_index)
        if src is None:
            return
        name = f"RefIdentity_{src.src}_{src.port}_TO_{writer.name}_{in_index}"
        if name in self.draft.nodes:
            return
        desc = self.draft.input_desc(writer, in_index)
        identity = NodeDraft(name, "RefIdentity", writer.graph, inputs=[src], outputs=[desc],
                             input_descs=[desc])
        self.draft.add(identity, before=writer.name)
        writer.inputs[in_index] = DataInput(name, 0)
        ref = self._var_ref(self.draft.unique_name(f"{var.name}_TO_{writer.name}_REF_{in_index}"),
                            var, writer)
        ref.inputs = [DataInput(name, 0)]
        self.draft.add(ref, after=writer.name)
        self.draft.add_control(writer.name, ref.name)
        self.changed = True
