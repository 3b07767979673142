"""VariableOpPass (variable acceleration): store variables in the format their readers want.

Spec 15. When every reader of a variable is the same supported trans op (same output format,
dtype and dims), the trans ops are removed and the variable takes their output format; the
inverse trans op in front of each VarRef (the write-back) is removed too, provided it really is
the inverse (CheckVariableRefLegally). Layer after layer, until the readers differ. The steps
form the variable's transformation road, stored in the manager with the changed graph id; each
variable may change format once per session (RebuildStateCtrl). Disabled by option
`ge.exec.variable_acc` = "False" or `ge.AllowMultiGraphParallelCompile` = "1"; skipped for
sessions with a batch map. Only the root graph is processed (the pass skips subgraphs).

A trans step is supported when its output shape is known and it is a Reshape, ReFormat,
SqueezeV2 or UnsqueezeV2, or a TransData / TransposeD whose format conversion GE's format
transfer library implements, or a Cast whose dtype conversion GE's data-type transfer library
implements. The spec does not list those libraries; the pairs below are GE's registered
transfers as we reconstructed them from its `formats/format_transfers` sources (see README).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from msgspec.structs import replace

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory.codes import (
    REF_VAR_SRC,
    Status,
    VarGraphError,
    VarManagerError,
    dtype_code,
    fail,
    format_code,
)
from streamalloc.memory.desc import VarDesc
from streamalloc.memory.desc_convert import desc_from_tensor
from streamalloc.memory.passes.base import (
    VARIABLE_LIKE,
    PassResult,
    VarPassContext,
    require_context,
)
from streamalloc.memory.passes.graph_edit import GraphDraft, NodeDraft
from streamalloc.memory.tables import RENEW_TYPES, TransStep, road_renews_desc

VARIABLE_ACC = "ge.exec.variable_acc"
PARALLEL_COMPILE = "ge.AllowMultiGraphParallelCompile"

# CheckSameAndTransOp: every consumer of the variable must be one of these.
TRANS_OP_TYPES = frozenset({
    "TransData", "Transpose", "TransposeD", "Reshape", "ReFormat", "Cast", "Squeeze",
    "SqueezeV2", "UnsqueezeV2", "ExpandDims", "SqueezeV3", "UnsqueezeV3",
})
ALWAYS_SUPPORTED = RENEW_TYPES  # Reshape, ReFormat, SqueezeV2, UnsqueezeV2

_TRANSPOSE = ("NCHW", "NHWC", "HWCN", "CHWN")
_FORMAT_PAIRS = (
    ("NCHW", "NC1HWC0"), ("NHWC", "NC1HWC0"), ("NCHW", "FRACTAL_Z"), ("NHWC", "FRACTAL_Z"),
    ("HWCN", "FRACTAL_Z"), ("ND", "FRACTAL_Z"), ("ND", "FRACTAL_NZ"), ("NCHW", "FRACTAL_NZ"),
    ("NHWC", "FRACTAL_NZ"), ("ND", "FRACTAL_ZZ"), ("NCHW", "FRACTAL_ZZ"), ("NHWC", "FRACTAL_ZZ"),
    ("NCDHW", "NDC1HWC0"), ("NDHWC", "NDC1HWC0"), ("NCDHW", "FRACTAL_Z_3D"),
    ("NDHWC", "FRACTAL_Z_3D"), ("DHWCN", "FRACTAL_Z_3D"),
)
FORMAT_TRANSFERS = frozenset(
    {(format_code(a), format_code(b)) for a, b in _FORMAT_PAIRS}
    | {(format_code(b), format_code(a)) for a, b in _FORMAT_PAIRS}
    | {(format_code("HWCN"), format_code("C1HWNCoC0"))}
    | {(format_code(a), format_code(b)) for a in _TRANSPOSE for b in _TRANSPOSE if a != b})

_CASTS = (
    ("float32", "float16"), ("float16", "float32"), ("float32", "int32"), ("int32", "float32"),
    ("float16", "int32"), ("int32", "float16"), ("int32", "uint8"), ("int32", "int8"),
    ("uint8", "float32"), ("uint8", "int32"), ("uint8", "float16"), ("bool", "int32"),
    ("bool", "float32"), ("bool", "float16"), ("int64", "int32"), ("int32", "int64"),
)
DTYPE_TRANSFERS = frozenset((dtype_code(a), dtype_code(b)) for a, b in _CASTS)


def signature(desc: TensorDesc) -> str:
    """GE's "<format>-<dtype>-<d0>-<d1>-...-" string of a trans op's output 0."""
    dims = "".join(f"{d}-" for d in desc.shape or ())
    return f"{format_code(desc.format)}-{dtype_code(desc.dtype)}-{dims}"


def shape_known(desc: TensorDesc) -> bool:
    """A static output shape (no unknown rank, no -1 dims)."""
    return desc.shape is not None and all(d >= 0 for d in desc.shape)


def is_supported(step: TransStep) -> bool:
    """Whether variable acceleration may fold this step (its output shape is checked apart)."""
    if step.node_type in ALWAYS_SUPPORTED:
        return True
    if step.node_type in ("TransData", "TransposeD"):
        return (step.input.format, step.output.format) in FORMAT_TRANSFERS
    if step.node_type == "Cast":
        return (step.input.dtype, step.output.dtype) in DTYPE_TRANSFERS
    return False


def enabled(graph: Graph) -> bool:
    """Whether the options allow variable acceleration."""
    return graph.option(VARIABLE_ACC) != "False" and graph.option(PARALLEL_COMPILE) != "1"


def _vdesc(desc: TensorDesc, where: str) -> VarDesc:
    return desc_from_tensor(desc, where)


def _same(a: TensorDesc, b: TensorDesc) -> bool:
    return signature(a) == signature(b)


@dataclass
class _Group:
    name: str
    variables: list[NodeDraft]
    refs: list[NodeDraft]


@dataclass(frozen=True)
class VariableOpPass:
    """Fold format conversions into variables (see the module docstring)."""

    name: ClassVar[str] = "variable-op"

    def apply(self, graph: Graph, ctx: VarPassContext | None = None) -> PassResult:
        """The accelerated graph; roads, changed ids and change counts go to `ctx`."""
        ctx = require_context(ctx, self.name)
        if not enabled(graph) or ctx.manager.has_shared_var_mem_between_batch():
            return PassResult(graph, False)
        draft = GraphDraft(graph)
        _renew(draft, ctx)
        changed = False
        for group in _groups(draft):
            if not ctx.rebuild.is_var_permit_to_change_formats(group.name):
                continue
            road, last = _fuse(draft, group)
            if road and last is not None:
                _commit(group, road, last, ctx)
                changed = True
        return PassResult(draft.build(), True) if changed else PassResult(graph, False)


def _renew(draft: GraphDraft, ctx: VarPassContext) -> None:
    """Renew the current descriptor of every known variable from its node (spec 15 step 1)."""
    manager = ctx.manager
    for node in draft.direct():
        if node.type not in VARIABLE_LIKE or not manager.is_var_exist(node.name):
            continue
        desc = _vdesc(node.output(0), f"variable {node.name!r} output 0")
        try:
            manager.renew_cur_var_desc(node.name, desc)
        except VarManagerError as exc:
            fail(exc.status, f"variable {node.name!r}: {exc.detail}", VarGraphError)
        manager.record_staged_var_desc(ctx.graph_id, node.name, desc)


def _groups(draft: GraphDraft) -> list[_Group]:
    """Variables by name with the VarRefs naming them, in name order (GE: by object address)."""
    groups: dict[str, _Group] = {}
    for node in draft.direct():
        if node.type not in VARIABLE_LIKE:
            continue
        src = node.attr(REF_VAR_SRC)
        key = src if isinstance(src, str) and src else node.name
        group = groups.setdefault(key, _Group(key, [], []))
        (group.refs if key != node.name else group.variables).append(node)
    return [groups[k] for k in sorted(groups) if groups[k].variables]


def _fuse(draft: GraphDraft, group: _Group) -> tuple[list[TransStep], TensorDesc | None]:
    """GE's FusionIfNeed: the road, and the last trans output (the variable's new output)."""
    road: list[TransStep] = []
    last: TensorDesc | None = None
    while True:
        found = _same_trans_op(draft, group.variables)
        if found is None:
            break
        step, out = found
        if not _refs_legal(draft, group):
            road.clear()  # QUIRK: GE drops the whole road, even layers already fused
            return road, None
        var_out = group.variables[0].output(0)
        if not road and format_code(var_out.format) != step.input.format:
            road.append(TransStep("ReFormat", _vdesc(var_out, group.name), step.input))
        road.append(step)
        last = out
        _deal_fusion(draft, group)
    return road, last


def _same_trans_op(draft: GraphDraft, variables: list[NodeDraft]
                   ) -> tuple[TransStep, TensorDesc] | None:
    """CheckSameAndTransOp: one supported trans op type/output behind every reader."""
    readers = [(c, slot) for v in variables for c, slot, _ in draft.consumers(v.name)]
    if not readers or any(c.type not in TRANS_OP_TYPES or slot != 0 for c, slot in readers):
        return None
    if len({signature(c.output(0)) for c, _ in readers}) != 1:
        return None
    last = readers[-1][0]
    out = last.output(0)
    if not shape_known(out) or not shape_known(draft.input_desc(last, 0)):
        return None
    where = f"trans node {last.name!r}"
    step = TransStep(last.type, _vdesc(draft.input_desc(last, 0), where), _vdesc(out, where))
    return (step, out) if is_supported(step) else None


def _refs_legal(draft: GraphDraft, group: _Group) -> bool:
    """CheckVariableRefLegally: each VarRef's writer-side trans is the inverse of the reader's."""
    for var in group.variables:
        reader = draft.consumers(var.name)[0][0]
        for ref in group.refs:
            sources = [i for i in ref.inputs if i is not None]
            if len(sources) > 1:
                fail(Status.GE_GRAPH_VARIABLE_OP_PASS_FAILED,
                     f"VarRef {ref.name!r} has {len(sources)} data producers; expected one",
                     VarGraphError)
            if not sources:
                return False  # GE does not guard this; a VarRef without a writer is illegal
            writer = draft.nodes[sources[0].src]
            if not (_same(reader.output(0), draft.input_desc(writer, 0))
                    and _same(writer.output(0), draft.input_desc(reader, 0))):
                return False
    return True


def _deal_fusion(draft: GraphDraft, group: _Group) -> None:
    """Remove the readers' trans nodes and the write-back trans nodes in front of VarRefs."""
    for var in group.variables:
        for reader in dict.fromkeys(c.name for c, _, _ in draft.consumers(var.name)):
            _bypass(draft, draft.nodes[reader], DataInput(var.name, 0))
    for ref in group.refs:
        source = ref.inputs[0]
        if source is None:
            continue
        trans = draft.nodes[source.src]
        feed = trans.inputs[0] if trans.inputs else None
        if feed is None:
            continue
        ref.inputs[0] = feed
        for ctrl in trans.control_inputs:
            draft.add_control(ctrl, ref.name)
        if not draft.consumers(trans.name) and not draft.control_successors(trans.name):
            draft.remove(trans.name)


def _bypass(draft: GraphDraft, trans: NodeDraft, source: DataInput) -> None:
    """Connect a trans node's consumers to `source`, move its control edges, remove it."""
    for consumer, slot, _ in draft.consumers(trans.name):
        consumer.inputs[slot] = source
        for ctrl in trans.control_inputs:
            draft.add_control(ctrl, consumer.name)
    for succ in draft.control_successors(trans.name):
        draft.add_control(source.src, succ.name)
    draft.remove(trans.name)


def _commit(group: _Group, road: list[TransStep], last: TensorDesc,
            ctx: VarPassContext) -> None:
    """Store the road, count the change, give variables and VarRefs the new descriptor."""
    manager = ctx.manager
    manager.set_trans_road(group.name, road)
    manager.set_changed_graph_id(group.name, ctx.graph_id)
    ctx.rebuild.set_state_changed(group.name)
    for var in group.variables:
        old = var.output(0)
        attrs = dict(old.attrs)
        origin = last.attrs.get("origin_shape")
        attrs["origin_shape"] = origin if origin is not None else \
            AttrValue("list_int", tuple(last.shape or ()))
        new = replace(old, shape=last.shape, dtype=last.dtype, format=last.format,
                      attrs=MappingProxyType(attrs))
        var.outputs[0:1] = [new]
        for ref in group.refs:
            ref.outputs[0:1] = [new]
            ref.input_descs[0:1] = [new]
    if road_renews_desc(road):
        new_desc = _vdesc(group.variables[0].output(0), f"variable {group.name!r}")
        manager.renew_cur_var_desc(group.name, new_desc)
