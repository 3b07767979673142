"""Stream activation (spec 6): by label (6.1), for subgraphs (6.2), the loop activator (6.4)
and the post-split update (6.5). Lists are written to `ctx.active_stream_list`.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import INVALID
from streamalloc.sync.context import SyncContext
from streamalloc.sync.model import SyncMaps, Task


def _labels(ctx: SyncContext, name: str) -> list[str]:
    value = ctx.node(name).attr("_active_label_list", ())
    return [str(v) for v in value] if isinstance(value, tuple) else []


def by_label(ctx: SyncContext) -> None:
    """A3: nodes listing labels in `_active_label_list` activate those labels' streams."""
    for name in ctx.order:
        label = ctx.label(name)
        if label and ctx.stream[name] != INVALID:
            ctx.labeled_streams.setdefault(label, set()).add(ctx.stream[name])
    for name in ctx.order:
        labels = _labels(ctx, name)
        if not labels:
            continue
        streams = []
        for label in labels:
            ctx.activated_labels.setdefault(label, []).append(name)
            for s in sorted(ctx.labeled_streams.setdefault(label, set())):
                streams.append(s)
                ctx.activated_streams.add(s)
                ctx.stream_activators[s].append(name)
        ctx.active_stream_list[name] = streams


def for_subgraphs(ctx: SyncContext) -> None:
    """A4: a subgraph's `subgraph_first_active` StreamActive starts its other streams."""
    for sub in ctx.graph.r_order():
        streams: set[int] = set()
        first = None
        for node in ctx.graph.subgraphs[sub].nodes:
            if ctx.label(node.name):
                continue
            streams |= {ctx.stream[node.name], *ctx.attached.get(node.name, ())} - {INVALID}
            if node.attr("subgraph_first_active") is True:
                first = node.name  # the last such node wins
        if first is None:
            continue
        ctx.first_active[sub] = first
        streams.discard(ctx.stream[first])
        ctx.active_stream_list[first] = [*ctx.active_stream_list.get(first, []),
                                         *sorted(streams)]
        ctx.activated_streams |= streams


def loop_activation(ctx: SyncContext, maps: SyncMaps, stream_num: int,
                    split: Sequence[set[int]] | None) -> None:
    """6.4: the first `is_loop_active` node starts every stream nobody else activates and gets
    one event from the last root-graph node of each loop stream to the iteration switch."""
    loop_streams = [s for s in range(stream_num) if s not in ctx.activated_streams]
    last, has_switch = _last_nodes(ctx, set(loop_streams))
    for name in ctx.order:
        node = ctx.node(name)
        if node.attr("is_loop_active") is not True:
            continue
        switch = _iteration_switch(ctx, name)
        if _labels(ctx, name):
            continue
        ctx.active_stream_list[name] = loop_streams
        for s in sorted(last):
            if split is not None and s < len(split) and not split[s]:
                continue
            if s in has_switch or ctx.node(last[s]).graph != ctx.graph.root.name:
                continue
            if switch is None:
                raise AllocationInfeasible(f"loop activator {name!r} has no StreamSwitch among "
                                           "its control predecessors")
            maps.pair(last[s], switch)
        break


def _last_nodes(ctx: SyncContext, streams: set[int]) -> tuple[dict[int, str], set[int]]:
    """The last node (T-order) of each stream, and the streams that hold a StreamSwitch."""
    last: dict[int, str] = {}
    has_switch: set[int] = set()
    for name in ctx.order:
        s = ctx.stream[name]
        if s in streams:
            last[s] = name
            if ctx.node(name).type == "StreamSwitch":
                has_switch.add(s)
    return last, has_switch


def _iteration_switch(ctx: SyncContext, name: str) -> str | None:
    for p in ctx.node(name).control_inputs:
        if ctx.node(p).type == "StreamSwitch":
            return p
        for q in ctx.node(p).control_inputs:
            if ctx.node(q).type == "StreamSwitch":
                return q
    return None


def after_split(ctx: SyncContext, split: Sequence[set[int]], opened_by: dict[int, Task]) -> None:
    """6.5 steps 1-3 and 5: activation lists learn the streams the split opened."""
    for i, new in enumerate(split):
        if new and i in ctx.activated_streams:
            ctx.activated_streams |= new
    for name, streams in list(ctx.active_stream_list.items()):
        extra = []
        for t in streams:
            if t >= len(split):
                raise AllocationInfeasible(f"{name!r} activates stream {t}, which is not a "
                                           "logical stream")
            extra += [p for p in sorted(split[t]) if opened_by[p].graph == ctx.graph_of(name)]
        ctx.active_stream_list[name] = [*streams, *extra]
    for p, trigger in sorted(opened_by.items()):
        _subgraph_first_active(ctx, p, trigger)
    for name, streams in ctx.active_stream_list.items():
        if ctx.stream_of(name) in streams:
            raise AllocationInfeasible(f"{name!r} would activate its own stream "
                                       f"{ctx.stream_of(name)}")


def _subgraph_first_active(ctx: SyncContext, p: int, trigger: Task) -> None:
    graph = trigger.graph
    first = ctx.first_active.get(graph)
    labelled = not trigger.is_sync and ctx.label(trigger.name)
    if graph == ctx.graph.root.name or labelled or first is None:
        return
    if any(p in streams for streams in ctx.active_stream_list.values()):
        return
    ctx.activated_streams.add(p)
    if p != ctx.stream[first]:
        ctx.active_stream_list[first] = sorted({*ctx.active_stream_list.get(first, []), p})
