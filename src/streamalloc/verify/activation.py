"""Stream activation: who starts which stream, as happens-before edges (sync spec 6).

A stream listed in `stream_activations` starts when the first of its activators has run, so
only what happens before every one of them happens before its tasks (the meet of their
clocks, `happens_before.sweep`'s `first_of`): two activators that both run start the stream at
the earlier one, and an event GE leaves out because the later one follows the producer leaves
a race (found by a fuzz run); a stream nobody activates starts with the model. Two kinds of
activation restart streams instead of starting them and give no edge:

* the loop activator (`is_loop_active`, sync spec 6.4) restarts the loop streams for the
  next iteration; the first iteration's streams start with the model;
* an activator that comes after the activated stream's first graph node in T-order (the
  back edge of a loop in the graph) re-activates a stream some earlier activator started.
  A stream whose activators all come after its first graph node has no such earlier start:
  GE's runtime binds every activated stream as a non-head stream, which runs only once
  activated, so those activators start it (a label stream activated by a node G-order puts
  after the stream's nodes, sync spec 2.2 rule 5 and 3.3).
"""

from __future__ import annotations

from collections import defaultdict

from streamalloc.facts import ACTIVATOR_ATTRS, ACTIVATOR_TYPES
from streamalloc.verify.context import Context


def activation_waits(ctx: Context) -> dict[int, list[int]]:
    """First-task gid of each activated stream -> gids of the activators it waits for."""
    # first task -> (activators no later than the stream's first node, later activators)
    found: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for name, streams in ctx.plan.activations.items():
        gid = _activator(ctx, name)
        if gid is None or _is_loop_activator(ctx, name):
            continue
        own = ctx.table.place(gid)[0]
        for stream in dict.fromkeys(streams):
            first = _first_task(ctx, name, stream, own)
            if first is not None:
                found[first][0 if _before(ctx, gid, first) else 1].append(gid)
    return {first: earlier or later for first, (earlier, later) in found.items()}


def _activator(ctx: Context, name: str) -> int | None:
    gid = ctx.gid(name)
    if not ctx.is_task_name(name):
        ctx.log.add("activation", f"stream_activations names {name}, which is neither a graph "
                    "node nor a sync node")
    elif not _can_activate(ctx, name):
        kind = ctx.nodes[name].type if name in ctx.nodes else ctx.sync[name].type
        ctx.log.add("activation", f"stream_activations names {name} ({kind}), whose task starts "
                    f"no stream: only {' and '.join(sorted(ACTIVATOR_TYPES))} tasks, and nodes "
                    f"with {', '.join(ACTIVATOR_ATTRS[:-1])} or {ACTIVATOR_ATTRS[-1]}, activate "
                    "streams")
        return None
    elif gid is None:
        ctx.log.add("activation", f"activator {name} is in no stream list: a node without a "
                    "stream issues no activation task")
    return gid


def _can_activate(ctx: Context, name: str) -> bool:
    node = ctx.nodes.get(name)
    if node is None:
        return ctx.sync[name].type in ACTIVATOR_TYPES
    return node.type in ACTIVATOR_TYPES or any(node.has_attr(a) for a in ACTIVATOR_ATTRS)


def _first_task(ctx: Context, name: str, stream: int, own: int) -> int | None:
    k = ctx.table.index_of_stream(stream)
    if stream == own:
        ctx.log.add("activation-own-stream", f"{name} activates its own stream {stream} "
                    "(GE rejects this; docs/ge-behaviour.md section 6)")
        return None
    if k is None:
        ctx.log.add("activation", f"{name} activates stream {stream}, which has no task list")
        return None
    return ctx.table.base[k] if ctx.table.lists[k] else None


def _is_loop_activator(ctx: Context, name: str) -> bool:
    """The loop activator restarts the loop streams; it never starts them."""
    node = ctx.nodes.get(name)
    return node is not None and node.attr("is_loop_active") is True


def _before(ctx: Context, gid: int, first: int) -> bool:
    """The activator comes no later than the stream's first graph node in T-order."""
    return _t_position(ctx, gid, backward=True) <= _t_position(ctx, first, backward=False)


def _t_position(ctx: Context, gid: int, backward: bool) -> int:
    """T-order index of the nearest graph node at or before (after) a task on its stream."""
    k, pos = ctx.table.locate(gid)
    names = ctx.table.lists[k]
    scan = range(pos, -1, -1) if backward else range(pos, len(names))
    for i in scan:
        index = ctx.t_index.get(names[i])
        if index is not None:
            return index
    return -1 if backward else len(ctx.t_index)
