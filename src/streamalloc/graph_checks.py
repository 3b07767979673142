"""Checks of a loaded graph file that need more than the IR: op types that look like typos
(against the engine table, the cost table, ONNX and `train-step`). Kept apart from `api` so
that the commands that only read a graph and a plan (verify, emulate, vars) need not import the
allocators."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

from streamalloc.errors import InputWarning
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import GRAPH_SUFFIXES
from streamalloc.ir.op_types import known_op_type, near_op_type
from streamalloc.runtime_emu.cost_table import default_cost_table


def check_op_types(graph: Graph) -> None:
    """One `InputWarning` for the op types of a graph file (YAML/JSON: written by hand, where a
    typo goes unnoticed) that look like a typo of a known type: run on the default engine (the
    engine table does not map them), unknown to the cost table, ONNX and `train-step`, and
    within an edit distance of 2 (or a case change) of a type one of those knows. Other unknown
    types are custom ops of the default engine and pass silently; ONNX models and GE dumps
    name their types themselves and are not checked."""
    if Path(graph.source).suffix.lower() not in GRAPH_SUFFIXES:
        return
    costs = default_cost_table().ops
    table = graph.engines.op_engines
    default = graph.engines.default_engine
    # every node, without the T-order walk (counts do not depend on the order)
    on_default = Counter([n.type for n in graph.by_name.values() if n.engine == default])
    unknown = {t: count for t, count in on_default.items()
               if t not in table and not known_op_type(t, costs)}
    typos = {t: meant for t in unknown
             if (meant := near_op_type(t, [*table, *costs])) is not None}
    if typos:
        types = ", ".join(f"{t} ({unknown[t]} node(s); did you mean {typos[t]}?)"
                          for t in sorted(typos))
        warnings.warn(f"{graph.source}: {sum(unknown[t] for t in typos)} node(s) of unknown op "
                      f"type(s), placed on {default} at the default cost: {types}",
                      InputWarning, stacklevel=2)
