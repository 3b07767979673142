"""Which inputs of an op are written in place ("ref" inputs) and which output returns them.

GE pairs an input with the output of the same IR name; an input whose descriptor has a ref-port
index but no same-named output maps to "output index = number of outputs" (no ref output). A
`FrameworkOp` whose original type is `RefSwitch` maps input 0 to outputs 0 and 1 (spec 16).

Our graphs do not carry IR port names, so they come from, in order: the node's
`_input_name_idx_key` / `_input_name_idx_value` (and `_output_name_idx_*`) attributes, which GE
dumps carry, else the IR names of common ref ops below.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamalloc.memory.graph_edit import NodeDraft

FRAMEWORK_OP = "FrameworkOp"
REF_SWITCH = "RefSwitch"
ORIGINAL_TYPE = "original_type"
REF_PORT_INDEX = "ref_port_index"

_VAR_IN = ("var",)
# op type -> (input names, output names), GE's IR registration of common in-place writers.
IR_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
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
}


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
