"""Event and notify ids: contiguous numbering, one record per wait, the `events` entries.

Send/Recv tasks use the event id space, SendNotify/RecvNotify the notify space (sync spec
4.4). GE gives every id exactly one sender and one receiver (sync spec 0); the only sharing
is multi-dims reuse (4.2), where Sends of one id sit in different subgraph instances of one
Case node, of which only one runs. A wait resets the event, so a second Recv of one record
could block forever: that is reported too.

The result is the record-to-wait relation the happens-before graph uses: Recv gid -> the
Send gids it waits for (one, except for reported violations).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import chain
from typing import NamedTuple

from streamalloc.ir.attached import resource_ids
from streamalloc.verify.context import Context
from streamalloc.verify.plan_view import EventEntry
from streamalloc.verify.structure import ids_phrase, missing_ids, missing_phrase

Key = tuple[str, int]  # (id space, id)


class Ends(NamedTuple):
    """The listed Send and Recv tasks (gids, ascending) of one id."""

    sends: list[int]
    recvs: list[int]


# Generated task type -> (id space, records?)
ROLES = {"Send": ("event", True), "SendNotify": ("notify", True),
         "Recv": ("event", False), "RecvNotify": ("notify", False)}


def collect_ends(ctx: Context) -> dict[Key, Ends]:
    """Group the listed generated Send/Recv tasks by (space, id)."""
    ends: dict[Key, Ends] = {}
    where, nodes = ctx.table.where, ctx.nodes
    for name, entry in ctx.sync.items():
        role, gid = ROLES.get(entry.type), where.get(name)
        if role is None or gid is None or entry.ident is None or name in nodes:
            continue  # not a listed Send/Recv: reported by the structure checks
        key = (role[0], entry.ident)
        e = ends.get(key)
        if e is None:
            e = ends[key] = Ends([], [])
        (e.sends if role[1] else e.recvs).append(gid)
    for e in ends.values():
        if len(e.sends) > 1 or len(e.recvs) > 1:
            e.sends.sort()
            e.recvs.sort()
    return dict(sorted(ends.items()))


def check_ids(ctx: Context, ends: dict[Key, Ends]) -> None:
    """Ids of each space run 0..count-1: none beyond the count, none left unused."""
    for space in ("event", "notify"):
        count = ctx.plan.count(space)
        used = {i for s, i in ends if s == space}
        named = used | {e.id for e in ctx.plan.events if e.kind == space}
        beyond = sorted(i for i in named if i >= count)
        if beyond:
            ids = ids_phrase(f"{space} id", beyond, "is", "are")
            ctx.log.add(f"{space}-id-range", f"{ids} used but {space}_count is {count}; ids run "
                        f"0..{count - 1}")
        gaps, total = missing_ids(count, used)
        if total and not _reserved_block(ctx, space, gaps, total):
            ids = missing_phrase(f"{space} id", gaps, total, "has", "have")
            ctx.log.add(f"{space}-id-gap", f"{ids} no Send or Recv although {space}_count is "
                        f"{count}; ids must run from 0 without gaps (the runtime checks "
                        "continuity)")


def _reserved_block(ctx: Context, space: str, gaps: list[int], total: int) -> bool:
    """The ids without Send or Recv are the block the graph's attached sync resources reserve
    (sync spec 4.5): that many ids, contiguous (GE numbers them in one go)."""
    reserved = resource_ids(ctx.graph, space, 0)[1]
    return total == reserved and gaps == list(range(gaps[0], gaps[0] + len(gaps)))


def pair_waits(ctx: Context, ends: dict[Key, Ends]) -> dict[int, list[int]]:
    """Recv gid -> the Send gids it waits for; reports unpaired and shared ids."""
    waits: dict[int, list[int]] = defaultdict(list)
    for key, e in ends.items():
        space, ident = key
        what = f"{space} {ident}"
        if not e.sends:
            for r in e.recvs:
                ctx.log.add(f"{space}-unpaired", f"{ctx.table.describe(r)} waits for {what}, "
                            "which no Send records: it would block forever")
        elif not e.recvs:
            ctx.log.add(f"{space}-unpaired", f"{ctx.table.describe(e.sends[0])} records "
                        f"{what}, but no Recv waits for it; every id has one receiver")
        elif len(e.sends) == 1:
            if len(e.recvs) > 1:
                ctx.log.add(f"{space}-multiple-recv", f"{what} is waited for by "
                            f"{_list(ctx, e.recvs)}; a wait resets the event, so all but one "
                            "can block forever (one receiver per id)")
            for r in e.recvs:
                waits[r].append(e.sends[0])
        else:
            _pair_reused(ctx, key, e, waits)
    return waits


def _pair_reused(ctx: Context, key: Key, e: Ends, waits: dict[int, list[int]]) -> None:
    space, ident = key
    owner = {g: _owner_graph(ctx, g, g in e.recvs) for g in chain(e.sends, e.recvs)}
    branch = _Branches(ctx)
    sends = e.sends
    shared_ok = all(branch.exclusive(owner[a], owner[b])
                    for i, a in enumerate(sends) for b in sends[i + 1:])
    if not shared_ok:
        ctx.log.add(f"{space}-multiple-send", f"{space} {ident} is recorded by "
                    f"{_list(ctx, sends)}, which are not in different subgraph instances of one "
                    "Case node; an id has one sender except in multi-dims reuse "
                    "(docs/ge-behaviour.md section 5)")
        return
    matched: dict[int, int] = defaultdict(int)
    for r in e.recvs:
        match = [s for s in sends if not branch.exclusive(owner[s], owner[r])]
        if len(match) != 1:
            ctx.log.add(f"{space}-unpaired", f"{ctx.table.describe(r)} waits for shared "
                        f"{space} {ident}, and {len(match)} of its Sends are in the same Case "
                        "branch; exactly one must be")
            continue
        waits[r].append(match[0])
        matched[match[0]] += 1
    for s in sends:
        if matched[s] != 1:
            ctx.log.add(f"{space}-unpaired", f"{ctx.table.describe(s)} records shared "
                        f"{space} {ident}, waited for by {matched[s]} Recvs of its Case branch; "
                        "exactly one must wait")


def _owner_graph(ctx: Context, gid: int, forward: bool) -> str | None:
    """The graph of the graph node a Send follows (a Recv precedes) on its stream (sync spec 7)."""
    k, pos = ctx.table.locate(gid)
    names = ctx.table.lists[k]
    after, before = range(pos + 1, len(names)), range(pos - 1, -1, -1)
    for i in chain(after, before) if forward else chain(before, after):
        node = ctx.nodes.get(names[i])
        if node is not None:
            return node.graph
    return None


class _Branches:
    """Which instance of each enclosing Case node a graph lies in."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cache: dict[str, dict[str, str]] = {}

    def of(self, graph: str) -> dict[str, str]:
        """Case node -> the subgraph instance (on the way to the root) holding `graph`."""
        if graph not in self.cache:
            path: dict[str, str] = {}
            g = graph
            while (parent := self.ctx.graph.graph(g).parent) is not None:
                node = self.ctx.nodes[parent]
                if node.type == "Case":
                    path[parent] = g
                g = node.graph
            self.cache[graph] = path
        return self.cache[graph]

    def exclusive(self, a: str | None, b: str | None) -> bool:
        """Both graphs lie in different instances of one Case node (never run together)."""
        if a is None or b is None:
            return False
        other = self.of(b)
        return any(other.get(case, inst) != inst for case, inst in self.of(a).items())


def check_entries(ctx: Context, ends: dict[Key, Ends]) -> None:
    """The `events` list matches the Send/Recv tasks: streams, counts, placement."""
    per_key: dict[Key, int] = defaultdict(int)
    none = Ends([], [])
    logical = _logical_streams(ctx)
    for entry in ctx.plan.events:
        key = (entry.kind, entry.id)
        per_key[key] += 1
        _check_entry(ctx, entry, ends.get(key, none), logical)
    for (space, ident), e in ends.items():
        n, sends = per_key[(space, ident)], len(e.sends)
        if n == 0:
            ctx.log.add("event-entry", f"{space} {ident} has {_list(ctx, e.sends + e.recvs)} "
                        "but no entry in `events`")
        elif sends and n > sends:
            ctx.log.add("event-entry", f"{space} {ident} has {n} entries in `events` but "
                        f"{sends} Send; one entry per sender")


def _logical_streams(ctx: Context) -> dict[int, int]:
    """Physical stream -> the logical stream of the graph nodes listed on it (one, or the
    structure checks report `physical-mixes-logical`)."""
    single = ctx.columns.single_logical
    if single is not None:
        return single
    logical: dict[int, int] = {}
    for name, entry in ctx.plan.nodes.items():
        if entry.physical_stream >= 0 and entry.stream >= 0 and name in ctx.nodes:
            logical.setdefault(entry.physical_stream, entry.stream)
    return logical


def _check_entry(ctx: Context, entry: EventEntry, e: Ends, logical: dict[int, int]) -> None:
    for role, name in (("sender", entry.send), ("receiver", entry.recv)):
        if name not in ctx.nodes and name not in ctx.sync:
            ctx.log.add("event-entry", f"{entry.label()} names {role} {name}, which is neither "
                        "a graph node nor a sync node")
    stream_ids, owner = ctx.table.stream_ids, ctx.table.owner
    for tasks, node, stream, is_send in (
            (e.sends, entry.send, entry.send_stream, True),
            (e.recvs, entry.recv, entry.recv_stream, False)):
        on_stream = [g for g in tasks if stream_ids[owner[g]] == stream]
        if not on_stream:
            ctx.log.add("event-entry", f"{entry.label()}: no {'Send' if is_send else 'Recv'} of "
                        f"{entry.kind} {entry.id} is listed on its stream {stream}")
        else:
            _check_logical(ctx, entry, node, stream, logical=logical, is_send=is_send)
            _check_placement(ctx, entry, on_stream, node, is_send)


def _check_logical(ctx: Context, entry: EventEntry, node: str, stream: int, *,
                   logical: dict[int, int], is_send: bool) -> None:
    """The entry's node runs on the logical stream its Send (Recv) is on: the same physical
    stream, or another split piece of it (a split may fall between a Recv and its node). A
    node's work on its attached streams is not listed, so nodes with attached streams are
    exempt; so are nodes without a logical stream that issue a task (GE runs them on stream 0,
    sync spec 5.4)."""
    t, columns = ctx.t_index.get(node), ctx.columns
    if t is None or ctx.plan.attached.get(node) or stream not in logical:
        return
    node_stream = int(columns.stream[t])  # -1 without an entry
    if node_stream < 0 or columns.physical[t] < 0:
        return
    if node_stream != logical[stream]:
        what, role = ("Send", "sender") if is_send else ("Recv", "receiver")
        ctx.log.add("event-entry", f"{entry.label()}: its {role} {node} is on logical stream "
                    f"{node_stream}, but the {what} on stream {stream} is in logical "
                    f"stream {logical[stream]}; the entry does not match its {what} task")


def _check_placement(ctx: Context, entry: EventEntry, tasks: list[int], node: str,
                     after: bool) -> None:
    """A record follows the node it publishes, a wait precedes the node it guards."""
    gid = ctx.table.where.get(node)
    if gid is None or ctx.table.owner[gid] != ctx.table.owner[tasks[0]]:
        return  # the node is on another (split piece or attached) stream: nothing positional
    if any(t == gid or (t > gid) == after for t in tasks):
        return  # (an entry may name the Send itself: a split event with no task before it)
    what, rel = ("Send", "after") if after else ("Recv", "before")
    ctx.log.add("event-placement", f"{entry.label()}: the {what} "
                f"{ctx.table.describe(tasks[0])} is not {rel} {ctx.table.describe(gid)}; it "
                f"must come {rel} that node")


def _list(ctx: Context, gids: Iterable[int], limit: int = 4) -> str:
    gids = list(gids)
    shown = ", ".join(ctx.table.describe(g) for g in gids[:limit])
    return shown + (f" and {len(gids) - limit} more" if len(gids) > limit else "")
