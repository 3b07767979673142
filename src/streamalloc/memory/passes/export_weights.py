"""External weight export (`ge.externalWeight` 1 or 2): constants become FileConstants.

Every Const / Constant node with weight bytes (`value` tensor attribute) in the root graph and
its subgraphs is replaced by a FileConstant of the same name and outputs whose `location`,
`offset` and `length` attributes point at the weight in the written file(s); see
file_constant.py for the layout. Nodes without weight bytes (ONNX initializers whose data was not
loaded, stripped weights) stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.graph import Graph
from streamalloc.memory.file_constant import (
    LENGTH,
    LOCATION,
    OFFSET,
    FileLocation,
    WeightWriter,
    export_mode,
)
from streamalloc.memory.passes.base import PassResult, VarPassContext
from streamalloc.memory.passes.graph_edit import GraphDraft, NodeDraft

WEIGHT_TYPES = frozenset({"Const", "Constant"})


def _weight(node: NodeDraft) -> bytes | None:
    value = node.attrs.get("value")
    if value is None or value.kind != "tensor" or not value.value.data:
        return None
    return bytes(value.value.data)


@dataclass(frozen=True)
class FileConstantExportPass:
    """Write weights to files in `directory`; `mode` 0 reads `ge.externalWeight` from the graph."""

    name: ClassVar[str] = "file-constant-export"
    directory: Path = field(default_factory=Path)
    mode: int = 0

    def apply(self, graph: Graph, ctx: VarPassContext | None = None) -> PassResult:
        """The graph with FileConstants (files written); unchanged when export is off."""
        mode = self.mode or export_mode(graph.options)
        if mode == 0:
            return PassResult(graph, False)
        draft = GraphDraft(graph)
        writer = WeightWriter.create(self.directory, mode)
        for compute in graph.graphs():
            for node in draft.direct(compute.name):
                data = _weight(node) if node.type in WEIGHT_TYPES else None
                if data is not None:
                    _to_file_constant(node, writer.place(node.name, data))
        if not writer.files:
            return PassResult(graph, False)
        new = draft.build()
        writer.write()
        return PassResult(new, True)


def _to_file_constant(node: NodeDraft, where: FileLocation) -> None:
    node.attrs.pop("value")
    node.type, node.engine = "FileConstant", None
    node.attrs[LOCATION] = AttrValue("string", where.path)
    node.attrs[OFFSET] = AttrValue("int", where.offset)
    node.attrs[LENGTH] = AttrValue("int", where.length)
