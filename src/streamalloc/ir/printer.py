"""The canonical text form of a graph: one line per node, attributes sorted, a versioned header.

Tests compare this text and `streamalloc show --canonical` prints it. Example line:
`%relu1 = Relu[AIcoreEngine](%data:0) ctrl(%c) {_stream_label="a"} -> (float16[1,64] NC1HWC0)`
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from streamalloc.ir.attrs import AttrValue, NamedAttrs, TensorValue
from streamalloc.ir.graph import GRAPH_FORMAT, ComputeGraph, Graph, Node
from streamalloc.ir.tensor import TensorDesc


def print_graph(graph: Graph) -> str:
    """The whole model: header, options, root graph, then subgraphs in file order."""
    lines = [f"// {GRAPH_FORMAT} canonical text",
             f"graph {graph.name} dynamic_shape={str(graph.dynamic_shape).lower()}"]
    lines += [f"option {k} = {json.dumps(graph.options[k])}" for k in sorted(graph.options)]
    for compute in graph.graphs():
        lines += _graph_lines(compute)
    return "\n".join(lines) + "\n"


def _graph_lines(compute: ComputeGraph) -> list[str]:
    parent = f" parent=%{compute.parent}" if compute.parent else ""
    head = f"{'subgraph' if compute.parent else 'root'} @{compute.name}{parent}"
    if compute.attrs:
        head += " " + format_attrs(compute.attrs)
    return [head] + ["  " + format_node(n) for n in compute.nodes]


def format_node(node: Node) -> str:
    """One node as one line."""
    ins = ", ".join("_" if r is None else f"%{r}" for r in node.inputs)
    text = f"%{node.name} = {node.type}[{node.engine}]({ins})"
    if node.control_inputs:
        text += " ctrl(" + ", ".join(f"%{c}" for c in node.control_inputs) + ")"
    extras = [f"{k}={getattr(node, k)}" for k in ("stream_id", "task_count", "cost_us")
              if getattr(node, k) is not None]
    if extras:
        text += " <" + " ".join(extras) + ">"
    if node.attrs:
        text += " " + format_attrs(node.attrs)
    if node.subgraphs:
        text += " subgraphs(" + ", ".join(f"{r}=@{s}" for r, s in node.subgraphs) + ")"
    if node.input_descs:
        text += " <- (" + ", ".join(format_desc(d) for d in node.input_descs) + ")"
    if node.outputs:
        text += " -> (" + ", ".join(format_desc(d) for d in node.outputs) + ")"
    return text


def format_desc(desc: TensorDesc) -> str:
    """`dtype[shape] FORMAT {attrs}`, `?` for unknown parts."""
    shape = "?" if desc.shape is None else ",".join(map(str, desc.shape))
    text = f"{desc.dtype or '?'}[{shape}]"
    if desc.format:
        text += " " + desc.format
    if desc.attrs:
        text += " " + format_attrs(desc.attrs)
    return text


def format_attrs(attrs: Mapping[str, AttrValue]) -> str:
    """`{k=v, ...}` with keys sorted and values typed where the kind is not obvious."""
    return "{" + ", ".join(f"{k}={format_value(attrs[k])}" for k in sorted(attrs)) + "}"


def format_value(attr: AttrValue) -> str:
    """One attribute value; lists and structures carry their kind."""
    kind, value = attr.kind, attr.value
    if kind in ("int", "float", "bool", "string", "expression"):
        return json.dumps(value)
    if kind in ("bytes", "graph"):
        return f"{kind}<{len(value)} bytes>"
    if kind == "data_type":
        return f"dt({value})"
    if kind == "named_attrs":
        return _named(value)
    if kind == "tensor_desc":
        return format_desc(value)
    if kind == "tensor":
        return _tensor(value)
    return f"{kind}[{', '.join(_item(kind, v) for v in value)}]"


def _named(value: NamedAttrs) -> str:
    return f"{json.dumps(value.name)}{format_attrs(value.attrs)}"


def _tensor(value: TensorValue) -> str:
    return f"tensor({format_desc(value.desc)}, {len(value.data)} bytes)"


def _item(kind: str, item: object) -> str:
    if isinstance(item, NamedAttrs):
        return _named(item)
    if isinstance(item, TensorDesc):
        return format_desc(item)
    if isinstance(item, TensorValue):
        return _tensor(item)
    if isinstance(item, bytes):
        return f"<{len(item)} bytes>"
    if isinstance(item, tuple):
        return "[" + ", ".join(json.dumps(v) for v in item) + "]"
    return json.dumps(item)
