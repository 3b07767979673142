"""Small graphs for the memory tests, built with GraphBuilder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamalloc.ir.attrs import AttrValue, TensorValue, infer_attr
from streamalloc.ir.builder import GraphBuilder, parse_ref
from streamalloc.ir.graph import Graph
from streamalloc.ir.tensor import TensorDesc

F32_4 = TensorDesc((4,), "float32", "ND")
Spec = dict[str, Any]  # a node spec for `build`


def tensor(shape: Sequence[int], dtype: str = "float32", fmt: str = "ND",
           **attrs: Any) -> TensorDesc:
    """A tensor description with plain attributes."""
    return TensorDesc(tuple(shape), dtype, fmt, {k: infer_attr(v) for k, v in attrs.items()})


def weight(data: bytes, desc: TensorDesc = F32_4) -> AttrValue:
    """A `value` attribute holding `data`."""
    return AttrValue("tensor", TensorValue(desc, data))


def build(nodes: Sequence[Mapping[str, Any]], options: Mapping[str, str] | None = None,
          name: str = "g") -> Graph:
    """A root graph from node specs {name, type, inputs, control, outputs, input_descs, attrs}."""
    b = GraphBuilder(name, options=options)
    for n in nodes:
        attrs = {k: v if isinstance(v, AttrValue) else infer_attr(v)
                 for k, v in (n.get("attrs") or {}).items()}
        b.add_node(n["name"], n["type"], inputs=[parse_ref(i) for i in n.get("inputs", ())],
                   control_inputs=n.get("control", ()), attrs=attrs,
                   outputs=n.get("outputs", ()), input_descs=n.get("input_descs", ()))
    return b.build()
