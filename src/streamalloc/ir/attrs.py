"""Typed GE attribute values and their plain (YAML/JSON) form.

GE attributes are typed (`AttrDef` is a oneof): an empty list still says whether it is a list of
ints or floats, a string may be bytes. `AttrValue` keeps that type as `kind`. In graph files a
value whose kind follows from the plain YAML value (an int, a float, a bool, a string, a non-empty
list of one of those, an empty list as `list_none`) is written plainly; anything else is written as
`{type: KIND, value: ...}`, so loading a written graph gives back exactly the same kinds.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, cast

import msgspec

from streamalloc.ir.tensor import TensorDesc

SCALAR_KINDS = ("int", "float", "bool", "string", "bytes", "data_type", "expression")
STRUCT_KINDS = ("named_attrs", "tensor_desc", "tensor", "graph")
LIST_KINDS = (
    "list_none", "list_int", "list_float", "list_bool", "list_string", "list_bytes",
    "list_data_type", "list_named_attrs", "list_tensor_desc", "list_tensor", "list_graph",
    "list_list_int", "list_list_float",
)
ATTR_KINDS: tuple[str, ...] = SCALAR_KINDS + STRUCT_KINDS + LIST_KINDS


class NamedAttrs(msgspec.Struct, frozen=True):
    """GE `NamedAttrs`: a named bundle of attributes (e.g. the AIPP config)."""

    name: str
    attrs: Mapping[str, AttrValue]


class TensorValue(msgspec.Struct, frozen=True):
    """GE `TensorDef`: a tensor description with its raw bytes."""

    desc: TensorDesc
    data: bytes


class AttrValue(msgspec.Struct, frozen=True):
    """One attribute value with its GE kind; lists are tuples, `graph` is a serialized GraphDef."""

    kind: str
    value: Any


_NO_ATTRS: Mapping[str, AttrValue] = MappingProxyType({})


def freeze_attrs(attrs: Mapping[str, AttrValue] | None) -> Mapping[str, AttrValue]:
    """A read-only copy of an attribute map, keys in sorted order (the canonical order); one
    shared empty map for the many nodes without attributes."""
    return MappingProxyType({k: attrs[k] for k in sorted(attrs)}) if attrs else _NO_ATTRS


def infer_attr(value: Any) -> AttrValue:
    """Type a plain Python value the way a graph file types it; raises ValueError if it cannot."""
    if isinstance(value, AttrValue):
        return value
    if isinstance(value, bool):
        return AttrValue("bool", value)
    if isinstance(value, int):
        return AttrValue("int", value)
    if isinstance(value, float):
        return AttrValue("float", value)
    if isinstance(value, str):
        return AttrValue("string", value)
    if isinstance(value, bytes):
        return AttrValue("bytes", value)
    if isinstance(value, list | tuple):
        return _infer_list(tuple(value))
    raise ValueError(f"cannot type {type(value).__name__} value {value!r}")


def _infer_list(items: tuple[Any, ...]) -> AttrValue:
    if not items:
        return AttrValue("list_none", ())
    kinds = {infer_attr(v).kind for v in items if not isinstance(v, list | tuple | dict)}
    if len(kinds) == 1 and all(not isinstance(v, list | tuple | dict) for v in items):
        kind = kinds.pop()
        if kind in ("int", "float", "bool", "string"):
            return AttrValue("list_" + kind, items)
    if kinds <= {"int", "float"} and all(isinstance(v, int | float) and not isinstance(v, bool)
                                         for v in items):
        return AttrValue("list_float", tuple(float(v) for v in items))
    raise ValueError(f"a list attribute must hold values of one scalar type, found {list(items)!r}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def desc_to_plain(desc: TensorDesc) -> dict[str, Any]:
    """Plain form of a tensor description (keys only where known)."""
    out: dict[str, Any] = {}
    if desc.shape is not None:
        out["shape"] = list(desc.shape)
    if desc.dtype is not None:
        out["dtype"] = desc.dtype
    if desc.format is not None:
        out["format"] = desc.format
    if desc.attrs:
        out["attrs"] = attrs_to_plain(desc.attrs)
    return out


def attrs_to_plain(attrs: Mapping[str, AttrValue]) -> dict[str, Any]:
    """Plain form of an attribute map, keys sorted."""
    return {k: attr_to_plain(attrs[k]) for k in sorted(attrs)}


def attr_to_plain(attr: AttrValue) -> Any:
    """The plain value when it types back to the same kind, else `{type:, value:}`."""
    plain = _plain_value(attr)
    try:
        if infer_attr(plain) == attr:
            return plain
    except ValueError:
        pass
    return {"type": attr.kind, "value": plain}


def _named_plain(value: NamedAttrs) -> dict[str, Any]:
    return {"name": value.name, "attrs": attrs_to_plain(value.attrs)}


def _tensor_plain(value: TensorValue) -> dict[str, Any]:
    return {"desc": desc_to_plain(value.desc), "data": _b64(value.data)}


# Plain form of one element, for kinds (and list kinds) that are not plain already.
_TO_PLAIN: dict[str, Any] = {
    "bytes": _b64, "graph": _b64, "named_attrs": _named_plain, "tensor_desc": desc_to_plain,
    "tensor": _tensor_plain, "list_int": list, "list_float": list,
}


def _plain_value(attr: AttrValue) -> Any:
    kind, value = attr.kind, attr.value
    if kind in _TO_PLAIN:
        return _TO_PLAIN[kind](value)
    if kind.startswith("list_"):
        convert = _TO_PLAIN.get(kind[len("list_"):])
        return [convert(v) for v in value] if convert else list(value)
    return value


def attr_from_plain(plain: Any) -> AttrValue:
    """Inverse of `attr_to_plain`; raises ValueError naming what was expected."""
    if isinstance(plain, Mapping):
        if set(plain) != {"type", "value"}:
            raise ValueError("an attribute written as a mapping needs exactly the keys "
                             f"'type' and 'value', found {sorted(plain)}")
        kind = plain["type"]
        if kind not in ATTR_KINDS:
            raise ValueError(f"unknown attribute type {kind!r}; valid: {', '.join(ATTR_KINDS)}")
        return AttrValue(kind, _typed_value(kind, plain["value"]))
    return infer_attr(plain)


def attrs_from_plain(plain: Mapping[str, Any]) -> Mapping[str, AttrValue]:
    """Inverse of `attrs_to_plain`."""
    return freeze_attrs({str(k): attr_from_plain(v) for k, v in plain.items()})


def desc_from_plain(plain: Mapping[str, Any]) -> TensorDesc:
    """Inverse of `desc_to_plain`."""
    shape = plain.get("shape")
    return TensorDesc(
        shape=None if shape is None else tuple(int(d) for d in shape),
        dtype=plain.get("dtype"),
        format=plain.get("format"),
        attrs=attrs_from_plain(plain.get("attrs") or {}),
    )


def _from_b64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise ValueError(f"expected base64 text, found {text!r}")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError as exc:
        raise ValueError(f"invalid base64 text {text!r}") from exc


_SCALAR_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int, "float": (int, float), "bool": bool, "string": str, "data_type": int,
    "expression": str,
}


def _check(kind: str, value: Any) -> Any:
    expected = _SCALAR_TYPES[kind]
    if not isinstance(value, expected) or (kind != "bool" and isinstance(value, bool)):
        raise ValueError(f"attribute of type {kind} needs a {kind} value, found {value!r}")
    return float(cast(float, value)) if kind == "float" else value  # YAML ints are valid floats


def _seq(value: Any, kind: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"attribute of type {kind} needs a list, found {value!r}")
    return list(value)


def _typed_value(kind: str, value: Any) -> Any:
    if kind in _SCALAR_TYPES:
        return _check(kind, value)
    if kind in ("bytes", "graph"):
        return _from_b64(value)
    if kind == "named_attrs":
        return _named(value)
    if kind == "tensor_desc":
        return desc_from_plain(value)
    if kind == "tensor":
        return TensorValue(desc_from_plain(value["desc"]), _from_b64(value["data"]))
    items = _seq(value, kind)
    if kind == "list_none":
        if items:
            raise ValueError(f"attribute of type list_none must be empty, found {items!r}")
        return ()
    if kind in ("list_list_int", "list_list_float"):
        inner = kind[len("list_list_"):]
        return tuple(tuple(_check(inner, v) for v in _seq(row, kind)) for row in items)
    return tuple(_typed_value(kind[len("list_"):], v) for v in items)


def _named(value: Any) -> NamedAttrs:
    if not isinstance(value, Mapping) or not set(value) <= {"name", "attrs"}:
        raise ValueError(f"named_attrs needs a mapping with 'name' and 'attrs', found {value!r}")
    return NamedAttrs(str(value.get("name", "")), attrs_from_plain(value.get("attrs") or {}))
