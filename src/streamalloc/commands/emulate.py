"""`streamalloc emulate GRAPH [PLAN] [--json] [--trace F] [--gantt F] [--cost F] [--no-verify]`.

The command composes the layers: a plan file is validated against the plan schema and checked
by the independent verifier (`verify`), under the options the plan records, like
`streamalloc verify GRAPH PLAN` without the rule constraints (they say nothing about whether the
plan runs); without a plan file it allocates in ge mode (`api.plan`) and verifies that plan.
The verifier's verdict comes before any result of the run: a large plan is read, validated and
verified in a child process while the caller runs it from the few fields it needs
(`background`, `runtime_emu.plan.read_run_fields`), which changes the wall time and nothing else.
Then it emulates (`runtime_emu`) with the variable memory plan (`memory`) loaded. That is why it
lives here and not in `runtime_emu`.

`emulate_command` returns the text to print and the exit code: 0 when the run is ok, 5 for a
deadlock or a violation the emulator finds (README, "Exit codes"). Bad input raises InputError
(3); a plan the verifier rejects raises PlanVerifyError (5) with the verifier's violations, or
LimitExceeded (4) when it only exceeds device limits; `verify=False` (`--no-verify`) emulates it
anyway, to watch a deadlock or a race happen. Output files are written completely or not at
all, and not when the command fails before the run ("nothing is written to an output file when
the command fails"), with one exception: a run that deadlocks or breaks a dependency still
writes its `--trace` and `--gantt` files, up to the failure with the blocked streams and the
violations marked, as diagnostics, and exits 5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamalloc import collector
from streamalloc.background import Background, can_fork, free_memory
from streamalloc.errors import PlanVerifyError, UsageError
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.options import check_options
from streamalloc.memory import PlanLoader, variable_plan
from streamalloc.outputs import write_bytes_atomic
from streamalloc.plan_fields import plan_json, read_plan_bytes
from streamalloc.runtime_emu.cost_table import default_cost_table, load_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.plan import Plan, plan_from_dict, read_run_fields, validate_plan
from streamalloc.runtime_emu.report import report_json, report_text
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.runtime_emu.trace import trace_json

if TYPE_CHECKING:
    from streamalloc.verify import VerifyReport

# Plans listing at least this many tasks are checked in a child process while they run: below
# it a fork costs more than the checks save.
BACKGROUND_FROM = 20_000
# What the checking child allocates per listed task (the plan document it reads and its
# tables; the graph it shares with the caller until written): measured 1.0 KiB at 100k nodes,
# 0.71 KiB at 1M. The child runs only when twice that is free.
CHILD_BYTES_PER_TASK = 1024


@collector.pausing  # reading a 100k-node plan makes the collector rescan the loaded graph
def emulate_command(graph_path: str | Path | Graph, plan_path: str | Path | None, *,
                    json_out: bool, trace: str | None, gantt: str | None, cost: str | None,
                    verify: bool = True, settings: Mapping[str, str] | None = None
                    ) -> tuple[str, int]:
    """Run one plan of one graph (a file, or a graph already loaded) on the emulated device:
    (text to print, exit code). `settings` (`--set`) win over the file's and the plan's
    options; the merged options are checked (`ir.options.check_options`)."""
    table = load_cost_table(cost) if cost else default_cost_table()
    graph = graph_path if isinstance(graph_path, Graph) else load_graph(graph_path)
    accepted = _accepted  # raises when the verifier rejects the plan
    if plan_path is None:  # allocate in ge mode (and verify) first, as `allocate` would
        graph = _under_options(graph, None, settings or {})
        plan: Plan | dict[str, Any] = ge_plan(graph)
    else:
        plan_file = Path(plan_path)
        graph, plan, accepted = _plan_to_run(graph, plan_file, settings or {}, verify)
    try:
        # the variable memory plan is loaded into emulated device memory before the first task
        variables = PlanLoader(variable_plan(graph), device_id=0)
        result = emulate(graph, plan, costs=table, variables=variables)
    except Exception:
        accepted()  # the verifier's verdict on a plan comes first, as when it ran first
        raise
    accepted()
    text = report_json(result) if json_out else report_text(result)
    # A failed run still gets its trace and Gantt, up to the failure and with the blocked
    # streams and violations marked: they are diagnostics (the exception to "nothing is
    # written when the command fails"); the exit code stays 5.
    failed = result.status != "ok"
    outputs = _render(result, trace, gantt)
    _write_all(outputs)
    if not json_out:
        note = " (diagnostics of the failed run)" if failed else ""
        text += "".join(f"wrote {path}{note}\n" for path, _ in outputs)
    collector.hold(graph, plan, result)
    return text, PlanVerifyError.exit_code if failed else 0


def _plan_to_run(graph: Graph, path: Path, settings: Mapping[str, str], verify: bool
                 ) -> tuple[Graph, Plan, Callable[[], None]]:
    """The graph under the plan's options, the plan, and the call that raises when the plan
    does not pass the schema, the options check or the verifier (`_accepted` when it passed,
    or `verify` is off and only the schema and the types are checked).

    A large plan is read and checked whole in a child process while the caller runs it: the
    caller reads only the fields the run needs (`read_run_fields`), and whatever it finds
    wrong comes after the child's verdict, as when the checks ran first. A small one is
    checked here and now (a fork would cost more than it saves), and so is one whose child
    would not find the memory it needs free."""
    raw = read_plan_bytes(path)
    run = read_run_fields(raw) if verify and can_fork() else None
    tasks = _listed_tasks(run) if run is not None else 0
    free = free_memory() if tasks >= BACKGROUND_FROM else None
    if run is None or free is None or free < 2 * CHILD_BYTES_PER_TASK * tasks:
        graph, data = _checked_document(graph, path, raw, settings)
        if verify:
            _raise_rejected(path, _verified(graph, data, path))
        else:  # type-checked as the verifier reads a plan (InputError), but not verified
            from streamalloc.verify import plan_view
            plan_view(data, source=str(path))
        return graph, plan_from_dict(data, source=str(path)), _accepted
    verdict = Background(_checked_and_verified, graph, path, raw, settings)

    def accepted() -> None:
        _raise_rejected(path, verdict.result())

    try:
        graph = _under_options(graph, run.get("options"), settings)
        return graph, plan_from_dict(run, source=str(path)), accepted
    except Exception:
        accepted()  # the child's verdict on the plan comes first, as when it ran first
        raise


def _listed_tasks(run: Mapping[str, Any]) -> int:
    """The tasks a plan lists on its streams, by the fields read to run it (0 where they are
    not the lists the schema asks for: the whole file is checked here then)."""
    streams = run.get("streams")
    if not isinstance(streams, dict):
        return 0
    return sum(len(names) for names in streams.values() if isinstance(names, list))


def _checked_document(graph: Graph, path: Path, raw: bytes, settings: Mapping[str, str]
                      ) -> tuple[Graph, dict[str, Any]]:
    """The plan document (`raw`: the bytes of file `path`), validated against the plan schema,
    and the graph under the options it records (`_under_options`)."""
    data = plan_json(path, raw)
    validate_plan(data, str(path))
    return _under_options(graph, data.get("options"), settings), data


def _under_options(graph: Graph, recorded: Mapping[str, str] | None,
                   settings: Mapping[str, str]) -> Graph:
    """The graph under the options a plan records (strings, by the schema), the given ones
    winning; the merged options checked."""
    graph = graph.with_options({**(recorded or {}), **settings})
    check_options(graph, settings=settings)
    return graph


def _checked_and_verified(graph: Graph, path: Path, raw: bytes, settings: Mapping[str, str]
                          ) -> VerifyReport:
    """The verifier's report on a plan file's bytes; raises what checking them raises."""
    graph, data = _checked_document(graph, path, raw, settings)
    return _verified(graph, data, path)


def _verified(graph: Graph, data: dict[str, Any], path: Path) -> VerifyReport:
    """The verifier's report on a plan document of the plan schema (InputError when its type
    check rejects the document). The verifier is imported here: where a child verifies, the
    caller that runs the plan never needs it."""
    from streamalloc.verify import plan_view, verify_plan
    return verify_plan(graph, plan_view(data, source=str(path)))


def _accepted() -> None:
    """The verdict on a plan the verifier accepted, or was not asked to check."""


def _raise_rejected(path: Path, report: VerifyReport) -> None:
    report.raise_for_failure(f"{path}: the plan does not pass verification, so it is not "
                             "emulated (--no-verify emulates it anyway):\n")


def ge_plan(graph: Graph) -> dict[str, Any]:
    """The verified ge-mode plan of a graph (docs/plan-format.md)."""
    # imported here: the allocators (and the solver, through `api`) are not needed to run a
    # plan file, and cost a second of start-up
    from streamalloc import api
    from streamalloc.verify import verify_plan
    document = api.plan(graph).to_json()
    verify_plan(graph, document).raise_for_failure()
    return document


def _render(result: EmulationResult, trace: str | None, gantt: str | None
            ) -> list[tuple[str, bytes]]:
    # Render everything before writing anything: a failing gantt leaves no trace file behind.
    outputs = []
    if gantt:
        from streamalloc.runtime_emu.gantt import gantt_png
        outputs.append((gantt, gantt_png(result)))
    if trace:
        outputs.insert(0, (trace, trace_json(result).encode("utf-8")))
    return outputs


def _write_all(outputs: list[tuple[str, bytes]]) -> None:
    written: list[Path] = []
    try:
        for name, data in outputs:
            write_bytes_atomic(Path(name), data)
            written.append(Path(name))
    except UsageError:
        for path in written:  # all outputs or none
            path.unlink(missing_ok=True)
        raise
