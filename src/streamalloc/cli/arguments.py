"""Read a command's parsed arguments into the API's inputs: the graph options `--set` gives, the
graph, the optimal mode's options (flags checked against the mode and their ranges), and the
instrument of `--print-after` / `--dump-dir`; a bad value is a UsageError. Heavy modules are
imported inside the functions, as in the handlers."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from streamalloc.errors import UsageError

if TYPE_CHECKING:
    from streamalloc import api
    from streamalloc.passes import PassPrinter
    from streamalloc.rules import RuleSet


def graph_options(items: list[str]) -> dict[str, str]:
    """The graph options of `--set KEY=VALUE` items."""
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE, e.g. ge.hcomParallel=1")
        result[key] = value
    return result


def read_graph(path: str, args: argparse.Namespace,
                rules: RuleSet | None = None) -> api.Graph:
    """The graph of a command, with its --set options, checked once (api.read_graph)."""
    from streamalloc import api
    return api.read_graph(path, graph_options(getattr(args, "set", None) or []), rules)


def loaded_graph(path: str) -> api.Graph:
    """A graph whose options the command merges itself (verify, emulate, vars): loaded, its
    op types checked; the command checks the merged options."""
    from streamalloc.graph_checks import check_op_types  # not `api`: no allocator needed
    from streamalloc.ir.loaders import load_graph
    graph = load_graph(path)
    check_op_types(graph)
    return graph


def pass_printer(args: argparse.Namespace, graph: api.Graph,
                  rules: RuleSet | None) -> PassPrinter | None:
    """The instrument of --print-after and --dump-dir (None without them)."""
    from streamalloc import api
    from streamalloc.passes import PassPrinter
    from streamalloc.sync.driver import SYNC_STAGE_NAMES
    if args.print_after is None and args.dump_dir is None:
        return None
    names = None
    if args.print_after not in (None, "all"):
        ran = (rules or api.default_rule_set(graph)).rules if args.mode == "ge" else ()
        valid = [*(r.name for r in ran), *SYNC_STAGE_NAMES]
        if args.print_after not in valid:
            raise UsageError(f"--print-after {args.print_after!r}: no pass of that name; valid: "
                             f"all, {', '.join(valid)}")
        names = {args.print_after}
    return PassPrinter(names, sys.stderr if args.print_after else None,
                       Path(args.dump_dir) if args.dump_dir else None)


OPTIMAL_FLAGS = {"objective": "--objective", "concurrency": "--concurrency",
                 "makespan_slack": "--makespan-slack", "event_budget": "--event-budget",
                 "time_limit": "--time-limit", "seed": "--seed", "workers": "--workers",
                 "cost": "--cost"}  # OptimalOptions field (or the cost file) -> flag


def optimal_options(args: argparse.Namespace) -> api.OptimalOptions:
    """The optimal mode's settings: the ones given (UsageError for a value out of range, the
    ranges of the sweep file's schema), the others OptimalOptions' defaults."""
    from streamalloc import api
    from streamalloc.runtime_emu.cost_table import load_cost_table
    if getattr(args, "print_after", None) is not None or getattr(args, "dump_dir", None):
        raise UsageError("--print-after and --dump-dir instrument the ge and preset modes")
    given = {field: getattr(args, field) for field in OPTIMAL_FLAGS
             if getattr(args, field) is not None}
    for field, least in (("makespan_slack", 0), ("time_limit", 0), ("event_budget", 0),
                         ("workers", 1)):
        if field in given and (given[field] < least or not math.isfinite(given[field])):
            raise UsageError(f"{OPTIMAL_FLAGS[field]} {given[field]:g}: expected a finite "
                             f"number >= {least}")  # NaN is none: neither below nor above
    if "event_budget" in given and given.get("objective", "events") != "makespan":
        raise UsageError("--event-budget bounds the events of --objective makespan (the events "
                         "objective needs the fewest already); add --objective makespan")
    cost = given.pop("cost", None)
    return api.OptimalOptions(**given, sync=getattr(args, "sync", None) or "minimal",
                              costs=load_cost_table(cost) if cost else None)


def check_compare_flags(args: argparse.Namespace, modes: Sequence[str]) -> None:
    """UsageError for an optimal mode's flag when `compare` runs no optimal mode (`--cost`
    excepted: every mode's plan is emulated under it)."""
    if "optimal" not in modes:
        _refuse_optimal_flags(args, "the optimal mode", "add optimal to --modes",
                              f"--modes {','.join(modes)}", kept=("cost",))


def check_optimal_flags(args: argparse.Namespace) -> None:
    """UsageError for an optimal mode's flag given in another mode."""
    if args.mode != "optimal":
        _refuse_optimal_flags(args, "--mode optimal", "add --mode optimal", f"--mode {args.mode}")


def _refuse_optimal_flags(args: argparse.Namespace, reader: str, way: str, given: str, *,
                          kept: Sequence[str] = ()) -> None:
    """UsageError naming the optimal mode's flags given (but `kept`), which only `reader`
    reads: `way` is the fix, `given` what the command line says instead."""
    flags = [flag for field, flag in OPTIMAL_FLAGS.items()
             if field not in kept and getattr(args, field) is not None]
    if flags:
        raise UsageError(f"{', '.join(flags)}: only {reader} reads "
                         f"{'it' if len(flags) == 1 else 'them'}; {way} (this is {given})")

