"""MiniDAGStreamPass (spec 6): the auto multi-stream DAG allocator, a custom stream pass.

Runs only when ge.autoMultistreamParallelMode (root graph attribute first, else the option)
parses to a DAG mode (LoadBalance:N, MainStream:N, WeightedLoadBalance:N with N in 1..64);
`cv`, `default` and no mode leave the plan unchanged; anything else is GE's error E10001.
"""

from __future__ import annotations

import re

from streamalloc.errors import AllocationInfeasible, OptionError
from streamalloc.heuristic.plan import ModelPlan
from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import auto_multistream_mode
from streamalloc.rules.model import Rule

DAG_STRATEGIES = ("LoadBalance", "MainStream", "WeightedLoadBalance")
_MODE = re.compile(r"^(LoadBalance|MainStream|WeightedLoadBalance):([0-9]+)$")


def parse_dag_mode(graph: Graph) -> tuple[str, int] | None:
    """(strategy, max streams) of a DAG mode, None for no/cv/default mode; OptionError else."""
    mode = auto_multistream_mode(graph)
    from_attr = "ge.autoMultistreamParallelMode" in graph.root.attrs
    if mode in ("", "cv") or (mode == "default" and from_attr):
        return None
    found = _MODE.match(mode)
    if found is None or not 1 <= int(found.group(2)) <= 64:
        raise OptionError(f"{graph.source}: ge.autoMultistreamParallelMode is {mode!r}; valid: "
                          "'cv', 'default' (graph attribute only), or STRATEGY:N with STRATEGY "
                          f"one of {', '.join(DAG_STRATEGIES)} and N in 1..64 (GE E10001)")
    return found.group(1), int(found.group(2))


def apply(rule: Rule, graph: Graph, plan: ModelPlan) -> ModelPlan:
    """Replace engine-based streams by DAG streams when a DAG mode is set."""
    mode = parse_dag_mode(graph)
    if mode is None:
        return plan
    raise AllocationInfeasible(f"{graph.source}: auto multi-stream mode {mode[0]}:{mode[1]} "
                               "(GE's MiniDAGStreamPass) is not supported yet")
