"""GE's `AttrDef`, `TensorDescriptor`, `NamedAttrs` and `TensorDef` (ge_ir.proto) -> the IR's
attribute values and tensor descriptions, for the graph-dump loader (`ge_dump.py`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamalloc.ir.attrs import AttrValue, NamedAttrs, TensorValue, freeze_attrs
from streamalloc.ir.dtypes import GE_PROTO_DTYPE
from streamalloc.ir.proto import ge_ir_pb2
from streamalloc.ir.tensor import TensorDesc


def attrs_of(proto_map: Mapping[str, Any]) -> Mapping[str, AttrValue]:
    """The attributes of an `attr` map (ValueError naming the key of one GE cannot read)."""
    out = {}
    for key, attr in proto_map.items():
        try:
            value = _attr(attr)
        except ValueError as exc:
            raise ValueError(f"attribute {key!r}: {exc}") from None
        if value is not None:
            out[key] = value
    return freeze_attrs(out)


def desc_of(desc: ge_ir_pb2.TensorDescriptor) -> TensorDesc:
    """A tensor description: dtype, shape, layout and attrs (the rest is dropped)."""
    return TensorDesc(shape=tuple(desc.shape.dim) if desc.HasField("shape") else None,
                      dtype=GE_PROTO_DTYPE.get(desc.dtype), format=desc.layout or None,
                      attrs=attrs_of(desc.attr))


def _named(named: ge_ir_pb2.NamedAttrs) -> NamedAttrs:
    return NamedAttrs(named.name, attrs_of(named.attr))


def _tensor(tensor: ge_ir_pb2.TensorDef) -> TensorValue:
    return TensorValue(desc_of(tensor.desc), bytes(tensor.data))


def _graph_bytes(graph: ge_ir_pb2.GraphDef) -> bytes:
    return graph.SerializeToString(deterministic=True)  # deterministic: stable map order


def _text(value: bytes) -> AttrValue:
    try:
        return AttrValue("string", value.decode("utf-8"))
    except UnicodeDecodeError:
        return AttrValue("bytes", bytes(value))


# AttrDef oneof member -> AttrValue; `list` is typed by its val_type (see _list).
_ONEOF: dict[str, Callable[[Any], AttrValue]] = {
    "s": _text,
    "i": lambda v: AttrValue("int", v),
    "f": lambda v: AttrValue("float", v),
    "b": lambda v: AttrValue("bool", v),
    "bt": lambda v: AttrValue("bytes", bytes(v)),
    "dt": lambda v: AttrValue("data_type", v),  # the C++ ge::DataType number, kept as is
    "expression": lambda v: AttrValue("expression", v.decode("utf-8", "backslashreplace")),
    "func": lambda v: AttrValue("named_attrs", _named(v)),
    "td": lambda v: AttrValue("tensor_desc", desc_of(v)),
    "t": lambda v: AttrValue("tensor", _tensor(v)),
    "g": lambda v: AttrValue("graph", _graph_bytes(v)),
    "list_list_int": lambda v: AttrValue("list_list_int",
                                         tuple(tuple(row.list_i) for row in v.list_list_i)),
    "list_list_float": lambda v: AttrValue("list_list_float",
                                           tuple(tuple(row.list_f) for row in v.list_list_f)),
}

_VT = ge_ir_pb2.AttrDef.ListValue.ListValueType
# ListValue member (in field order) -> our list kind and the val_type naming it.
_LIST_MEMBERS: dict[str, tuple[str, int]] = {
    "s": ("list_string", _VT.VT_LIST_STRING), "i": ("list_int", _VT.VT_LIST_INT),
    "f": ("list_float", _VT.VT_LIST_FLOAT), "b": ("list_bool", _VT.VT_LIST_BOOL),
    "bt": ("list_bytes", _VT.VT_LIST_BYTES), "td": ("list_tensor_desc", _VT.VT_LIST_TENSOR_DESC),
    "t": ("list_tensor", _VT.VT_LIST_TENSOR), "g": ("list_graph", _VT.VT_LIST_GRAPH),
    "na": ("list_named_attrs", _VT.VT_LIST_NAMED_ATTRS),
    "dt": ("list_data_type", _VT.VT_LIST_DATA_TYPE),
}
_MEMBER_OF_VT = {vt: member for member, (_, vt) in _LIST_MEMBERS.items()}
_LIST_ITEM: dict[str, Callable[[Any], Any]] = {
    "bt": bytes, "td": desc_of, "t": _tensor, "g": _graph_bytes, "na": _named,
}


def _attr(attr: ge_ir_pb2.AttrDef) -> AttrValue | None:
    member = attr.WhichOneof("value")
    if member is None:
        return None  # no value at all: GE skips such an attr (module docstring)
    if member == "list":
        return _list(attr.list)
    return _ONEOF[member](getattr(attr, member))


def _list(value: ge_ir_pb2.AttrDef.ListValue) -> AttrValue:
    """A list typed by `val_type`, so an empty list keeps its kind.

    VT_LIST_NONE (or a val_type newer than this table) with items in exactly one member is
    typed by that member, as old GE writers left val_type unset; with none it is `list_none`.
    """
    member = _MEMBER_OF_VT.get(value.val_type)
    if member is None:
        filled = [m for m in _LIST_MEMBERS if len(getattr(value, m))]
        if len(filled) > 1:
            raise ValueError(f"list without a val_type holds items in several members {filled}")
        if not filled:
            return AttrValue("list_none", ())
        member = filled[0]
    items: Sequence[Any] = getattr(value, member)
    if member == "s":
        return _strings(items)
    convert = _LIST_ITEM.get(member)
    return AttrValue(_LIST_MEMBERS[member][0],
                     tuple(map(convert, items)) if convert else tuple(items))


def _strings(items: Sequence[bytes]) -> AttrValue:
    """list_string, or list_bytes (raw) when any item is not UTF-8, like the scalar `s`."""
    try:
        return AttrValue("list_string", tuple(item.decode("utf-8") for item in items))
    except UnicodeDecodeError:
        return AttrValue("list_bytes", tuple(bytes(item) for item in items))
