"""GE graph dumps (`ge_ir.proto`: ModelDef or bare GraphDef, protobuf text or binary) -> Graph.

The kind is recognised from the content (ge-ir-proto.md 1.5): UTF-8 text that starts like text
format (`graph {`, `name: ...`) is protobuf text, anything else is binary. Text is parsed by
protoc's C++ parser in a subprocess (`python -m grpc_tools.protoc --encode`, about 6x faster than
the pure-Python `text_format` on the 1.4 MB dumps) and falls back to `text_format` when protoc
cannot run. ModelDef or GraphDef: the first text field name decides when it belongs to only one
of them, binary starting with 0x3A is a ModelDef; otherwise ModelDef is tried, then GraphDef.

Mapping: `graph[0]` is the root (its name, or the file stem when empty, names the Graph),
`graph[1:]` are its subgraphs, owned through `OpDef.subgraph_name`. `OpDef.input` gives the
edges ("src:k" data from output k, "src:-1" control, "" an unconnected data slot); the slot of a
data entry is its position among the non-control entries. Nodes are re-sorted in GE's order,
since `GraphDef.op` is not always topological (00017, 00046).

Dropped, on purpose:
* model attrs (`stream_num`, `event_num`, `label_num`, ...: all 0, the dumps predate allocation),
  `ModelDef.name/version`, `GraphDef.input/output` (sources and sinks are Data/NetOutput ops);
* `OpDef.src_name/src_index/input_name` (stale mirrors of `input`), `id` (not unique),
  `dst_*`, memory offsets, `is_input_const` (also kept as an attr), `attr_groups`;
* tensor-descriptor fields other than dtype, shape, layout and attrs (`size`, `device_type`,
  `real_dim_cnt`, ...). An unknown dtype number (a newer GE) becomes None, like DT_UNDEFINED;
* `stream_id` 0: proto3 does not write it, so a pre-set stream 0 cannot be told from none;
* an attribute whose `AttrDef` has no oneof member set. GE's loader has no deserializer for an
  unset value and skips it, so dropping the key keeps `has_attr` answering as GE would.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

from google.protobuf import message, text_format

from streamalloc.errors import GraphLoadError
from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.engines import EngineTable
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders.ge_dump_attrs import attrs_of, desc_of
from streamalloc.ir.proto import ge_ir_pb2

_KINDS = (ge_ir_pb2.ModelDef, ge_ir_pb2.GraphDef)
_PROTOC_MODULE = "grpc_tools.protoc"
_PROTOC_ERROR = re.compile(r"^input:(\d+):(\d+): (.*)$", re.MULTILINE)
_PY_ERROR_POSITION = re.compile(r"^\d+:\d+ : ")
# Text format opens with a field name and ':', '{' or '<' (comments may come first).
_TEXT_START = re.compile(r"\s*(?:#[^\n]*\n\s*)*([A-Za-z_]\w*)\s*[:{<]")
# Raw control characters never occur in text format (strings escape them); binary has them.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_PORT = re.compile(r"-?\d+")


def load_ge_dump(path: str | Path, *, use_protoc: bool | None = None) -> Graph:
    """Load a GE graph dump; `use_protoc` None = protoc's text parser when grpc_tools is there.

    Raises GraphLoadError, starting with the file path, for unreadable, empty, truncated,
    corrupt or non-protobuf files and for structural errors (dangling inputs, cycles, ...).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GraphLoadError(f"{path}: cannot read the file: {exc}") from None
    if not data.strip():
        raise GraphLoadError(f"{path}: empty file; expected a GE graph dump (ModelDef or "
                             "GraphDef, protobuf text or binary)")
    text = _as_text(data)
    if text is None:
        model = _decode_binary(path, data)
    else:
        model = _decode_text(path, text, _protoc_available() if use_protoc is None else use_protoc)
    return _build(path, model)


# ---- decoding ------------------------------------------------------------------------------

class _TextError(Exception):
    """A text parse that failed at (line, column)."""

    def __init__(self, line: int, column: int, what: str) -> None:
        super().__init__(what)
        self.line, self.column, self.what = line, column, what


def _as_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8-sig")  # a BOM is not part of the text format
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(text, 0, 4096) or not _TEXT_START.match(text):
        return None
    return text


def _has_ops(model: ge_ir_pb2.ModelDef) -> bool:
    return bool(model.graph) and bool(model.graph[0].op)


def _as_model(parsed: message.Message) -> ge_ir_pb2.ModelDef:
    if isinstance(parsed, ge_ir_pb2.ModelDef):
        return parsed
    model = ge_ir_pb2.ModelDef()
    model.graph.append(cast(ge_ir_pb2.GraphDef, parsed))
    return model


def _no_graph(path: Path, how: str) -> GraphLoadError:
    return GraphLoadError(f"{path}: not a GE graph dump: it parses as protobuf {how} but holds no "
                          "graph with operators (expected ModelDef.graph[0].op or GraphDef.op)")


def _decode_text(path: Path, text: str, use_protoc: bool) -> ge_ir_pb2.ModelDef:
    first = _TEXT_START.match(text)
    field = first.group(1) if first else ""
    kinds = [k for k in _KINDS if field in k.DESCRIPTOR.fields_by_name] or list(_KINDS)
    failures: list[_TextError] = []
    parsed = False  # a kind that parses names the problem better than the failures of the others
    for kind in kinds:
        try:
            model = _as_model(_parse_text(text, kind, use_protoc))
        except _TextError as exc:
            failures.append(exc)
            continue
        if _has_ops(model):
            return model
        parsed = True
    if parsed or not failures:
        raise _no_graph(path, "text")
    # The kind the text was meant as is the one whose parse got furthest.
    worst = max(failures, key=lambda f: (f.line, f.column))
    lines = text.count("\n") + (not text.endswith("\n"))
    ending = " (at the end of the file: is it truncated?)" if worst.line >= lines else ""
    raise GraphLoadError(f"{path}:{worst.line}:{worst.column}: malformed GE dump (protobuf text): "
                         f"{worst.what.rstrip()}{ending}")


def _decode_binary(path: Path, data: bytes) -> ge_ir_pb2.ModelDef:
    # 0x3A is field 7 (ModelDef.graph), which GraphDef lacks; 0x0A (name) fits both.
    kinds = _KINDS[:1] if data[0] == 0x3A else _KINDS
    errors = []
    parsed = False
    for kind in kinds:
        try:
            model = _as_model(kind.FromString(data))
        except message.DecodeError as exc:
            errors.append(f"{kind.DESCRIPTOR.name}: {exc}")
            continue
        if _has_ops(model):
            return model
        parsed = True
    if parsed or not errors:
        raise _no_graph(path, "binary")
    raise GraphLoadError(f"{path}: malformed GE dump: not protobuf text, and not a binary ModelDef "
                         f"or GraphDef ({'; '.join(errors)}); the file is truncated, corrupt or "
                         "not a GE dump")


@cache
def _protoc_available() -> bool:
    return importlib.util.find_spec(_PROTOC_MODULE.partition(".")[0]) is not None


def _parse_text(text: str, kind: type[message.Message], use_protoc: bool) -> message.Message:
    parsed = _protoc_parse(text, kind) if use_protoc else None
    if parsed is not None:
        return parsed
    try:
        return text_format.Parse(text, kind())
    except text_format.ParseError as exc:
        raise _TextError(exc.GetLine() or 0, exc.GetColumn() or 0,
                         _PY_ERROR_POSITION.sub("", str(exc))) from None


def _protoc_parse(text: str, kind: type[message.Message]) -> message.Message | None:
    """Text -> message via protoc's C++ parser; None when protoc itself could not run."""
    proto = resources.files("streamalloc.ir.proto").joinpath("ge_ir.proto")
    with resources.as_file(proto) as file:
        command = [sys.executable, "-m", _PROTOC_MODULE, f"--encode={kind.DESCRIPTOR.full_name}",
                   f"-I{file.parent}", file.name]
        try:
            done = subprocess.run(command, input=text.encode("utf-8"), capture_output=True,
                                  check=False)
        except OSError:
            return None
    if done.returncode == 0:
        try:
            return kind.FromString(done.stdout)
        except message.DecodeError:
            return None
    found = _PROTOC_ERROR.search(done.stderr.decode("utf-8", "replace"))
    if found is None:
        return None  # a tool failure, not a parse error: let text_format decide
    raise _TextError(int(found[1]), int(found[2]), found[3])


# ---- mapping to the IR ---------------------------------------------------------------------

def _build(path: Path, model: ge_ir_pb2.ModelDef) -> Graph:
    root = model.graph[0]
    builder = GraphBuilder(root.name or path.stem, source=str(path))
    builder.set_graph_attrs(_attrs_at(root.attr, f"{path}:graph[0]"))
    for index, sub in enumerate(model.graph[1:], 1):
        where = f"{path}:graph[{index}]"
        builder.add_subgraph(sub.name, origin=where, attrs=_attrs_at(sub.attr, where))
    for index, graph in enumerate(model.graph):
        name = builder.name if index == 0 else graph.name
        for position, op in enumerate(graph.op):
            _add_op(builder, op, name, f"{path}:graph[{index}].op[{position}]")
    return builder.build(order="ge")


def _attrs_at(proto_map: Mapping[str, Any], where: str) -> Mapping[str, AttrValue]:
    try:
        return attrs_of(proto_map)
    except ValueError as exc:
        raise GraphLoadError(f"{where}: {exc}") from None


def _add_op(builder: GraphBuilder, op: ge_ir_pb2.OpDef, graph: str, origin: str) -> None:
    if not op.name:
        raise GraphLoadError(f"{origin}: op of type {op.type!r} has no name")
    inputs, controls = _edges(op, origin)
    attrs = _attrs_at(op.attr, f"{origin}: op {op.name!r}")
    try:
        outputs = [desc_of(d) for d in op.output_desc]
        input_descs = [desc_of(d) for d in op.input_desc]
    except ValueError as exc:
        raise GraphLoadError(f"{origin}: op {op.name!r} tensor desc: {exc}") from None
    builder.add_node(op.name, op.type, graph=graph, engine=engine_hint(attrs, builder.engines),
                     inputs=inputs, control_inputs=controls, attrs=attrs, outputs=outputs,
                     input_descs=input_descs, subgraphs=_subgraphs(op),
                     stream_id=op.stream_id or None, origin=origin)


def _edges(op: ge_ir_pb2.OpDef, origin: str) -> tuple[list[DataInput | None], list[str]]:
    """Data inputs by slot and control inputs; `src_name` & co. are stale and not read."""
    inputs: list[DataInput | None] = []
    controls: list[str] = []
    for entry in op.input:
        if not entry:
            inputs.append(None)  # an unconnected slot still takes its position
            continue
        src, _, port = entry.rpartition(":")  # GE splits on the last ':'
        if not src or not _PORT.fullmatch(port) or int(port) < -1:
            raise GraphLoadError(f"{origin}: op {op.name!r} input {entry!r}: expected 'src:k' "
                                 "(k >= 0 a data edge, -1 a control edge) or '' (no edge)")
        if int(port) == -1:
            controls.append(src)
        else:
            inputs.append(DataInput(src, int(port)))
    return inputs, controls


def engine_hint(attrs: Mapping[str, AttrValue], engines: EngineTable) -> str | None:
    """The engine a dumped op names for itself, or None to use the op-type table.

    In order: the kernel-lib attrs GE and LX-fusion set (`_ge_attr_op_kernel_lib_name`,
    `_lxfusion_engine_name`), FE's `_coretype`, each only when it names a known engine; then
    `imply_type` 3 (domi AI_CPU), whose kernels run on the Ascend AI CPU engine.

    >>> from streamalloc.ir.engines import default_engine_table
    >>> engine_hint({"imply_type": AttrValue("int", 3)}, default_engine_table())
    'DNN_VM_AICPU_ASCEND'
    """
    for key in ("_ge_attr_op_kernel_lib_name", "_lxfusion_engine_name", "_coretype"):
        value = attrs.get(key)
        if value is not None and value.kind == "string" and engines.get(value.value):
            return str(value.value)
    imply = attrs.get("imply_type")
    if imply is not None and imply.kind == "int" and imply.value == 3:
        return "DNN_VM_AICPU_ASCEND"
    return None


# GE's IR names of the subgraphs of control-flow ops; Case's are the dynamic `branches<i>`.
_SUBGRAPH_ROLES: dict[str, tuple[str, ...]] = {
    "While": ("cond", "body"), "StatelessWhile": ("cond", "body"),
    "If": ("then_branch", "else_branch"), "StatelessIf": ("then_branch", "else_branch"),
    "PartitionedCall": ("f",), "StatefulPartitionedCall": ("f",),
}
_DYNAMIC_ROLES = {"Case": "branches", "StatelessCase": "branches"}


def subgraph_roles(op_type: str, count: int) -> list[str]:
    """Role names of an op's `count` subgraphs: GE's IR names, else the index as a string."""
    if op_type in _DYNAMIC_ROLES:
        return [f"{_DYNAMIC_ROLES[op_type]}{i}" for i in range(count)]
    fixed = _SUBGRAPH_ROLES.get(op_type, ())
    return [fixed[i] if i < len(fixed) else str(i) for i in range(count)]


def _subgraphs(op: ge_ir_pb2.OpDef) -> list[tuple[str, str]]:
    names = list(op.subgraph_name)
    # GE writes "" for a declared but unset subgraph instance; it owns nothing.
    return [(role, name) for role, name in zip(subgraph_roles(op.type, len(names)), names,
                                               strict=True) if name]
