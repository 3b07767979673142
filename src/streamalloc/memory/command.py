"""`streamalloc vars GRAPH [-o vars.json]`: the variable plan of a graph, printed and written."""

from __future__ import annotations

from pathlib import Path

from streamalloc.ir.loaders import load_graph
from streamalloc.memory.plan import plan_json_text, plan_text, variable_plan
from streamalloc.outputs import write_atomic


def vars_command(graph_path: str, output: str | None = None) -> str:
    """Plan the graph's variables; write the plan JSON atomically to `output` if given.

    Returns the table text to print. Raises GraphLoadError / VarGraphError (exit 3) for bad
    input, VarMemoryExhausted (exit 4) when the variables do not fit, UsageError (exit 2) when
    the output cannot be written. Nothing is written when the command fails.
    """
    plan = variable_plan(load_graph(graph_path))
    if output is not None:
        write_atomic(Path(output), plan_json_text(plan))
    return plan_text(plan)
