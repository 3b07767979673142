"""The handler of each command: read its inputs, call the API or the command, print; it
returns the exit code. Heavy modules are imported inside the handlers, so that `--version`
and `--help` answer at once."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamalloc.cli.arguments import (
    check_compare_flags,
    check_optimal_flags,
    graph_options,
    loaded_graph,
    optimal_options,
    pass_printer,
    read_graph,
)
from streamalloc.errors import InputWarning, UsageError

if TYPE_CHECKING:
    from streamalloc import api
    from streamalloc.rules import RuleSet


def schemas() -> dict[str, Any]:
    """The JSON Schema of every file format, by kind."""
    from streamalloc.commands.sweep_spec import SPEC_SCHEMA
    from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
    from streamalloc.rules.schema import RULES_SCHEMA
    from streamalloc.schemas import SCHEMAS as OUTPUT_SCHEMAS
    return {"graph": GRAPH_SCHEMA, "rules": RULES_SCHEMA, "sweep-spec": SPEC_SCHEMA,
            **OUTPUT_SCHEMAS}


def _allocated(args: argparse.Namespace) -> tuple[api.Graph, api.Allocation]:
    from streamalloc import api
    rules = api.load_rule_set(args.rules)
    graph = read_graph(args.graph, args, rules)
    return graph, api.allocate(graph, rules, args.mode)


def run_allocate(args: argparse.Namespace) -> int:
    from streamalloc import api, collector
    from streamalloc.verify import verify_plan
    from streamalloc.verify.shared_start import raise_for_ge_plan
    check_optimal_flags(args)
    given = api.load_rule_set(args.rules)
    graph = read_graph(args.graph, args, given)
    if args.mode == "optimal":
        return _allocate_optimal(args, graph, given)
    printer = pass_printer(args, graph, given)
    allocation = api.allocate(graph, given, args.mode, observer=printer)
    plan = api.synchronize(graph, allocation, sync=args.sync or "ge", observer=printer)
    with collector.paused():
        document = plan.to_json()
        rules = (given or api.default_rule_set(graph)) if args.mode == "ge" else None
        _write_plan(args, graph, plan, document,
                    lambda: raise_for_ge_plan(verify_plan(graph, document, rules=rules),
                                              document))
    collector.hold(graph, allocation, plan, document)
    return 0


def _allocate_optimal(args: argparse.Namespace, graph: api.Graph, given: RuleSet | None) -> int:
    from streamalloc import api
    from streamalloc.report.allocation_report import solver_summary
    from streamalloc.verify import verify_plan
    began = time.perf_counter()
    plan, report = api.optimal_plan(graph, given, optimal_options(args))
    document = {**plan.to_json(), "solver": report.to_json()}
    rules = api.recorded_rules(graph, given, report)
    _write_plan(args, graph, plan, document,
                lambda: verify_plan(graph, document, rules=rules).raise_for_failure())
    if not args.json:
        sys.stdout.write(solver_summary(report.to_json(), time.perf_counter() - began))
    return 0


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


def run_compare(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.commands.compare import CompareSettings, compare_command, parse_modes
    from streamalloc.outputs import write_bytes_atomic
    modes = parse_modes(args.modes)
    check_compare_flags(args, modes)
    settings = CompareSettings(modes, api.load_rule_set(args.rules), graph_options(args.set),
                               optimal_options(args), jobs=args.jobs)
    sys.stdout.write(compare_command(args.graphs, settings, json_out=args.json, plot=args.plot,
                                     write=write_bytes_atomic))
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    from streamalloc.commands.sweep import sweep_command
    from streamalloc.outputs import write_atomic
    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    sys.stdout.write(sweep_command(args.spec, jobs=jobs,
                                   ray=args.ray, json_out=args.json, output=args.output,
                                   markdown=args.md, write=write_atomic))
    return 0


def run_explain(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.report.allocation_report import explain_node, status_notes
    check_optimal_flags(args)
    if args.mode != "optimal":
        graph, allocation = _allocated(args)
        solver = None
    else:
        from streamalloc.optimal.driver import solver_constraints
        given = api.load_rule_set(args.rules)
        graph = read_graph(args.graph, args, given)
        options = optimal_options(args)
        plan, report = api.optimal_plan(graph, given, options)
        allocation = plan.allocation
        settings = f"--objective {options.objective}, --concurrency {options.concurrency}"
        if report.status == "FALLBACK" and args.node in allocation.nodes:  # ge mode's plan,
            # made by its passes
            sys.stdout.write(explain_node(
                graph, allocation, args.node,
                kept=f"the optimal mode kept ge mode's plan ({settings}; status FALLBACK: "
                     f"{report.reason})"))
            return 0
        status = ", ".join([f"status {report.status}",
                            *status_notes(report.status, report.phase)])
        solver = (f"{settings}; {status}", solver_constraints(graph, given))
    if args.node not in allocation.nodes:
        raise UsageError(f"graph {graph.name!r} has no node {args.node!r}")
    sys.stdout.write(explain_node(graph, allocation, args.node, solver))
    return 0


def run_emulate(args: argparse.Namespace) -> int:
    from streamalloc.commands.emulate import emulate_command
    text, code = emulate_command(loaded_graph(args.graph), args.plan, json_out=args.json,
                                 trace=args.trace, gantt=args.gantt, cost=args.cost,
                                 verify=args.verify, settings=graph_options(args.set))
    sys.stdout.write(text)
    return code


def run_verify(args: argparse.Namespace) -> int:
    from streamalloc.verify import verify_command
    text, code = verify_command(loaded_graph(args.graph), args.plan, rules=args.rules,
                                settings=graph_options(args.set), json_out=args.json)
    sys.stdout.write(text)
    return code


def run_vars(args: argparse.Namespace) -> int:
    from streamalloc.memory import vars_command
    sys.stdout.write(vars_command(loaded_graph(args.graph), args.output,
                                  settings=graph_options(args.set), json_out=args.json))
    return 0


def run_rules_check(args: argparse.Namespace) -> int:
    from streamalloc import api
    rules = _rule_set(args.file)
    api.check_assigning(rules)
    built_on = "; built on 'free': its rules alone bind --mode optimal, ge mode runs them " \
        "over GE's default rules" if rules.on_free else ""
    _print_rules(f"{args.file}: ok, rule set {rules.name!r} ({rules.flow} flow{built_on}), "
                 f"{len(rules.rules)} rules in order:", rules, scope=False)
    return 0


def _rule_set(name: str) -> RuleSet:
    """A shipped rule set or a rule file, loaded (never None for a name or a path)."""
    from streamalloc import api
    rules = api.load_rule_set(name)
    assert rules is not None
    return rules


def _print_rules(header: str, rules: RuleSet, *, scope: bool) -> None:
    """`header`, then one line per rule: priority, name, kind (and scope), and whether it is
    gated."""
    print(header)
    for rule in rules.rules:
        where = f", {rule.spec.scope}" if scope else ""
        gate = " (gated)" if rule.when_block else ""
        print(f"  {rule.priority:>6}  {rule.name}  [{rule.kind}{where}]{gate}")


def run_rules_list(args: argparse.Namespace) -> int:
    from streamalloc.rules import builtin_names
    from streamalloc.sync.driver import SYNC_STAGE_NAMES
    if args.ruleset is None:
        for name in builtin_names():
            rules = _rule_set(name)
            print(f"{name:<26}  {rules.flow} flow, {len(rules.rules)} rules")
        return 0
    rules = _rule_set(args.ruleset)
    _print_rules(f"rule set {rules.name!r} ({rules.flow} flow), passes in run order "
                 "(the names --print-after takes):", rules, scope=True)
    print("sync stages:")
    for name in SYNC_STAGE_NAMES:
        print(f"          {name}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.ir.printer import print_graph
    from streamalloc.report.graph_report import graph_summary, graph_summary_json
    graph = read_graph(args.graph, args)
    if args.canonical:
        sys.stdout.write(print_graph(graph))
        return 0
    parts = api.partitions(graph)
    if args.json:
        sys.stdout.write(json.dumps(graph_summary_json(graph, parts), indent=1) + "\n")
    else:
        sys.stdout.write(graph_summary(graph, parts))
    return 0


def run_import(args: argparse.Namespace) -> int:
    from streamalloc import api
    graph = api.read_graph(args.model, graph_options(args.set or []), fold=args.fold)
    api.write_graph(graph, Path(args.output))
    print(f"wrote {args.output}: graph {graph.name}, {graph.node_count()} nodes, "
          f"{len(graph.subgraphs)} subgraphs")
    return 0


def run_train_step(args: argparse.Namespace) -> int:
    from streamalloc import api
    from streamalloc.ir.training import UPDATE_PREFIX, per_step_inputs, training_step
    model = read_graph(args.model, args)
    api.check_allocatable(model)  # a step of it could not be allocated
    graph = training_step(model, allreduce=args.allreduce, bucket=args.bucket,
                          aicpu_ops=args.aicpu_ops, seed=args.seed)
    api.write_graph(graph, Path(args.output))
    engines = Counter(n.engine for n in graph.all_nodes())
    print(f"wrote {args.output}: graph {graph.name}, {graph.node_count()} nodes: "
          + ", ".join(f"{engine} {count}" for engine, count in sorted(engines.items())))
    if not any(name.startswith(UPDATE_PREFIX) for name in graph.root.index):
        inputs = ", ".join(f"{count} {kind}" for kind, count in per_step_inputs(model).items())
        warnings.warn(f"{args.model}: no weights (float constants that a node with a gradient "
                      f"reads), so the step has no AllReduce; the model's per-step inputs: "
                      f"{inputs}", InputWarning, stacklevel=1)
    return 0


def run_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(json.dumps(schemas()[args.kind], indent=1) + "\n")
    return 0
