"""Fixtures of the emulator tests: the swappable plan maker, example files, graph helpers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamalloc.api import with_options
from streamalloc.commands.emulate import ge_plan
from streamalloc.ir import DataInput, Graph, GraphBuilder
from streamalloc.ir.attrs import AttrValue

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans"

PlanMaker = Callable[[Graph], dict[str, Any]]


def ge_mode_plan(graph: Graph) -> dict[str, Any]:
    """The verified ge-mode plan (formats.md section 3), with parallel options so that real
    models get several streams and events."""
    return ge_plan(with_options(graph, PARALLEL))


PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


@pytest.fixture(scope="session")
def make_plan() -> PlanMaker:
    """The plan maker of the property and real-model tests (session scope: hypothesis-safe)."""
    return ge_mode_plan


def chain_graph(name: str, costs: dict[str, float], edges: list[tuple[str, str]],
                dims: dict[str, int] | None = None) -> Graph:
    """A graph of Relu nodes with the given costs (insertion order), data edges and block dims
    (the `block_dim` attribute; without one a node with a cost takes one AI core)."""
    b = GraphBuilder(name)
    b.add_node("data", "Data")
    inputs: dict[str, list[str]] = {n: [] for n in costs}
    for src, dst in edges:
        inputs[dst].append(src)
    for node, cost in costs.items():
        dim = (dims or {}).get(node)
        attrs = None if dim is None else {"block_dim": AttrValue("int", dim)}
        b.add_node(node, "Relu", inputs=[DataInput(s) for s in inputs[node] or ["data"]],
                   cost_us=cost, attrs=attrs)
    return b.build()


def plan_dict(graph: str, streams: dict[int, list[str]], sync: list[tuple[str, str, int, int]]
              = (), activations: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """A minimal plan: streams, sync nodes as (name, type, stream, id), activations."""
    return {"format": "streamalloc.plan/v1", "graph": graph,
            "streams": {str(s): names for s, names in streams.items()},
            "sync_nodes": [{"name": n, "type": t, "stream": s, "event": e} for n, t, s, e in sync],
            "stream_activations": activations or {}}
