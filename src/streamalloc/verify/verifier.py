"""`verify_plan(graph, plan)`: the independent plan checker (no code shared with `sync`).

Order of the checks, which is also the order of the reported violations: structure (stream
ids, task lists, node entries, generated nodes), sync ids and pairing, the `events` list,
activations, device limits, deadlock freedom, and last the graph's dependencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from streamalloc import collector
from streamalloc.ir.graph import Graph
from streamalloc.verify.activation import activation_waits
from streamalloc.verify.context import Context, make_context
from streamalloc.verify.dependencies import Dependencies, Dependency, graph_dependencies
from streamalloc.verify.happens_before import Blocked, SweepResult, sweep
from streamalloc.verify.limits import check_limits, read_limits
from streamalloc.verify.plan_input import plan_view
from streamalloc.verify.plan_view import PlanView
from streamalloc.verify.report import DEFAULT_CAP, VerifyReport, VerifyStats, ViolationLog
from streamalloc.verify.structure import check_structure
from streamalloc.verify.sync_pairs import check_entries, check_ids, collect_ends, pair_waits

if TYPE_CHECKING:
    from streamalloc.rules import RuleSet


def verify_plan(graph: Graph, plan: PlanView | Mapping[str, Any], *,
                rules: RuleSet | None = None, cap: int = DEFAULT_CAP) -> VerifyReport:
    """Check a plan (a PlanView or a plan dict) against its graph, and against the constraint
    forms of `rules` when given; never raises on violations.

    A malformed plan dict raises InputError; a non-integer limit option raises InputError.
    """
    with collector.paused():
        view = plan if isinstance(plan, PlanView) else plan_view(plan)
        return _verify(graph, view, rules, cap)



def _verify(graph: Graph, view: PlanView, rules: RuleSet | None, cap: int) -> VerifyReport:
    limits = read_limits(graph)
    log = ViolationLog(cap)
    ctx = make_context(graph, view, log)
    check_structure(ctx)
    ends = collect_ends(ctx)
    check_ids(ctx, ends)
    waits = pair_waits(ctx, ends)
    check_entries(ctx, ends)
    activated = activation_waits(ctx)
    check_limits(ctx, limits)
    if rules is not None:
        from streamalloc.verify.rules import check_rules  # the rules package: only for these
        check_rules(graph, view, rules, ctx.log)
    deps = graph_dependencies(graph, ctx.order, ctx.t_index, ctx.columns.has_task)
    result = _order(ctx, waits, activated, deps)
    stats = VerifyStats(
        tasks=ctx.table.total, streams=len(view.streams),
        events=sum(1 for space, _ in ends if space == "event"),
        notifies=sum(1 for space, _ in ends if space == "notify"),
        dependencies=len(deps), unchecked=result)
    return log.report(graph.name, view.source, stats)


def _order(ctx: Context, waits: Mapping[int, list[int]], activated: Mapping[int, list[int]],
           deps: Dependencies) -> int:
    """Deadlocks and dependency ordering; returns how many dependencies were undecidable.
    `activated`: a stream's first task -> its activators, the first of which starts it."""
    u, v = ctx.columns.gid[deps.src], ctx.columns.gid[deps.dst]
    result = sweep([len(names) for names in ctx.table.lists], waits, np.stack([u, v], axis=1),
                   first_of=activated)
    for cycle in result.cycles:
        _report_cycle(ctx, cycle, result)
    decided = result.done[u] & result.done[v]
    unordered = np.flatnonzero(decided & ~result.answers).tolist()
    names = [n.name for n in ctx.order] if unordered else []
    for i in unordered:
        _report_dependency(ctx, deps.item(i, names), int(u[i]), int(v[i]))
    return int(len(deps) - decided.sum())


def _report_cycle(ctx: Context, cycle: tuple[Blocked, ...], result: SweepResult) -> None:
    streams = ", ".join(str(ctx.table.stream_ids[b.stream]) for b in cycle)
    steps = "; ".join(_blocked_step(ctx, b) for b in cycle)
    ctx.log.add("deadlock", f"streams {streams} wait for each other forever: {steps} "
                f"({result.blocked_tasks} tasks can never run)")


def _blocked_step(ctx: Context, b: Blocked) -> str:
    table = ctx.table
    head, target = table.name(b.head), table.describe(b.waits_for)
    wait, record = ctx.sync.get(head), ctx.sync.get(table.name(b.waits_for))
    if wait is not None and record is not None and wait.space is not None \
            and (wait.space, wait.ident) == (record.space, record.ident):
        what = f"{wait.type} {head} waits for {wait.space} {wait.ident}, recorded by {target}"
    else:
        what = f"its first task {head} waits for its activator {target}"
    own = table.locate(b.waits_for)[0] == b.stream
    where = f"stream {table.stream_ids[b.stream]} at position {table.place(b.head)[1]}"
    return f"{where}: {what}" + (", later on the same stream" if own else "")


def _report_dependency(ctx: Context, dep: Dependency, u: int, v: int) -> None:
    (su, iu), (sv, iv) = ctx.table.place(u), ctx.table.place(v)
    if su == sv:
        detail = (f"both run on stream {su}, but {dep.dst} is at position {iv} and "
                  f"{dep.src} at position {iu}; on one stream a consumer must follow its producer")
    else:
        detail = (f"{dep.src} runs on stream {su} (position {iu}), {dep.dst} on stream {sv} "
                  f"(position {iv}), and no chain of events or activations leads from "
                  f"{dep.src} to {dep.dst}; add an event (a Send after {dep.src}, a Recv "
                  f"before {dep.dst})")
    ctx.log.add("dependency", f"{dep.label()} is not ordered: {detail}")
