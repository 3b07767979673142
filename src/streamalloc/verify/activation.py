"""Stream activation: who starts which stream, as happens-before edges (sync spec 6).

A stream listed in `stream_activations` starts only after its activators (all of them: GE's
several activators of one stream are the exclusive branches of a switch, of which one runs,
and that one orders its own branch); a stream nobody activates starts with the model. Two
kinds of activation restart streams instead of starting them and give no edge:

* the loop activator (`is_loop_active`, sync spec 6.4) restarts the loop streams for the
  next iteration; the first iteration's streams start with the model;
* an activator that comes after the activated stream's first graph node in T-order (the
  back edge of a loop in the graph) re-activates a stream some earlier activator started.
"""

from __future__ import annotations

from collections import defaultdict

from streamalloc.verify.context import Context


def activation_waits(ctx: Context) -> dict[int, list[int]]:
    """First-task gid of each activated stream -> gids of the activators it waits for."""
    waits: dict[int, list[int]] = defaultdict(list)
    for name, streams in ctx.plan.activations.items():
        gid = _activator(ctx, name)
        if gid is None:
            continue
        own = ctx.table.place(gid)[0]
        for stream in dict.fromkeys(streams):
            first = _first_task(ctx, name, stream, own)
            if first is not None and _starts(ctx, name, gid, first):
                waits[first].append(gid)
    return waits


def _activator(ctx: Context, name: str) -> int | None:
    gid = ctx.gid(name)
    if not ctx.is_task_name(name):
        ctx.log.add("activation", f"stream_activations names {name}, which is neither a graph "
                    "node nor a sync node")
    elif gid is None:
        ctx.log.add("activation", f"activator {name} is in no stream list: a node without a "
                    "stream issues no activation task")
    return gid


def _first_task(ctx: Context, name: str, stream: int, own: int) -> int | None:
    k = ctx.table.index_of_stream(stream)
    if stream == own:
        ctx.log.add("activation-own-stream", f"{name} activates its own stream {stream} "
                    "(GE rejects this, sync spec 6.5)")
        return None
    if k is None:
        ctx.log.add("activation", f"{name} activates stream {stream}, which has no task list")
        return None
    return ctx.table.base[k] if ctx.table.lists[k] else None


def _starts(ctx: Context, name: str, gid: int, first: int) -> bool:
    """The activation starts the stream (rather than restarting it in a loop)."""
    node = ctx.nodes.get(name)
    if node is not None and node.attr("is_loop_active") is True:
        return False
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
