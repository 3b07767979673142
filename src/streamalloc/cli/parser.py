"""The `streamalloc` command line: parse arguments, call the API, print (exit codes: errors.py).

`--help` prints DESCRIPTION, not this docstring."""

from __future__ import annotations

import argparse

from streamalloc import __version__
from streamalloc.cli import handlers

# Heavy modules (numpy, networkx, ortools, onnx behind them) are imported inside the handlers,
# so that `--version` and `--help` answer at once. The choices below are their constants, kept
# equal to them by tests/test_user_errors.py.
MODES = ("ge", "preset", "optimal")  # api.MODES
SYNC_STRATEGIES = ("ge", "minimal")  # sync.driver.SYNC_STRATEGIES
COMPARE_MODES = ("ge", "ge-minimal", "optimal")  # commands.compare.MODES
ALLREDUCE_MODES = ("per-gradient", "bucketed")  # ir.training.ALLREDUCE_MODES
DEFAULT_BUCKET = 16  # ir.training.DEFAULT_BUCKET
# The files users write (graph, rules, sweep-spec) and the files the tool writes (plan, vars,
# emulation, compare, sweep, show): `streamalloc schema KIND`.
SCHEMA_KINDS = ("compare", "emulation", "graph", "plan", "rules", "show", "sweep", "sweep-spec",
                "vars")


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


def _optimal_args(parser: argparse.ArgumentParser,
                  title: str = "optimal mode (--mode optimal)") -> None:
    """The optimal mode's settings."""
    # no argparse defaults: OptimalOptions holds them, and ge mode tells a given flag apart
    group = parser.add_argument_group(title)
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
    group.add_argument("--workers", type=int, help="solver workers: CP-SAT threads, or the "
                       "makespan objective's searches, one process each; default 1")
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
    emu.set_defaults(run=handlers.run_emulate)

    ver = sub.add_parser("verify", help="independent check of a plan file; exit 0 only if valid")
    ver.add_argument("graph", help="the graph the plan was made for")
    ver.add_argument("plan", help="plan file (docs/plan-format.md)")
    ver.add_argument("--rules", help="the rule file the plan was made with (default: the "
                                     "shipped rule set the plan names)")
    _set_arg(ver, "set a graph option over those the plan records; repeatable")
    ver.add_argument("--json", action="store_true",
                     help="print the report as JSON: valid, violations, counts, stats")
    ver.set_defaults(run=handlers.run_verify)

    var = sub.add_parser("vars", help="variable memory plan of a graph (docs/vars-format.md)")
    var.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    var.add_argument("-o", "--output", help="plan file to write (JSON, streamalloc.vars/v1)")
    var.add_argument("--json", action="store_true",
                     help="print the plan JSON (what -o writes) instead of the table")
    _set_arg(var)
    var.set_defaults(run=handlers.run_vars)


def _compare_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """compare: GE's heuristic against the optimal allocator, side by side; sweep: over the
    cross product of a spec."""
    cmp = sub.add_parser("compare", help="ge, ge-minimal and optimal side by side: streams, "
                                         "events, makespan, bounds")
    cmp.add_argument("graphs", nargs="+", metavar="GRAPH", help="graph files")
    cmp.add_argument("--modes", default=",".join(COMPARE_MODES),
                     help=f"comma-separated modes among {', '.join(COMPARE_MODES)} (default: "
                          "all three)")
    cmp.add_argument("--rules", help="rule file or shipped rule set name (e.g. free)")
    cmp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="set a graph option on every graph; repeatable")
    cmp.add_argument("--json", action="store_true", help="streamalloc.compare/v1 JSON")
    cmp.add_argument("--plot", metavar="FILE.png",
                     help="events against makespan per mode, with the optimal frontier")
    cmp.add_argument("--jobs", type=int, default=1, metavar="N",
                     help="runs at once, in N processes (every graph's modes and frontier "
                          "points; the same rows but for wall_s); default 1")
    cmp.set_defaults(run=handlers.run_compare, print_after=None, dump_dir=None, sync=None)
    _optimal_args(cmp, "the optimal mode (its row in --modes)")

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
    swp.set_defaults(run=handlers.run_sweep)


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
    train.set_defaults(run=handlers.run_train_step)


def _rules_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """rules check, rules list."""
    rules = sub.add_parser("rules", help="rule files")
    rules_sub = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    check = rules_sub.add_parser("check", help="validate a rule file and print its rule order")
    check.add_argument("file", help="rule file (YAML) or a shipped rule set name")
    check.set_defaults(run=handlers.run_rules_check)
    listing = rules_sub.add_parser("list", help="the shipped rule sets; or one rule set's passes "
                                                "in run order, then the sync stages")
    listing.add_argument("ruleset", nargs="?", metavar="RULESET|FILE",
                         help="a shipped rule set name or a rule file")
    listing.set_defaults(run=handlers.run_rules_list)


DESCRIPTION = ("Place the operators of a deep-learning graph on device streams, as Huawei's GE "
               "compiler does (--mode ge) or with the fewest events a CP-SAT solver finds "
               "(--mode optimal); synchronize the streams, verify and emulate the plan, and "
               "plan variable memory.")
EPILOG = ("Exit codes: 0 success, 1 internal error (a bug), 2 usage error, 3 bad input, "
          "4 infeasible or over a device limit, 5 a plan failed verification, 130 interrupted, "
          "141 the output's reader went away. `streamalloc COMMAND --help` for a command.")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="streamalloc", description=DESCRIPTION,
                                     epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"streamalloc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = sub.add_parser("show", help="print nodes, engines and engine subgraphs of a graph")
    show.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    fmt = show.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true",
                     help="machine-readable output (streamalloc.show/v1)")
    fmt.add_argument("--canonical", action="store_true", help="the canonical text form")
    _set_arg(show)
    show.set_defaults(run=handlers.run_show)

    imp = sub.add_parser("import", help="convert an ONNX model or GE dump into our graph format")
    imp.add_argument("model", help="an .onnx model or a GE dump (protobuf text or binary)")
    imp.add_argument("-o", "--output", required=True, help="graph file to write (.yaml or .json)")
    _set_arg(imp, "set a graph option in the written graph; repeatable")
    imp.add_argument("--no-fold", dest="fold", action="store_false",
                     help="keep an ONNX model's constant-only nodes (ConstantOfShape weights, ...) "
                          "as written instead of folding them into Const weights")
    imp.set_defaults(run=handlers.run_import)

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
    alloc.set_defaults(run=handlers.run_allocate)

    explain = sub.add_parser("explain", help="which rules placed a node where it is, and why")
    _allocation_args(explain)
    explain.add_argument("node", help="node name")
    _optimal_args(explain)
    explain.set_defaults(run=handlers.run_explain)

    _plan_commands(sub)
    _generator_commands(sub)
    _compare_commands(sub)

    _rules_commands(sub)

    schema = sub.add_parser("schema", help="print the JSON Schema of a file format: the files "
                                           "you write (graph, rules, sweep-spec) and those the "
                                           "tool writes (plan, vars, emulation, compare, sweep, "
                                           "show)")
    schema.add_argument("kind", choices=SCHEMA_KINDS)
    schema.set_defaults(run=handlers.run_schema)
    return parser
