"""The Python API behind the command line: load, partition, convert."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from streamalloc.allocation import Allocation
from streamalloc.errors import InputError, UsageError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import GraphPartition, partition_model
from streamalloc.ir.serialize import dump_json, dump_yaml
from streamalloc.optimal import FREE, OptimalOptions, SolverReport, allocate_optimal
from streamalloc.outputs import write_atomic
from streamalloc.passes import PassObserver
from streamalloc.preset import preset_allocation
from streamalloc.rules import RuleSet, default_rule_set, rule_set
from streamalloc.rules.labelling import default_labels
from streamalloc.sync.driver import SYNC_STRATEGIES, synchronize
from streamalloc.sync.graph_out import synced_graph
from streamalloc.sync.result import SyncPlan

__all__ = ["SYNC_STRATEGIES", "Allocation", "Graph", "OptimalOptions", "SolverReport", "SyncPlan",
           "allocate",
           "convert_graph", "default_rule_set", "load_graph", "load_rule_set", "optimal_plan",
           "partition_model", "plan", "synced_graph", "synchronize", "with_options",
           "write_atomic", "write_graph"]


def convert_graph(model: str | Path, output: str | Path) -> Graph:
    """Load any supported model and write it as our graph format (`.json` or YAML by suffix)."""
    graph = load_graph(model)
    write_graph(graph, Path(output))
    return graph


def write_graph(graph: Graph, output: Path) -> None:
    """Write a graph file (`.json` or YAML by suffix), atomically."""
    write_atomic(output, dump_json(graph) if output.suffix == ".json" else dump_yaml(graph))


def with_options(graph: Graph, settings: Mapping[str, str]) -> Graph:
    """The graph with `--set KEY=VALUE` options applied (they win over the file)."""
    return graph.with_options(settings)


def load_rule_set(path: str | Path | None) -> RuleSet | None:
    """A rule file or shipped rule set name given with --rules (None: GE's rules for the graph)."""
    return None if path is None else rule_set(path)


MODES = ("ge", "preset", "optimal")


def allocate(graph: Graph, rules: RuleSet | None = None, mode: str = "ge",
             observer: PassObserver | None = None,
             options: OptimalOptions | None = None) -> Allocation:
    """Logical stream allocation of `graph` in the given mode. `observer` is told after every
    pass of the ge mode (`PassPrinter` is the one behind `--print-after`); preset mode runs
    no passes; optimal mode (`options`) solves, syncs and checks, see `optimal_plan`."""
    if mode == "preset":
        return preset_allocation(graph)
    if mode == "optimal":
        return optimal_plan(graph, rules, options)[0].allocation
    if mode != "ge":
        raise UsageError(f"mode {mode!r} is not available; available: {', '.join(MODES)}")
    if rules is not None and rules.name == FREE:
        raise InputError("rule set 'free' declares no rules and allocates nothing; it is for "
                         "--mode optimal (ge mode needs GE's rules or a file extending them)")
    return allocate_ge(graph, rules, observer=observer)


def optimal_plan(graph: Graph, rules: RuleSet | None = None,
                 options: OptimalOptions | None = None) -> tuple[SyncPlan, SolverReport]:
    """The optimal mode's verified plan and the solver's report (the plan's `solver` block)."""
    return allocate_optimal(graph, rules, options or OptimalOptions())


def plan(graph: Graph, rules: RuleSet | None = None, mode: str = "ge",
         sync: str = "ge") -> SyncPlan:
    """Allocate, synchronize and split: the full plan (formats.md section 3). `sync` picks
    the event elimination: "ge" (GE's optimisations) or "minimal" (transitive reduction)."""
    return synchronize(graph, allocate(graph, rules, mode), sync)


def partitions(graph: Graph) -> dict[str, GraphPartition]:
    """GE's engine-subgraph partition of every graph of the model."""
    return partition_model(graph, default_labels(graph))
