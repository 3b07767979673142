"""ONNX values -> the IR's: dtypes, tensor descriptions, tensors and attributes, for the ONNX
importer (`onnx_model.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain

from google.protobuf import text_format
from onnx import AttributeProto, GraphProto, TensorProto, TypeProto, numpy_helper

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.tensor import TensorDesc

# ONNX TensorProto.DataType name -> our dtype name (dtypes.py). Keyed by enum name so that types
# newer than the installed onnx are skipped rather than breaking the import.
_ONNX_DTYPE_NAMES = {
    "FLOAT": "float32", "UINT8": "uint8", "INT8": "int8", "UINT16": "uint16", "INT16": "int16",
    "INT32": "int32", "INT64": "int64", "STRING": "string", "BOOL": "bool", "FLOAT16": "float16",
    "DOUBLE": "float64", "UINT32": "uint32", "UINT64": "uint64", "COMPLEX64": "complex64",
    "COMPLEX128": "complex128", "BFLOAT16": "bfloat16", "FLOAT8E4M3FN": "float8_e4m3fn",
    "FLOAT8E4M3FNUZ": "float8_e4m3fnuz", "FLOAT8E5M2": "float8_e5m2",
    "FLOAT8E5M2FNUZ": "float8_e5m2fnuz", "UINT4": "uint4", "INT4": "int4",
    "FLOAT4E2M1": "float4_e2m1", "FLOAT8E8M0": "float8_e8m0", "UINT2": "uint2", "INT2": "int2",
    "FLOAT6E2M3": "float6_e2m3", "FLOAT6E3M2": "float6_e3m2",
}
_ONNX_DTYPE_ENUM = dict(TensorProto.DataType.items())
ONNX_DTYPE: dict[int, str] = {_ONNX_DTYPE_ENUM[k]: v for k, v in _ONNX_DTYPE_NAMES.items()
                              if k in _ONNX_DTYPE_ENUM}


def descs_of(proto: GraphProto) -> dict[str, TensorDesc]:
    """Known tensor descriptions of one graph's values; declared inputs/outputs win."""
    descs: dict[str, TensorDesc] = {}
    for value in chain(proto.input, proto.output, proto.value_info):
        desc = _type_desc(value.type)
        if desc is not None and value.name not in descs:
            descs[value.name] = desc
    return descs


def _type_desc(type_proto: TypeProto) -> TensorDesc | None:
    """Shape (-1 for a symbolic or unknown dim) and dtype of a tensor type; None if not a tensor."""
    kind = type_proto.WhichOneof("value")
    while kind == "optional_type":  # an optional tensor is described by its tensor
        type_proto = type_proto.optional_type.elem_type
        kind = type_proto.WhichOneof("value")
    if kind not in ("tensor_type", "sparse_tensor_type"):
        return None
    tensor = getattr(type_proto, kind)
    shape = (tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim)
             if tensor.HasField("shape") else None)
    dtype = ONNX_DTYPE.get(tensor.elem_type)
    return None if shape is None and dtype is None else TensorDesc(shape, dtype)


def tensor_desc(tensor: TensorProto) -> TensorDesc:
    """Shape and dtype of a tensor (an initializer)."""
    return TensorDesc(tuple(tensor.dims), ONNX_DTYPE.get(tensor.data_type))


def _tensor_value(tensor: TensorProto) -> TensorValue:
    """Desc and little-endian bytes; empty for external data (not loaded) and string tensors."""
    if tensor.data_location == TensorProto.EXTERNAL or tensor.data_type == TensorProto.STRING:
        data = b""  # strings have no fixed-width byte form; external data was not loaded
    elif tensor.HasField("raw_data"):
        data = tensor.raw_data
    else:
        data = numpy_helper.to_array(tensor).tobytes()
    return TensorValue(tensor_desc(tensor), data)


def attr_type_name(value: int) -> str:
    """The name of an AttributeProto type number, for messages."""
    try:
        return AttributeProto.AttributeType.Name(value)
    except ValueError:
        return f"{value} (unknown)"


def _text(raw: bytes) -> AttrValue:
    try:
        return AttrValue("string", raw.decode("utf-8"))
    except UnicodeDecodeError:
        return AttrValue("bytes", raw)


def _texts(raw: Iterable[bytes]) -> AttrValue:
    items = tuple(raw)
    try:
        return AttrValue("list_string", tuple(s.decode("utf-8") for s in items))
    except UnicodeDecodeError:
        return AttrValue("list_bytes", items)


def _type_text(type_proto: TypeProto) -> str:
    return text_format.MessageToString(type_proto, as_one_line=True)


# AttributeProto type -> its AttrValue
ATTR_CONVERTERS: dict[int, Callable[[AttributeProto], AttrValue]] = {
    AttributeProto.INT: lambda a: AttrValue("int", a.i),
    AttributeProto.FLOAT: lambda a: AttrValue("float", a.f),
    AttributeProto.STRING: lambda a: _text(a.s),
    AttributeProto.INTS: lambda a: AttrValue("list_int", tuple(a.ints)),
    AttributeProto.FLOATS: lambda a: AttrValue("list_float", tuple(a.floats)),
    AttributeProto.STRINGS: lambda a: _texts(a.strings),
    AttributeProto.TENSOR: lambda a: AttrValue("tensor", _tensor_value(a.t)),
    AttributeProto.TENSORS: lambda a: AttrValue("list_tensor",
                                                tuple(_tensor_value(t) for t in a.tensors)),
    AttributeProto.SPARSE_TENSOR: lambda a: AttrValue(
        "bytes", a.sparse_tensor.SerializeToString(deterministic=True)),
    AttributeProto.SPARSE_TENSORS: lambda a: AttrValue(
        "list_bytes", tuple(t.SerializeToString(deterministic=True) for t in a.sparse_tensors)),
    AttributeProto.TYPE_PROTO: lambda a: AttrValue("string", _type_text(a.tp)),
    AttributeProto.TYPE_PROTOS: lambda a: AttrValue("list_string",
                                                    tuple(_type_text(t) for t in a.type_protos)),
}
