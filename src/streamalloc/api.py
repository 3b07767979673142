"""The Python API behind the command line: load, partition, convert."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress
from operator import attrgetter
from pathlib import Path

from streamalloc.allocation import Allocation
from streamalloc.errors import InputError, UsageError
from streamalloc.graph_checks import check_op_types
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.options import check_options
from streamalloc.ir.partition import GraphPartition, partition_model
from streamalloc.ir.serialize import graph_file_text
from streamalloc.optimal.options import OptimalOptions, SolverReport
from streamalloc.outputs import write_atomic
from streamalloc.passes import PassObserver
from streamalloc.preset import preset_allocation
from streamalloc.rules import RuleSet, default_rule_set, ge_rules_for, rule_set
from streamalloc.rules.labelling import default_labels
from streamalloc.sync.driver import SYNC_STRATEGIES, synchronize
from streamalloc.sync.graph_out import synced_graph
from streamalloc.sync.result import SyncPlan

__all__ = ["SYNC_STRATEGIES", "Allocation", "Graph", "OptimalOptions", "SolverReport", "SyncPlan",
           "allocate", "check_allocatable", "check_assigning", "check_graph", "check_op_types",
           "convert_graph", "default_rule_set", "ge_rules_for", "load_graph", "load_rule_set",
           "optimal_plan", "partition_model", "plan", "read_graph", "recorded_rules",
           "synced_graph", "synchronize", "with_options", "write_atomic", "write_graph"]

_TYPE = attrgetter("type")


def convert_graph(model: str | Path, output: str | Path, *, fold: bool = True) -> Graph:
    """Load any supported model and write it as our graph format (`.json` or YAML by suffix);
    `fold=False` keeps an ONNX model's constant-only nodes as written (`load_graph`)."""
    graph = load_graph(model, fold=fold)
    write_graph(graph, output)
    return graph


def write_graph(graph: Graph, output: str | Path) -> None:
    """Write a graph file (`.json` or YAML by suffix), atomically."""
    write_atomic(output, graph_file_text(graph, Path(output)))


def with_options(graph: Graph, settings: Mapping[str, str]) -> Graph:
    """The graph with `--set KEY=VALUE` options applied (they win over the file)."""
    return graph.with_options(settings)


def read_graph(path: str | Path, settings: Mapping[str, str] | None = None,
               rules: RuleSet | None = None, *, fold: bool = True,
               settings_from: str = "--set") -> Graph:
    """Load a graph, apply `--set` options (they win over the file) and check it once:
    options (`ir.options.check_options`, exit 3 or a warning; the options `rules` gate on
    count as read) and op types (a warning). `fold=False` keeps an ONNX model's constant-only
    nodes as written (`load_graph`); `settings_from` is what an option message calls the
    origin of `settings` (`--set`, or a sweep point's options)."""
    graph = load_graph(path, fold=fold).with_options(settings or {})
    check_graph(graph, rules, settings, settings_from)
    return graph


def check_graph(graph: Graph, rules: RuleSet | None = None,
                settings: Mapping[str, str] | None = None, settings_from: str = "--set"
                ) -> None:
    """The checks `read_graph` runs: options (a message names `settings_from` for the keys of
    `settings`), then op types."""
    check_options(graph, rules.gate_options() if rules is not None else (), settings,
                  settings_from)
    check_op_types(graph)


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
    check_allocatable(graph)
    if mode == "preset":
        return preset_allocation(graph)
    if mode == "optimal":
        return optimal_plan(graph, rules, options)[0].allocation
    if mode != "ge":
        raise UsageError(f"mode {mode!r} is not available; available: {', '.join(MODES)}")
    if rules is not None and rules.is_free:
        raise InputError("rule set 'free' declares no rules and allocates nothing; it is for "
                         "--mode optimal (ge mode needs GE's rules or a file extending them)")
    if rules is not None and rules.on_free:
        raise InputError(f"{rules.source}: rule set {rules.name!r} is built on 'free': its "
                         "rules alone bind --mode optimal, whose baseline runs them over GE's "
                         "default rules; to run them in ge mode, build the file on GE's rules "
                         "(`extends: ge-static-multi-stream`)")
    if rules is not None:
        check_assigning(rules, graph)
    return allocate_ge(graph, rules, observer=observer)


# Rule kinds that give every subgraph a stream; a ge-mode rule set needs one enabled.
ASSIGNING_KINDS = ("assign-by-dependency", "assign-by-label", "single-stream",
                   "dynamic-engine-streams")
SYNC_TYPES = ("Send", "Recv", "SendNotify", "RecvNotify")


def check_assigning(rules: RuleSet, graph: Graph | None = None) -> None:
    """Ge mode, and so the optimal mode's baseline, needs a rule that gives every subgraph a
    stream (exit 3 before any pass, not GE's failure on a node left without one): one enabled
    under `graph`'s options, or without a graph (`rules check`) one at all. The dynamic flow
    needs none: it starts every node on stream 0 (GE's dynamic-shape allocator without
    ENABLE_DYNAMIC_SHAPE_MULTI_STREAM); `free` is for the optimal mode alone."""
    if rules.flow == "dynamic" or rules.binds_optimal_only:  # (the optimal mode's baseline
        return  # then runs GE's default rules: `rules.ge_rules_for`)
    kept = rules.rules if graph is None else [r for r in rules.rules if r.enabled(graph.options)]
    if not any(r.kind in ASSIGNING_KINDS for r in kept):
        which, where = ("", "") if graph is None else (" enabled", f" for graph {graph.name!r}")
        raise InputError(
            f"{rules.source}: rule set {rules.name!r} has no{which} rule that assigns streams "
            f"(one of the kinds {', '.join(ASSIGNING_KINDS)}){where}, so ge "
            "mode, and the optimal mode's baseline, would leave nodes without a stream; add "
            "`extends: ge-static-multi-stream` (or another shipped rule set) to build on GE's "
            "rules, or add such a rule")


def check_allocatable(graph: Graph) -> None:
    """A graph that already carries its Send/Recv tasks (`allocate --graph-out`, a built GE
    graph) cannot be allocated again: its sync nodes would be synchronized a second time."""
    nodes = graph.t_ordered_nodes()
    synced = [n.name for n in compress(nodes, map(SYNC_TYPES.__contains__, map(_TYPE, nodes)))]
    if synced:
        raise InputError(
            f"{graph.source or graph.name}: graph {graph.name!r} already has {len(synced)} "
            f"Send/Recv node(s) (e.g. {synced[0]!r}): it is a synchronized graph, such as "
            "`allocate --graph-out` writes; allocate the graph it was made from (sync tasks are "
            "generated, not allocated), or check its streams with `verify GRAPH PLAN`")


def optimal_plan(graph: Graph, rules: RuleSet | None = None,
                 options: OptimalOptions | None = None) -> tuple[SyncPlan, SolverReport]:
    """The optimal mode's verified plan and the solver's report (the plan's `solver` block)."""
    from streamalloc.optimal.driver import allocate_optimal  # OR-Tools: only when solving
    check_allocatable(graph)
    if rules is not None:  # the baseline is ge mode under what it runs for them
        check_assigning(ge_rules_for(rules, graph), graph)
    return allocate_optimal(graph, rules, options or OptimalOptions())


def recorded_rules(graph: Graph, rules: RuleSet | None, report: SolverReport) -> RuleSet:
    """The rule set an optimal plan records, to verify it against: where the baseline was kept
    (`FALLBACK`), what ge mode ran for `rules` (`ge_rules_for`); else `rules`, GE's when None
    (`free` states no constraint)."""
    if report.status == "FALLBACK":
        return ge_rules_for(rules, graph)
    return rules or default_rule_set(graph)


def plan(graph: Graph, rules: RuleSet | None = None, mode: str = "ge",
         sync: str = "ge") -> SyncPlan:
    """Allocate, synchronize and split: the full plan (formats.md section 3). `sync` picks
    the event elimination: "ge" (GE's optimisations) or "minimal" (transitive reduction)."""
    return synchronize(graph, allocate(graph, rules, mode), sync)


def partitions(graph: Graph) -> dict[str, GraphPartition]:
    """GE's engine-subgraph partition of every graph of the model."""
    return partition_model(graph, default_labels(graph))
