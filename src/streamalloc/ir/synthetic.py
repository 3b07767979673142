"""Synthetic graphs for benchmarks and property tests: seeded, deterministic, any size.

A layered DAG resembling a real network: a chain of blocks, each with parallel branches of
compute ops joined by an add, with AI CPU ops, HCCL collectives and labels sprinkled in.
"""

from __future__ import annotations

import numpy as np

from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.builder import GraphBuilder
from streamalloc.ir.graph import DataInput, Graph

_BRANCH_OPS = ("Conv2D", "Relu", "MatMul", "Mul", "Cast", "TransData")


def layered_graph(nodes: int, *, branches: int = 3, seed: int = 0, hccl_every: int = 50,
                  aicpu_every: int = 37, label_every: int = 0) -> Graph:
    """About `nodes` nodes in blocks of `branches` parallel chains; deterministic for a seed.

    >>> g = layered_graph(200, seed=1)
    >>> g.node_count() >= 200, g.root.nodes[0].type
    (True, 'Data')
    """
    rng = np.random.default_rng(seed)
    builder = GraphBuilder(f"layered_{nodes}_{seed}")
    builder.add_node("input", "Data")
    last, count, block = "input", 1, 0
    while count < nodes:
        last, added = _block(builder, rng, (last, block, branches),
                             (hccl_every, aicpu_every, label_every))
        count += added
        block += 1
    builder.add_node("output", "NetOutput", inputs=[DataInput(last)])
    return builder.build()


def _block(builder: GraphBuilder, rng: np.random.Generator, where: tuple[str, int, int],
           every: tuple[int, int, int]) -> tuple[str, int]:
    source, block, branches = where
    hccl_every, aicpu_every, label_every = every
    ends, added = [], 0
    for b in range(branches):
        prev = source
        for step in range(int(rng.integers(1, 4))):
            name = f"b{block}_{b}_{step}"
            serial = block * 10 + b * 3 + step
            op = _op(rng, serial, hccl_every, aicpu_every)
            attrs: dict[str, AttrValue] = {}
            if label_every and serial % label_every == 0:
                attrs["_stream_label"] = AttrValue("string", f"L{serial % 3}")
            builder.add_node(name, op, inputs=[DataInput(prev)], attrs=attrs)
            prev, added = name, added + 1
        ends.append(DataInput(prev))
    join = f"b{block}_join"
    builder.add_node(join, "Add", inputs=ends)
    return join, added + 1


def _op(rng: np.random.Generator, serial: int, hccl_every: int, aicpu_every: int) -> str:
    if hccl_every and serial % hccl_every == hccl_every - 1:
        return "HcomAllReduce"
    if aicpu_every and serial % aicpu_every == aicpu_every - 1:
        return "NonZero"
    return _BRANCH_OPS[int(rng.integers(len(_BRANCH_OPS)))]
