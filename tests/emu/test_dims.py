"""A multi-dims Case runs one dim (sync spec 4.2): the emulator runs the chosen one and skips
the tasks of the others, which is what lets the dims share event ids."""

from __future__ import annotations

from streamalloc.api import plan
from streamalloc.ir import AttrValue, DataInput, GraphBuilder
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.program import NOP, TASK


def two_dims() -> Graph:
    """Each dim of `case` runs a (stream 1) -> b (stream 2): one event id for both dims."""
    builder = GraphBuilder("dims")
    builder.add_node("x", "Relu", stream_id=0)
    builder.add_node("case", "Case", inputs=[DataInput("x")], stream_id=0,
                     attrs={"_batch_num": AttrValue("int", 2)},
                     subgraphs=[("branch0", "d0"), ("branch1", "d1")])
    for dim in ("d0", "d1"):
        builder.add_subgraph(dim)
        builder.add_node(f"{dim}_in", "Data", graph=dim,
                         attrs={"_parent_node_index": AttrValue("int", 0)})
        builder.add_node(f"{dim}_a", "Relu", graph=dim, stream_id=1,
                         inputs=[DataInput(f"{dim}_in")])
        builder.add_node(f"{dim}_b", "Relu", graph=dim, stream_id=2,
                         inputs=[DataInput(f"{dim}_a")])
    return builder.build()


def test_each_dim_runs_alone() -> None:
    graph = two_dims()
    document = plan(graph, mode="preset").to_json()
    assert document["event_count"] == 1  # the dims share the id of a -> b
    for dim, (runs, skipped) in enumerate((("d0", "d1"), ("d1", "d0"))):
        result = emulate(graph, document, dim=dim)
        assert result.status == "ok"
        kinds = dict(zip(result.program.names, result.program.kinds, strict=True))
        assert kinds[f"{runs}_a"] == TASK and kinds[f"{skipped}_a"] == NOP
        skipped_syncs = [n for n, k in kinds.items() if "_Reuse_" in n or n.endswith("_0")]
        assert sum(kinds[n] == NOP for n in skipped_syncs) == 2  # one Send, one Recv
