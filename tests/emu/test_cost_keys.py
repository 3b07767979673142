"""The cost model's kernel keys read the tensors as `input_descs` resolves them.

`CostModel.kernel_key` takes the descriptions of a node's inputs from the producers' output
keys it made once per model, and, when no node describes its outputs, counts the connected
inputs as unknown without looking at the producers. Both must give the key the descriptions
themselves give.
"""

from __future__ import annotations

from operator import attrgetter

import pytest
from real_models import real_models

from streamalloc.ir import DataInput, GraphBuilder, TensorDesc
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.runtime_emu.cost_model import CostModel
from streamalloc.runtime_emu.cost_table import default_cost_table

_desc_key = attrgetter("shape", "dtype", "format")


def _mixed_graph() -> Graph:
    """Producers with and without output descriptions, a port past the described outputs, an
    unconnected slot and a node with its own input descriptions."""
    b = GraphBuilder("mixed")
    b.add_node("x", "Data", outputs=[TensorDesc((1, 64), "float16")])
    b.add_node("y", "Data")
    b.add_node("mm", "MatMul", inputs=[DataInput("x"), DataInput("y")],
               outputs=[TensorDesc((1, 64), "float16")])
    b.add_node("add", "Add", inputs=[DataInput("mm"), None, DataInput("x")])
    b.add_node("own", "Relu", inputs=[DataInput("y"), DataInput("add")],
               input_descs=[TensorDesc((2, 2), "float32")])
    return b.build()


MODELS = [real_models()[i] for i in (0, -5, -1)]  # ONNX, a transformer, a GE dump
GRAPHS = {"mixed": _mixed_graph, "undescribed": lambda: layered_graph(300, seed=2),
          **{path.name[:40]: (lambda path=path: load_graph(path)) for path in MODELS}}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_input_keys_are_those_of_the_resolved_descriptions(name: str) -> None:
    graph = GRAPHS[name]()
    model = CostModel(graph, default_cost_table())
    for node in graph.all_nodes():
        expected = tuple(map(_desc_key, model.input_descs(node)))
        assert model._input_keys(node) == expected, node.name
