"""The `streamalloc` command line: parse arguments, call the API, print. Exit codes: errors.py."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from streamalloc import __version__
from streamalloc.errors import InputWarning, StreamallocError, UsageError
from streamalloc.outputs import Progress

if TYPE_CHECKING:
    from streamalloc import api
    from streamalloc.passes import PassPrinter
    from streamalloc.rules import RuleSet

# Heavy modules (numpy, networkx, ortools, onnx behind them) are imported inside the handlers,
# so that `--version` and `--help` answer at once. The choices below are their constants, kept
# equal to them by tests/test_user_errors.py.
MODES = ("ge", "preset", "optimal")  # api.MODES
SYNC_STRATEGIES = ("ge", "minimal")  # sync.driver.SYNC_STRATEGIES
COMPARE_MODES = ("ge", "ge-minimal", "optimal")  # commands.compare.MODES
ALLREDUCE_MODES = ("per-gradient", "bucketed")  # ir.training.ALLREDUCE_MODES
DEFAULT_BUCKET = 16  # ir.training.DEFAULT_BUCKET
# The files users write (graph, rules, sweep-spec) and the files the tool writes (plan, vars,
# emulation, compare, sweep): `streamalloc schema KIND`.
SCHEMA_KINDS = ("compare", "emulation", "graph", "plan", "rules", "sweep", "sweep-spec", "vars")


def schemas() -> dict[str, Any]:
    """The JSON Schema of every file format, by kind."""
    from streamalloc.commands.sweep_spec import SPEC_SCHEMA
    from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
    from streamalloc.rules.schema import RULES_SCHEMA
    from streamalloc.schemas import SCHEMAS as OUTPUT_SCHEMAS
    return {"graph": GRAPH_SCHEMA, "rules": RULES_SCHEMA, "sweep-spec": SPEC_SCHEMA,
            **OUTPUT_SCHEMAS}


def _settings(items: list[str]) -> dict[str, str]:
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE, e.g. ge.hcomParallel=1")
        result[key] = value
    return result


def _read_graph(path: str, args: argparse.Namespace,
                rules: RuleSet | None = None) -> api.Graph:
    """The graph of a command, with its --set options, checked once (api.read_graph)."""
    from streamalloc import api
    return api.read_graph(path, _settings(getattr(args, "set", None) or []), rules)


def _loaded_graph(path: str) -> api.Graph:
    """A graph whose options the command merges itself (verify, emulate, vars): loaded, its
    op types checked; the command checks the merged options."""
    from streamalloc.graph_checks import check_op_types  # not `api`: no allocator needed
    from streamalloc.ir.loaders import load_graph
    graph = load_graph(path)
    check_op_types(graph)
    return graph


def _allocated(args: argparse.Namespace) -> tuple[api.Graph, api.Allocation]:
    from streamalloc import api
    rules = api.load_rule_set(args.rules)
    graph = _read_graph(args.graph, args, rules)
    return graph, api.allocate(graph, rules, args.mode)


def _pass_printer(args: argparse.Namespace, graph: api.Graph,
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


def _allocate(args: argparse.Namespace) -> int:
    from streamalloc import api, collector
    from streamalloc.verify import verify_plan
    _check_optimal_flags(args)
    given = api.load_rule_set(args.rules)
    graph = _read_graph(args.graph, args, given)
    if args.mode == "optimal":
        return _allocate_optimal(args, graph, given)
    printer = _pass_printer(args, graph, given)
    allocation = api.allocate(graph, given, args.mode, observer=printer)
    plan = api.synchronize(graph, allocation, sync=args.sync or "ge", observer=printer)
    with collector.paused():
        document = plan.to_json()
        rules = (given or api.default_rule_set(graph)) if args.mode == "ge" else None
        _write_plan(args, graph, plan, document,
                    lambda: verify_plan(graph, document, rules=rules).raise_for_failure())
    collector.hold(graph, allocation, plan, document)
    return 0


def _allocate_optimal(args: argparse.Namespace, graph: api.Graph, given: RuleSet | None) -> int:
    from streamalloc import api
    from streamalloc.report.allocation_report import solver_summary
    from streamalloc.verify import verify_plan
    began = time.perf_counter()
    plan, report = api.optimal_plan(graph, given, _optimal_options(args))
    document = {**plan.to_json(), "solver": report.to_json()}
    # the rule set the plan records: the given one (`free` states no constraint), else GE's
    rules = given or api.default_rule_set(graph)
    _write_plan(args, graph, plan, document,
                lambda: verify_plan(graph, document, rules=rules).raise_for_failure())
    if not args.json:
        sys.stdout.write(solver_summary(report.to_json(), time.perf_counter() - began))
    return 0


OPTIMAL_FLAGS = {"objective": "--objective", "concurrency": "--concurrency",
                 "makespan_slack": "--makespan-slack", "event_budget": "--event-budget",
                 "time_limit": "--time-limit", "seed": "--seed", "workers": "--workers",
                 "cost": "--cost"}  # OptimalOptions field (or the cost file) -> flag


def _optimal_options(args: argparse.Namespace) -> api.OptimalOptions:
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
        if field in given and given[field] < least:
            raise UsageError(f"{OPTIMAL_FLAGS[field]} {given[field]:g}: expected a number >= "
                             f"{least}")
    if "event_budget" in given and given.get("objective", "events") != "makespan":
        raise UsageError("--event-budget bounds the events of --objective makespan (the events "
                         "objective needs the fewest already); add --objective makespan")
    cost = given.pop("cost", None)
    return api.OptimalOptions(**given, sync=getattr(args, "sync", None) or "minimal",
                              costs=load_cost_table(cost) if cost else None)


def _check_optimal_flags(args: argparse.Namespace) -> None:
    """UsageError for an optimal mode's flag given in another mode."""
    flags = [flag for field, flag in OPTIMAL_FLAGS.items() if getattr(args, field) is not None]
    if flags and args.mode != "optimal":
        raise UsageError(f"{', '.join(flags)}: only --mode optimal reads "
                         f"{'it' if len(flags) == 1 else 'them'}; add --mode optimal (this is "
                         f"--mode {args.mode})")


def _write_plan(args: argparse.Namespace, graph: api.Graph, plan: api.SyncPlan,
                document: dict[str, object], verify: Callable[[], None]) -> None:
    """Write what was asked for once the plan verified (`verify` raises when it does not),
    then print the tables (or the plan JSON with --json, or the per-node table with
    --nodes)."""
    from streamalloc.commands.plan_outputs import PlanOutputs, verified_outputs
    outputs = PlanOutputs(Path(args.output) if args.output else None,
                          Path(args.graph_out) if args.graph_out else None, args.json,
                          args.nodes)
    sys.stdout.write(verified_outputs(graph, plan, document, outputs, verify))


def _compare(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.commands.compare import CompareSettings, compare_command, parse_modes
    from streamalloc.outputs import write_bytes_atomic
    settings = CompareSettings(parse_modes(args.modes), api.load_rule_set(args.rules),
                               _settings(args.set), _optimal_options(args))
    sys.stdout.write(compare_command(args.graphs, settings, json_out=args.json, plot=args.plot,
                                     write=write_bytes_atomic))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from streamalloc.commands.sweep import sweep_command
    from streamalloc.outputs import write_atomic
    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    sys.stdout.write(sweep_command(args.spec, jobs=jobs,
                                   ray=args.ray, json_out=args.json, output=args.output,
                                   markdown=args.md, write=write_atomic))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.report.allocation_report import explain_node
    _check_optimal_flags(args)
    if args.mode != "optimal":
        graph, allocation = _allocated(args)
        solver = None
    else:
        from streamalloc.optimal.driver import solver_constraints
        given = api.load_rule_set(args.rules)
        graph = _read_graph(args.graph, args, given)
        options = _optimal_options(args)
        plan, report = api.optimal_plan(graph, given, options)
        allocation = plan.allocation
        solver = (f"--objective {options.objective}, --concurrency {options.concurrency}; "
                  f"status {report.status}" + (f", phase {report.phase}" if report.phase else ""),
                  solver_constraints(graph, given))
    if args.node not in allocation.nodes:
        raise UsageError(f"graph {graph.name!r} has no node {args.node!r}")
    sys.stdout.write(explain_node(graph, allocation, args.node, solver))
    return 0


def _emulate(args: argparse.Namespace) -> int:
    from streamalloc.commands.emulate import emulate_command
    text, code = emulate_command(_loaded_graph(args.graph), args.plan, json_out=args.json,
                                 trace=args.trace, gantt=args.gantt, cost=args.cost,
                                 verify=args.verify, settings=_settings(args.set))
    sys.stdout.write(text)
    return code


def _verify(args: argparse.Namespace) -> int:
    from streamalloc.verify import verify_command
    text, code = verify_command(_loaded_graph(args.graph), args.plan, rules=args.rules,
                                settings=_settings(args.set), json_out=args.json)
    sys.stdout.write(text)
    return code


def _vars(args: argparse.Namespace) -> int:
    from streamalloc.memory import vars_command
    sys.stdout.write(vars_command(_loaded_graph(args.graph), args.output,
                                  settings=_settings(args.set), json_out=args.json))
    return 0


def _rules_check(args: argparse.Namespace) -> int:
    from streamalloc import api
    rules = api.load_rule_set(args.file)
    assert rules is not None
    print(f"{args.file}: ok, rule set {rules.name!r} ({rules.flow} flow), {len(rules.rules)} "
          "rules in order:")
    for rule in rules.rules:
        gate = " (gated)" if rule.when_block else ""
        print(f"  {rule.priority:>6}  {rule.name}  [{rule.kind}]{gate}")
    return 0


def _rules_list(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.rules import builtin_names
    from streamalloc.sync.driver import SYNC_STAGE_NAMES
    if args.ruleset is None:
        for name in builtin_names():
            rules = api.load_rule_set(name)
            assert rules is not None
            print(f"{name:<26}  {rules.flow} flow, {len(rules.rules)} rules")
        return 0
    rules = api.load_rule_set(args.ruleset)
    assert rules is not None
    print(f"rule set {rules.name!r} ({rules.flow} flow), passes in run order "
          "(the names --print-after takes):")
    for rule in rules.rules:
        gate = " (gated)" if rule.when_block else ""
        print(f"  {rule.priority:>6}  {rule.name}  [{rule.kind}, {rule.spec.scope}]{gate}")
    print("sync stages:")
    for name in SYNC_STAGE_NAMES:
        print(f"          {name}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.ir.printer import print_graph
    from streamalloc.report.graph_report import graph_summary, graph_summary_json
    graph = _read_graph(args.graph, args)
    if args.canonical:
        sys.stdout.write(print_graph(graph))
        return 0
    parts = api.partitions(graph)
    if args.json:
        sys.stdout.write(json.dumps(graph_summary_json(graph, parts), indent=1) + "\n")
    else:
        sys.stdout.write(graph_summary(graph, parts))
    return 0


def _import(args: argparse.Namespace) -> int:
    from streamalloc import api
    graph = api.read_graph(args.model, _settings(args.set or []), fold=args.fold)
    api.write_graph(graph, Path(args.output))
    print(f"wrote {args.output}: graph {graph.name}, {graph.node_count()} nodes, "
          f"{len(graph.subgraphs)} subgraphs")
    return 0


def _train_step(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.ir.training import training_step
    graph = training_step(_read_graph(args.model, args), allreduce=args.allreduce,
                          bucket=args.bucket, aicpu_ops=args.aicpu_ops, seed=args.seed)
    api.write_graph(graph, Path(args.output))
    engines = Counter(n.engine for n in graph.all_nodes())
    print(f"wrote {args.output}: graph {graph.name}, {graph.node_count()} nodes: "
          + ", ".join(f"{engine} {count}" for engine, count in sorted(engines.items())))
    return 0


def _schema(args: argparse.Namespace) -> int:
    sys.stdout.write(json.dumps(schemas()[args.kind], indent=1) + "\n")
    return 0


def _set_arg(parser: argparse.ArgumentParser, what: str = "set a graph option (wins over the "
             "file); repeatable") -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=what)


def _allocation_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    parser.add_argument("--mode", default="ge", choices=list(MODES),
                        help="ge: GE's pass chain; preset: the graph's own stream_id values; "
                             "optimal: the CP-SAT allocator under the same rules")
    parser.add_argument("--rules", help="rule file replacing or extending (extends:) the "
                                        "shipped GE rules, or a shipped rule set name")
    _set_arg(parser)


def _optimal_args(parser: argparse.ArgumentParser) -> None:
    """The optimal mode's settings."""
    # no argparse defaults: OptimalOptions holds them, and ge mode tells a given flag apart
    group = parser.add_argument_group("optimal mode (--mode optimal)")
    group.add_argument("--objective", choices=["events", "makespan"],
                       help="fewest events (then fewest streams; the default), or shortest "
                            "makespan")
    group.add_argument("--concurrency", choices=["ge", "full"],
                       help="ge (the default): emulated makespan no worse than ge mode's; "
                            "full: nodes share a stream only if one reaches the other (Nimble)")
    group.add_argument("--makespan-slack", type=float, metavar="P",
                       help="allow ge mode's makespan x (1 + P/100); default 0")
    group.add_argument("--event-budget", type=int, metavar="N",
                       help="with --objective makespan: at most N events")
    group.add_argument("--time-limit", type=float, metavar="S",
                       help="deterministic time limit of the search (CP-SAT seconds); "
                            "default 10")
    group.add_argument("--seed", type=int, help="solver random seed; default 0")
    group.add_argument("--workers", type=int, help="solver worker threads; default 1")
    group.add_argument("--cost", metavar="FILE", help="cost table instead of the shipped one")


def _plan_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """emulate, verify, vars: the commands that read or write plans."""
    emu = sub.add_parser("emulate", help="run a plan on the emulated device: makespan, "
                                         "deadlocks, traces")
    emu.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    emu.add_argument("plan", nargs="?", help="plan file (docs/plan-format.md); default: "
                                             "allocate in ge mode")
    emu.add_argument("--json", action="store_true",
                     help="print the report as JSON (streamalloc.emulation/v1)")
    emu.add_argument("--trace", metavar="FILE",
                     help="write a Chrome trace (Perfetto, chrome://tracing)")
    emu.add_argument("--gantt", metavar="FILE", help="write a Gantt chart PNG (needs matplotlib)")
    emu.add_argument("--cost", metavar="FILE", help="cost table instead of the shipped one")
    emu.add_argument("--no-verify", dest="verify", action="store_false",
                     help="emulate a plan file even when the verifier rejects it (to watch a "
                          "deadlock or a race); its schema is still checked")
    _set_arg(emu, "set a graph option (wins over the file and the plan); repeatable")
    emu.set_defaults(run=_emulate)

    ver = sub.add_parser("verify", help="independent check of a plan file; exit 0 only if valid")
    ver.add_argument("graph", help="the graph the plan was made for")
    ver.add_argument("plan", help="plan file (docs/plan-format.md)")
    ver.add_argument("--rules", help="the rule file the plan was made with (default: the "
                                     "shipped rule set the plan names)")
    _set_arg(ver, "set a graph option over those the plan records; repeatable")
    ver.add_argument("--json", action="store_true",
                     help="print the report as JSON: valid, violations, counts, stats")
    ver.set_defaults(run=_verify)

    var = sub.add_parser("vars", help="variable memory plan of a graph (docs/vars-format.md)")
    var.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    var.add_argument("-o", "--output", help="plan file to write (JSON, streamalloc.vars/v1)")
    var.add_argument("--json", action="store_true",
                     help="print the plan JSON (what -o writes) instead of the table")
    _set_arg(var)
    var.set_defaults(run=_vars)


def _compare_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """compare: GE's heuristic against the optimal allocator, side by side; sweep: over the
    cross product of a spec."""
    cmp = sub.add_parser("compare", help="ge, ge-minimal and optimal side by side: streams, "
                                         "events, makespan, bounds")
    cmp.add_argument("graphs", nargs="+", metavar="GRAPH", help="graph files")
    cmp.add_argument("--modes", default=",".join(COMPARE_MODES),
                     help=f"comma-separated modes among {', '.join(COMPARE_MODES)}")
    cmp.add_argument("--rules", help="rule file or shipped rule set name (e.g. free)")
    cmp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="set a graph option on every graph; repeatable")
    cmp.add_argument("--json", action="store_true", help="streamalloc.compare/v1 JSON")
    cmp.add_argument("--plot", metavar="FILE.png",
                     help="events against makespan per mode, with the optimal frontier")
    cmp.set_defaults(run=_compare, print_after=None, dump_dir=None, sync=None)
    _optimal_args(cmp)

    swp = sub.add_parser("sweep", help="the cross product of a sweep spec (graphs, rules, "
                                       "options, modes, solver settings): one row per point")
    swp.add_argument("spec", metavar="SPEC.yaml", help="sweep spec (docs/sweep-format.md)")
    swp.add_argument("-o", "--output", metavar="OUT.json", help="write streamalloc.sweep/v1 JSON")
    swp.add_argument("--md", metavar="FILE", help="write the table as markdown")
    swp.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    swp.add_argument("--jobs", type=int, metavar="N",
                     help="local processes (default: the CPU count; 1: this process); with "
                          "--ray local, the CPUs of the local Ray instance")
    swp.add_argument("--ray", metavar="ADDRESS",
                     help="run on Ray (pip install 'streamalloc[ray]'): local (start one "
                          "here), auto (this machine's cluster) or ray://HOST:PORT")
    swp.set_defaults(run=_sweep)


def _generator_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """train-step: the commands that make graphs from models."""
    train = sub.add_parser("train-step", help="one synthetic data-parallel training step of a "
                                              "model: forward, backward, AllReduce, update")
    train.add_argument("model", help="the model (forward pass): graph file, .onnx or GE dump")
    train.add_argument("-o", "--output", required=True, help="graph file to write (.yaml/.json)")
    train.add_argument("--allreduce", default="per-gradient", choices=list(ALLREDUCE_MODES),
                       help="one HcomAllReduce per weight gradient, or per bucket of them")
    train.add_argument("--bucket", type=int, default=DEFAULT_BUCKET, metavar="N",
                       help=f"weights per AllReduce with --allreduce bucketed ({DEFAULT_BUCKET})")
    train.add_argument("--aicpu-ops", type=int, default=3, metavar="N",
                       help="AI CPU overflow checks on the backward chain (3)")
    train.add_argument("--seed", type=int, default=0, help="where the AI CPU checks go (0)")
    _set_arg(train, "set a graph option of the model (kept in the step); repeatable")
    train.set_defaults(run=_train_step)


def _rules_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """rules check, rules list."""
    rules = sub.add_parser("rules", help="rule files")
    rules_sub = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    check = rules_sub.add_parser("check", help="validate a rule file and print its rule order")
    check.add_argument("file", help="rule file (YAML) or a shipped rule set name")
    check.set_defaults(run=_rules_check)
    listing = rules_sub.add_parser("list", help="the shipped rule sets; or one rule set's passes "
                                                "in run order, then the sync stages")
    listing.add_argument("ruleset", nargs="?", metavar="RULESET|FILE",
                         help="a shipped rule set name or a rule file")
    listing.set_defaults(run=_rules_list)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="streamalloc", description=__doc__)
    parser.add_argument("--version", action="version", version=f"streamalloc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = sub.add_parser("show", help="print nodes, engines and engine subgraphs of a graph")
    show.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    fmt = show.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    fmt.add_argument("--canonical", action="store_true", help="the canonical text form")
    _set_arg(show)
    show.set_defaults(run=_show)

    imp = sub.add_parser("import", help="convert an ONNX model or GE dump into our graph format")
    imp.add_argument("model", help="an .onnx model or a GE dump (protobuf text or binary)")
    imp.add_argument("-o", "--output", required=True, help="graph file to write (.yaml or .json)")
    _set_arg(imp, "set a graph option in the written graph; repeatable")
    imp.add_argument("--no-fold", dest="fold", action="store_false",
                     help="keep an ONNX model's constant-only nodes (ConstantOfShape weights, ...) "
                          "as written instead of folding them into Const weights")
    imp.set_defaults(run=_import)

    alloc = sub.add_parser("allocate", help="logical stream allocation; per-stream table")
    _allocation_args(alloc)
    alloc.add_argument("-o", "--output", help="plan file to write (JSON)")
    alloc.add_argument("--graph-out", metavar="FILE",
                       help="write the graph with its Send/Recv nodes (.yaml or .json)")
    out = alloc.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help="print the plan JSON (what -o writes) instead of the tables")
    out.add_argument("--nodes", action="store_true",
                     help="also print the per-node table: type, engine, logical and physical "
                          "stream, deciding rule (or why a node has no stream)")
    alloc.add_argument("--sync", choices=list(SYNC_STRATEGIES),
                       help="event elimination: ge (GE's optimisations; the default in ge and "
                            "preset modes) or minimal (only the events no other ordering "
                            "implies; the default in optimal mode)")
    _optimal_args(alloc)
    alloc.add_argument("--print-after", metavar="NAME",
                       help="print the plan text after the pass NAME (a rule of the rule set or "
                            "a sync stage; see `rules list`), or after every pass (all), to "
                            "stderr")
    alloc.add_argument("--dump-dir", metavar="DIR",
                       help="write the plan text after every pass to DIR/NN-<name>.txt")
    alloc.set_defaults(run=_allocate)

    explain = sub.add_parser("explain", help="which rules placed a node where it is, and why")
    _allocation_args(explain)
    explain.add_argument("node", help="node name")
    _optimal_args(explain)
    explain.set_defaults(run=_explain)

    _plan_commands(sub)
    _generator_commands(sub)
    _compare_commands(sub)

    _rules_commands(sub)

    schema = sub.add_parser("schema", help="print the JSON Schema of a file format: the files "
                                           "you write (graph, rules, sweep-spec) and those the "
                                           "tool writes (plan, vars, emulation, compare, sweep)")
    schema.add_argument("kind", choices=SCHEMA_KINDS)
    schema.set_defaults(run=_schema)
    return parser


def _show_warning(message: Warning | str, category: type[Warning],  # noqa: PLR0917
                  filename: str, lineno: int, file: TextIO | None = None,
                  line: str | None = None) -> None:
    """Input warnings as one line on stderr; others as Python prints them (warnings'
    `showwarning` signature)."""
    del file
    if issubclass(category, InputWarning):
        print(f"streamalloc: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the flush at exit is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a reader that went away
INTERRUPTED = 130  # 128 + SIGINT


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (README, "Exit codes")."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = _show_warning
        return _run(args)


def single_threaded_blas() -> None:
    """Start numpy's OpenBLAS with one thread, unless the user chose a number: no command
    multiplies matrices, and the thread OpenBLAS starts per CPU spins for a while after
    numpy is imported (0.1-0.2 s of CPU), on the CPU where a command's own child process runs
    (`allocate`'s outputs, `emulate`'s verifier, `sweep`'s jobs)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def console_main() -> NoReturn:
    """The `streamalloc` program: `main`, then exit at once. Letting the interpreter free a
    100k-node graph's millions of objects one by one takes about half a second after the work
    is done; the operating system takes the memory back at once (mypy ends the same way).
    Every command closed its files; the two standard streams are flushed here."""
    from streamalloc import collector
    single_threaded_blas()
    collector.hold_until_exit()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # a reader that went away has had its BROKEN_PIPE exit code already
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


class _Interrupt:
    """Ctrl-C seen: a KeyboardInterrupt inside an extension module's import comes out as an
    ImportError ("initialization failed"), so the handler remembers the signal itself."""

    seen = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        del signum, frame
        cls.seen = True
        raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    _Interrupt.seen = False
    previous = None
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, _Interrupt.handler)
    try:
        return _run_command(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _run_command(args: argparse.Namespace) -> int:
    try:
        if args.command in ("compare", "sweep"):  # they count graphs or points themselves
            code = int(args.run(args))
        else:
            with Progress(args.command, sys.stderr):
                code = int(args.run(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader closed its end (`| head`): stop quietly
        _quiet_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print("streamalloc: interrupted", file=sys.stderr)
        return INTERRUPTED
    except StreamallocError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"streamalloc: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug: say so, and keep the traceback behind --debug
        if _Interrupt.seen:  # Ctrl-C during an import
            print("streamalloc: interrupted", file=sys.stderr)
            return INTERRUPTED
        if args.debug:
            traceback.print_exc()
        print(f"streamalloc: internal error ({type(exc).__name__}): {exc}; rerun with --debug "
              "and report it", file=sys.stderr)
        return 1
