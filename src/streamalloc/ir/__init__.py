"""The graph IR: immutable graphs, nodes and engines, the builder that verifies them, loaders."""

from streamalloc.ir.adjacency import Consumer
from streamalloc.ir.attrs import AttrValue, NamedAttrs, TensorValue
from streamalloc.ir.builder import GraphBuilder, parse_ref
from streamalloc.ir.engines import Engine, EngineTable, default_engine_table
from streamalloc.ir.graph import ComputeGraph, DataInput, Graph, Node, PartitionEntry
from streamalloc.ir.tensor import TensorDesc

__all__ = [
    "AttrValue", "ComputeGraph", "Consumer", "DataInput", "Engine", "EngineTable", "Graph",
    "GraphBuilder", "NamedAttrs", "Node", "PartitionEntry", "TensorDesc", "TensorValue",
    "default_engine_table", "parse_ref",
]
