"""ONNX model (`.onnx`) -> Graph, the way GE's ONNX parser maps it (formats.md section 1).

Mapping:
- initializers become `Const` nodes named after the tensor, graph inputs that are not
  initializers `Data` nodes, and each graph gets one `NetOutput` (the root's is `Node_Output`, as
  in GE) reading the graph outputs in order; ONNX ops keep their op type (`Conv`, `Constant`).
- GRAPH/GRAPHS attributes (If, Loop, Scan bodies) become subgraphs named `<owner>/<attr>`. A body's
  formal input i is a `Data` node with `_parent_node_index` = i (the owner's input i). ONNX lets a
  body read values of enclosing graphs; our edges cannot cross graphs, so each such value becomes
  a new data input of the owner and a `Data` node in the body, threaded through every level.
- constant folding (onnx_fold.py, on by default): nodes computed from constants only (the
  `ConstantOfShape` weights of exported models, Shape of a static shape, ...) become `Const`
  nodes named after their output tensor, like initializers, as GE folds them before it assigns
  streams; the constants only they read go away. `load_onnx(path, fold=False)` keeps them.
- names are unique across all graphs: ONNX names are kept first come, first kept (root first);
  unnamed nodes get `<op_type>_<index>`, and any clash a numeric suffix.

The importer first drafts every node with references to other drafts (names come last, because an
outer reference found deep in a body appends an input to an owner drafted earlier), then names
them, then hands them to `GraphBuilder`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, GraphProto, NodeProto

from streamalloc.errors import GraphLoadError
from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders.onnx_fold import fold_constants
from streamalloc.ir.loaders.onnx_values import (
    ATTR_CONVERTERS,
    ONNX_DTYPE,
    attr_type_name,
    descs_of,
    tensor_desc,
)
from streamalloc.ir.tensor import TensorDesc

ROOT_OUTPUT = "Node_Output"
PARENT_INDEX = "_parent_node_index"


@dataclass(eq=False)
class _Draft:
    """A node before naming: inputs point at drafts, so names can be chosen at the end."""

    type: str
    body: _Body
    wanted: str  # the ONNX name, kept when still free ("" = none)
    base: str  # what a derived name is made of when `wanted` is empty or taken
    scoped: bool = False  # derived name is `<graph>/<base>`
    inputs: list[tuple[_Draft, int] | None] = field(default_factory=list)
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    outputs: list[TensorDesc] = field(default_factory=list)
    subgraphs: list[tuple[str, _Body]] = field(default_factory=list)
    outer_slots: dict[str, int] = field(default_factory=dict)  # outer value -> own input slot
    name: str = ""


@dataclass(eq=False)
class _Body:
    """One graph: its Data nodes (formal inputs, then outer references) and the other nodes."""

    owner: _Draft | None
    role: str
    data: list[_Draft] = field(default_factory=list)
    nodes: list[_Draft] = field(default_factory=list)
    name: str = ""


@dataclass(eq=False)
class _Scope:
    """Value names visible while drafting one graph; `parent` is the enclosing graph's scope."""

    body: _Body
    parent: _Scope | None
    label: str
    descs: dict[str, TensorDesc]
    values: dict[str, tuple[_Draft, int]] = field(default_factory=dict)


def load_onnx(path: str | Path, *, fold: bool = True) -> Graph:
    """Load an ONNX model; raises GraphLoadError (message starts with the path) on bad input.

    With `fold` (the default) constant-only nodes become `Const` weights first, as GE's constant
    folding does before stream allocation (onnx_fold.py); `fold=False` keeps the graph as written.
    """
    path = Path(path)
    model = _infer(_read_model(path), data_prop=fold)
    if fold:
        model = fold_constants(model)
    name = model.graph.name or path.stem
    importer = _Importer(str(path))
    importer.graph(model.graph, None, "", None)
    importer.assign_names(name)
    return importer.build(name)


def _read_model(path: Path) -> onnx.ModelProto:
    try:
        # binary protobuf whatever the suffix (onnx.load would pick the text format by suffix)
        model = onnx.load(str(path), format="protobuf", load_external_data=False)
    except FileNotFoundError:
        raise GraphLoadError(f"{path}: no such file") from None
    except OSError as exc:
        raise GraphLoadError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    except (DecodeError, ValueError, TypeError):
        raise GraphLoadError(f"{path}: not a valid ONNX model: its {path.stat().st_size} bytes do "
                             "not parse as an ONNX ModelProto; the file is truncated, corrupt or "
                             "not an ONNX file (export or copy it again)") from None
    if not model.HasField("graph"):  # an empty byte string parses as an empty message
        what = "the file is empty" if path.stat().st_size == 0 else \
            "it parses as protobuf but has no graph; expected an ONNX ModelProto"
        raise GraphLoadError(f"{path}: not an ONNX model: {what}")
    return model


INFER_MAX_INLINED = 1_000_000  # nodes of local functions that inference would expand


def _infer(model: onnx.ModelProto, *, data_prop: bool = False) -> onnx.ModelProto:
    # Inferred shapes are a bonus: a model that inference rejects (unknown domains, bad types)
    # still loads with the value_info it carries, and so does one whose local functions call
    # each other so often that inference, which expands every call, would not finish. `data_prop`
    # also propagates the values of shape computations (Shape -> Concat -> ConstantOfShape),
    # which folding needs.
    if _inlined_nodes(model) > INFER_MAX_INLINED:
        return model
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=data_prop)
    except Exception:
        return model


def _inlined_nodes(model: onnx.ModelProto) -> int:
    """The nodes of the main graph with every call of a local function expanded (each function
    counted once, so 25 functions that call the next twice are 2^25 nodes, not a walk of them);
    past INFER_MAX_INLINED the count stops growing."""
    functions = {(f.domain, f.name): f for f in model.functions}
    sizes: dict[tuple[str, str], int] = {}

    def size(nodes: Iterable[NodeProto], path: frozenset[tuple[str, str]]) -> int:
        total = 0
        for node in nodes:
            key = (node.domain, node.op_type)
            total += 1
            if key in functions and key not in path:  # ONNX forbids recursion: a cycle stops
                if key not in sizes:
                    sizes[key] = size(functions[key].node, path | {key})
                total += sizes[key]
            if total > INFER_MAX_INLINED:
                return total
        return total

    return size(model.graph.node, frozenset()) if functions else len(model.graph.node)


class _Importer:
    """Drafts the graphs of one model, names the drafts, and emits them to a GraphBuilder."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.bodies: list[_Body] = []  # creation order: every parent before its children
        self.drafts: list[_Draft] = []  # creation order: the order ONNX names are claimed in

    def graph(self, proto: GraphProto, owner: _Draft | None, role: str,
              parent: _Scope | None) -> _Body:
        """Draft one ONNX graph (recursing into bodies) and return it."""
        body = _Body(owner, role)
        self.bodies.append(body)
        label = f"{parent.label}/{role}" if parent else proto.name or "main"
        scope = _Scope(body, parent, label, descs_of(proto))
        ops = self._declare(scope, proto)
        for index, (node, draft) in enumerate(zip(proto.node, ops, strict=True)):
            self._connect(scope, node, draft, f"node {index} ({node.op_type} {node.name!r})")
        out = self._new(scope, "NetOutput", ROOT_OUTPUT if parent is None else "", ROOT_OUTPUT,
                        scoped=parent is not None)
        out.inputs = [self._resolve(scope, v.name, "graph output") for v in proto.output]
        return body

    def _new(self, scope: _Scope, op_type: str, wanted: str, base: str, *, scoped: bool = False,
             data: bool = False) -> _Draft:
        draft = _Draft(op_type, scope.body, wanted, base, scoped)
        (scope.body.data if data else scope.body.nodes).append(draft)
        self.drafts.append(draft)
        return draft

    def _define(self, scope: _Scope, value: str, draft: _Draft, port: int) -> None:
        if value in scope.values:
            first = scope.values[value][0]
            raise GraphLoadError(f"{self.source}: graph {scope.label!r}: value {value!r} is "
                                 f"produced twice (by a {first.type} and a {draft.type}); ONNX "
                                 "values must have one producer")
        scope.values[value] = (draft, port)

    def _declare(self, scope: _Scope, proto: GraphProto) -> list[_Draft]:
        """Draft the Data, Const and op nodes and record every value they produce."""
        consts = [(t.name, tensor_desc(t)) for t in proto.initializer]
        consts += [(s.values.name, TensorDesc(tuple(s.dims), ONNX_DTYPE.get(s.values.data_type)))
                   for s in proto.sparse_initializer]
        self._declare_inputs(scope, proto, {name for name, _ in consts})
        for name, desc in consts:
            const = self._new(scope, "Const", name, name)
            const.outputs = [desc]
            self._define(scope, name, const, 0)
        return [self._declare_op(scope, node, index) for index, node in enumerate(proto.node)]

    def _declare_inputs(self, scope: _Scope, proto: GraphProto, consts: set[str]) -> None:
        for index, value in enumerate(proto.input):
            if value.name in consts:  # IR < 4 lists initializers as inputs too: Const wins
                continue
            data = self._new(scope, "Data", value.name, value.name, data=True)
            data.outputs = [scope.descs.get(value.name, TensorDesc())]
            if scope.parent is not None:  # formal input i of a body is the owner's input i
                data.attrs[PARENT_INDEX] = AttrValue("int", index)
            self._define(scope, value.name, data, 0)

    def _declare_op(self, scope: _Scope, node: NodeProto, index: int) -> _Draft:
        if not node.op_type:  # the graph format needs a type: the import would not load again
            raise GraphLoadError(f"{self.source}: graph {scope.label!r} node {index} "
                                 f"({node.name!r}) has an empty op_type; every ONNX node needs "
                                 "one")
        draft = self._new(scope, node.op_type, node.name, node.name or f"{node.op_type}_{index}")
        draft.outputs = [scope.descs.get(v, TensorDesc()) if v else TensorDesc()
                         for v in node.output]
        for port, value in enumerate(node.output):
            if value:  # "" is an optional output the node does not produce
                self._define(scope, value, draft, port)
        return draft

    def _connect(self, scope: _Scope, node: NodeProto, draft: _Draft, where: str) -> None:
        """Resolve the inputs, then the attributes (bodies may append outer-value inputs)."""
        draft.inputs = [self._resolve(scope, v, where) if v else None for v in node.input]
        for attr in sorted(node.attribute, key=_subgraph_rank):
            if attr.type == AttributeProto.GRAPH:
                draft.subgraphs.append((attr.name, self.graph(attr.g, draft, attr.name, scope)))
            elif attr.type == AttributeProto.GRAPHS:
                # roles `<attr>/<i>`: "/" cannot occur in an attribute name, so they cannot clash
                roles = [f"{attr.name}/{i}" for i in range(len(attr.graphs))]
                draft.subgraphs.extend((role, self.graph(g, draft, role, scope))
                                       for role, g in zip(roles, attr.graphs, strict=True))
            else:
                draft.attrs[attr.name] = self._attr(attr, scope, where)

    def _resolve(self, scope: _Scope, value: str, where: str) -> tuple[_Draft, int]:
        """The producer of `value`, threading values of enclosing graphs in through the owner."""
        found = scope.values.get(value)
        if found is not None:
            return found
        owner = scope.body.owner
        if owner is None or scope.parent is None:
            raise GraphLoadError(f"{self.source}: graph {scope.label!r} {where} reads value "
                                 f"{value!r}, which no node, initializer or graph input produces "
                                 "(in this graph or an enclosing one)")
        src, port = self._resolve(scope.parent, value, where)  # memoized at every level
        # All bodies of one owner (If's two branches) share one input slot per outer value.
        slot = owner.outer_slots.setdefault(value, len(owner.inputs))
        if slot == len(owner.inputs):
            owner.inputs.append((src, port))
        data = self._new(scope, "Data", "", value, scoped=True, data=True)
        data.attrs[PARENT_INDEX] = AttrValue("int", slot)
        data.outputs = [src.outputs[port]]
        scope.values[value] = (data, 0)
        return data, 0

    def _attr(self, attr: AttributeProto, scope: _Scope, where: str) -> AttrValue:
        convert = ATTR_CONVERTERS.get(attr.type)
        if convert is None:
            kinds = [AttributeProto.AttributeType.Name(t) for t in ATTR_CONVERTERS]
            raise GraphLoadError(f"{self.source}: graph {scope.label!r} {where} attribute "
                                 f"{attr.name!r} has type {attr_type_name(attr.type)}; expected "
                                 f"one of {', '.join(kinds)}, GRAPH, GRAPHS")
        return convert(attr)

    def assign_names(self, root: str) -> None:
        """Name graphs and nodes: ONNX names first (creation order), then derived names."""
        taken: set[str] = set()
        tried: dict[str, int] = {}
        for draft in self.drafts:
            if draft.wanted and draft.wanted not in taken:
                draft.name = draft.wanted
                taken.add(draft.name)
        graph_names: set[str] = set()
        graph_tried: dict[str, int] = {}
        # A parent body comes before its children, so an owner is named before its bodies are.
        for body in self.bodies:
            owner = body.owner
            body.name = _unique(root if owner is None else f"{owner.name}/{body.role}",
                                graph_names, graph_tried)
            for draft in chain(body.data, body.nodes):
                if not draft.name:
                    draft.name = _unique(f"{body.name}/{draft.base}" if draft.scoped
                                         else draft.base, taken, tried)

    def build(self, name: str) -> Graph:
        """Emit the named drafts and build the Graph in GE's order (GE sorts what it parses)."""
        builder = GraphBuilder(name, source=self.source)
        for body in self.bodies[1:]:
            builder.add_subgraph(body.name)
        for body in self.bodies:
            for draft in chain(body.data, body.nodes):
                builder.add_node(
                    draft.name, draft.type, graph=body.name, attrs=draft.attrs,
                    inputs=[None if ref is None else DataInput(ref[0].name, ref[1])
                            for ref in draft.inputs],
                    outputs=draft.outputs, subgraphs=[(r, b.name) for r, b in draft.subgraphs])
        return builder.build(order="ge")


# GE's instance order of If's subgraphs; ONNX writers (onnx.helper) sort attributes by name,
# which would put else_branch first.
_ROLE_RANK = {"then_branch": 0, "else_branch": 1}


def _subgraph_rank(attr: AttributeProto) -> int:
    """Sort key keeping attribute order except that then_branch precedes else_branch."""
    return _ROLE_RANK.get(attr.name, 0) if attr.type == AttributeProto.GRAPH else 0


def _unique(base: str, taken: set[str], tried: dict[str, int]) -> str:
    """`base`, or `base_<k>` with the smallest free k; the result is added to `taken`.
    `tried`: per base, the k below which every name is taken (names are never given back), so
    a base met n times costs n steps, not n^2 (a fuzz model's 65k nested If bodies of one
    name took 29 s)."""
    k = tried.get(base, 0)
    name = base if k == 0 else f"{base}_{k}"
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    tried[base] = k
    taken.add(name)
    return name
