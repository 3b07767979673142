"""Graph -> our graph file (formats.md section 1): the document and its YAML/JSON text.

Nodes are written in their node-list order, which fixes the link order of edges, and
`node_order: ge` is written when G-order comes from GE's sort; so loading the file back gives
the same graph. Only what differs from the defaults is written: engines only when not the op
type's default, engine table rows and op mappings only when they differ from the shipped table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from streamalloc.ir.attrs import attrs_to_plain, desc_to_plain
from streamalloc.ir.engines import default_engine_table
from streamalloc.ir.graph import GRAPH_FORMAT, ComputeGraph, Graph, Node

_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def graph_to_document(graph: Graph) -> dict[str, Any]:
    """The plain document of a graph file."""
    doc: dict[str, Any] = {"format": GRAPH_FORMAT, "name": graph.name}
    if graph.dynamic_shape:
        doc["dynamic_shape"] = True
    if graph.node_order != "given":
        doc["node_order"] = graph.node_order
    if graph.root.attrs:
        doc["attrs"] = attrs_to_plain(graph.root.attrs)
    if graph.options:
        doc["options"] = dict(graph.options)
    rows, mapping = graph.engines.changes_from(default_engine_table())
    if rows:
        doc["engines"] = [e.to_plain() for e in rows]
    if mapping:
        doc["op_engines"] = mapping
    doc["nodes"] = _nodes(graph, graph.root)
    if graph.subgraphs:
        doc["subgraphs"] = {name: _subgraph(graph, sub) for name, sub in graph.subgraphs.items()}
    if graph.partition is not None:
        doc["partition"] = [{"id": e.id, "engine": e.engine, "stream_label": e.stream_label,
                             "nodes": list(e.nodes)} for e in graph.partition]
    return doc


def _subgraph(graph: Graph, sub: ComputeGraph) -> dict[str, Any]:
    body: dict[str, Any] = {"nodes": _nodes(graph, sub)}
    if sub.attrs:
        body["attrs"] = attrs_to_plain(sub.attrs)
    return body


def _nodes(graph: Graph, compute: ComputeGraph) -> list[dict[str, Any]]:
    return [_node(graph, compute.node(name)) for name in compute.list_order]


def _node(graph: Graph, node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"name": node.name, "type": node.type}
    if node.engine != graph.engines.engine_for(node.type):
        out["engine"] = node.engine
    if node.inputs:
        out["inputs"] = ["" if ref is None else str(ref) for ref in node.inputs]
    if node.control_inputs:
        out["control_inputs"] = list(node.control_inputs)
    if node.attrs:
        out["attrs"] = attrs_to_plain(node.attrs)
    if node.outputs:
        out["outputs"] = [desc_to_plain(d) for d in node.outputs]
    if node.input_descs:
        out["input_descs"] = [desc_to_plain(d) for d in node.input_descs]
    if node.subgraphs:
        out["subgraphs"] = dict(node.subgraphs)
    for key in ("stream_id", "task_count", "cost_us"):
        if getattr(node, key) is not None:
            out[key] = getattr(node, key)
    return out


def dump_yaml(graph: Graph) -> str:
    """The graph as YAML text (block style, short lists inline)."""
    return yaml.dump(graph_to_document(graph), Dumper=_Dumper, sort_keys=False,
                     default_flow_style=None, allow_unicode=True, width=100)


def dump_json(graph: Graph) -> str:
    """The graph as JSON text, indented."""
    return json.dumps(graph_to_document(graph), indent=1, ensure_ascii=False) + "\n"


def graph_file_text(graph: Graph, path: Path) -> str:
    """The text of graph file `path`: JSON for a `.json` name, else YAML."""
    return dump_json(graph) if path.suffix == ".json" else dump_yaml(graph)
