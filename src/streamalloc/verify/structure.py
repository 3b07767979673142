"""Structural checks: stream ids, task lists, node entries, generated-node declarations.

Each check writes violations to the context's log and returns nothing; later checks do not
depend on these passing (they look names up defensively).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection

import numpy as np

from streamalloc.verify.context import Context
from streamalloc.verify.limits import own_units

# At most this many missing ids are listed; a count far beyond the listed streams or ids (a plan
# claiming 10^9 streams) costs time in proportion to what the plan lists, not to the count.
LISTED_MISSING = 64


def check_structure(ctx: Context) -> None:
    """Run every structural check in a fixed order."""
    if ctx.plan.graph != ctx.graph.name:
        ctx.log.add("graph-mismatch", f"the plan is for graph {ctx.plan.graph!r}, the graph "
                    f"file holds {ctx.graph.name!r}; verify a plan against its own graph")
    check_stream_ids(ctx)
    check_task_names(ctx)
    check_node_entries(ctx)
    check_sync_declarations(ctx)


def stream_limit(ctx: Context) -> int:
    """Stream ids are 0 .. physical_stream_count + attached_stream_count - 1."""
    return ctx.plan.physical_stream_count + ctx.plan.attached_stream_count


def check_stream_ids(ctx: Context) -> None:
    """Stream lists only for existing ids; ids 0..physical_stream_count-1 all have a list."""
    plan, top = ctx.plan, stream_limit(ctx)
    for sid in plan.streams:
        if sid >= top:
            ctx.log.add("stream-id-range", f"stream {sid} has a task list, but ids run 0.."
                        f"{top - 1} (physical_stream_count {plan.physical_stream_count}, "
                        f"attached_stream_count {plan.attached_stream_count})")
    count = plan.physical_stream_count
    missing, total = missing_ids(count, plan.streams)
    if total:
        ctx.log.add("stream-gap", f"physical_stream_count is {count} but "
                    f"{missing_phrase('stream', missing, total, 'has', 'have')} no task list; "
                    "stream ids must run from 0 without gaps")


def check_task_names(ctx: Context) -> None:
    """Every listed name is a graph node or a declared generated node, listed once."""
    table = ctx.table
    if _listed_task_names(ctx) < len(table.where):
        for name, gid in table.where.items():
            if not ctx.is_task_name(name):
                ctx.log.add("unknown-task", f"{table.describe(gid)} is neither a node of graph "
                            f"{ctx.graph.name!r} nor a declared sync node (sync_nodes)")
    for name, gids in table.repeats.items():
        places = ", ".join(f"stream {s} position {p}" for s, p in map(table.place, gids))
        ctx.log.add("duplicate-task", f"task {name} is listed {len(gids)} times ({places}); "
                    "every task runs exactly once")


def _listed_task_names(ctx: Context) -> int:
    """How many listed names are graph nodes or declared generated nodes."""
    where, nodes = ctx.table.where, ctx.nodes
    graph_nodes = int(np.count_nonzero(ctx.columns.gid >= 0))
    return graph_nodes + sum(1 for name in ctx.sync if name in where and name not in nodes)


def check_node_entries(ctx: Context) -> None:
    """Every graph node has an entry; listed exactly where its entry says."""
    entries, has_entry = ctx.plan.nodes, ctx.columns.has_entry
    for i in _misplaced(ctx).tolist():
        name = ctx.order[i].name
        if not has_entry[i]:
            ctx.log.add("missing-node-entry", f"graph node {name} has no entry in `nodes`; "
                        "every node of the graph and its subgraphs needs one (use -1 for none)")
        else:
            _check_placement(ctx, name)
    _check_streamless_work(ctx)
    if np.count_nonzero(has_entry) < len(entries):
        for name in entries:
            if name not in ctx.nodes:
                ctx.log.add("unknown-node-entry", f"`nodes` has an entry for {name}, which is "
                            f"not a node of graph {ctx.graph.name!r}")
    _check_one_logical_per_physical(ctx)


def _misplaced(ctx: Context) -> np.ndarray:
    """T-order indices of the graph nodes whose entry is missing or does not match the
    stream lists (`_check_placement` says how)."""
    c, logical = ctx.columns, ctx.plan.logical_stream_count
    listed = c.gid >= 0
    wrong = ~c.has_entry | (c.physical >= stream_limit(ctx))
    wrong |= np.where(c.physical < 0, listed, ~listed | (c.listed_on != c.physical))
    if logical is not None:
        wrong |= c.stream >= logical
    return np.flatnonzero(wrong)


def _check_placement(ctx: Context, name: str) -> None:
    entry, gid, top = ctx.plan.nodes[name], ctx.gid(name), stream_limit(ctx)
    logical = ctx.plan.logical_stream_count
    if logical is not None and entry.stream >= logical:
        ctx.log.add("stream-id-range", f"node {name} has logical stream {entry.stream}, but "
                    f"logical_stream_count is {logical}")
    if entry.physical_stream >= top:
        ctx.log.add("stream-id-range", f"node {name} has physical stream "
                    f"{entry.physical_stream}, but stream ids run 0..{top - 1}")
    if entry.physical_stream < 0:
        if gid is not None:
            ctx.log.add("streamless-node-listed", f"node {name} has physical_stream -1 (no "
                        f"task) but is listed as {ctx.table.describe(gid)}")
    elif gid is None:
        ctx.log.add("node-not-listed", f"node {name} has physical stream "
                    f"{entry.physical_stream} but is in no stream list; list it on stream "
                    f"{entry.physical_stream} or give it -1")
    elif ctx.table.place(gid)[0] != entry.physical_stream:
        ctx.log.add("node-on-wrong-stream", f"node {name} has physical stream "
                    f"{entry.physical_stream} but is listed as {ctx.table.describe(gid)}")


def _check_streamless_work(ctx: Context) -> None:
    """A node that issues tasks runs on some stream: one with physical_stream -1 and units of
    its own would never run (its consumers would pass its ordering on as if it had none)."""
    c = ctx.columns
    for i in np.flatnonzero(c.has_entry & (c.physical < 0)).tolist():
        node = ctx.order[i]
        units = own_units(ctx.graph, node)
        if units > 0:
            why = "its task_count" if node.task_count is not None else \
                f"engine {node.engine}'s default"
            ctx.log.add("streamless-work", f"node {node.name} issues {units} task unit(s) "
                        f"({why}) but has physical_stream -1: its work never runs; list it on "
                        "a stream")


def _check_one_logical_per_physical(ctx: Context) -> None:
    # A physical stream is one logical stream or a split piece of one (sync spec 5.7).
    if ctx.columns.single_logical is not None:
        return
    logical: dict[int, dict[int, str]] = defaultdict(dict)
    for name, entry in ctx.plan.nodes.items():
        if entry.physical_stream >= 0 and entry.stream >= 0 and name in ctx.nodes:
            logical[entry.physical_stream].setdefault(entry.stream, name)
    for physical, origins in sorted(logical.items()):
        if len(origins) > 1:
            shown = ", ".join(f"{n} (logical {s})" for s, n in sorted(origins.items()))
            ctx.log.add("physical-mixes-logical", f"physical stream {physical} holds nodes of "
                        f"{len(origins)} logical streams: {shown}; a physical stream is one "
                        "logical stream or a split piece of one")


def check_sync_declarations(ctx: Context) -> None:
    """Generated nodes: unique names, no clash with graph nodes, listed on their stream."""
    declared = Counter(entry.name for entry in ctx.plan.sync_nodes)
    for name, n in declared.items():
        if n > 1:
            ctx.log.add("duplicate-sync-node", f"sync node {name} is declared {n} times in "
                        "`sync_nodes`")
    for name, entry in ctx.sync.items():
        gid = ctx.gid(name)
        if name in ctx.nodes:
            ctx.log.add("sync-name-clash", f"sync node {name} has the name of a graph node")
        elif gid is None:
            ctx.log.add("sync-node-not-listed", f"sync node {name} ({entry.type}, stream "
                        f"{entry.stream}) is in no stream list")
        elif ctx.table.place(gid)[0] != entry.stream:
            ctx.log.add("sync-node-wrong-stream", f"sync node {name} is declared on stream "
                        f"{entry.stream} but listed as {ctx.table.describe(gid)}")


def missing_ids(count: int, present: Collection[int]) -> tuple[list[int], int]:
    """The first (at most LISTED_MISSING) ids of 0..count-1 not in `present`, and how many are
    missing in all; the work is bounded by len(present), whatever `count` is.

    >>> missing_ids(5, {0, 2})
    ([1, 3, 4], 3)
    >>> missing_ids(10**12, {0, 2})[1]
    999999999998
    """
    total = count - sum(1 for i in present if 0 <= i < count)
    scan = range(min(count, len(present) + LISTED_MISSING))
    return [i for i in scan if i not in present][:LISTED_MISSING], total


def missing_phrase(noun: str, ids: list[int], total: int, one: str, many: str) -> str:
    """`stream 2 has`, `streams 2-3 have`, or with more missing than listed `999 streams
    (2-65, ...) have`.

    >>> missing_phrase("stream", [2, 3], 1000, "has", "have")
    '1000 streams (2-3, ...) have'
    """
    if total <= len(ids):
        return ids_phrase(noun, ids, one, many)
    return f"{total} {noun}s ({id_ranges(ids)}, ...) {many}"


def ids_phrase(noun: str, ids: list[int], one: str, many: str) -> str:
    """`stream 2 has` / `streams 2-3 have`: noun, compact ids and verb agreeing in number.

    >>> ids_phrase("event id", [4, 5], "is", "are")
    'event ids 4-5 are'
    """
    if len(ids) == 1:
        return f"{noun} {ids[0]} {one}"
    return f"{noun}s {id_ranges(ids)} {many}"


def id_ranges(ids: list[int], limit: int = 8) -> str:
    """Compact id list: `2, 5-7, 9` (at most `limit` runs, then `...`).

    >>> id_ranges([2, 5, 6, 7, 9])
    '2, 5-7, 9'
    """
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit]]
    return ", ".join(text) + (", ..." if len(runs) > limit else "")
