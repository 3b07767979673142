"""The physical stream split (Phase B step B4, spec 5.5-5.8).

Walk the tasks in T-order; per logical stream count units; when the running count plus 27
reserved units exceeds the capacity, open a new physical stream (ids continue globally) with one
event from the task counted before the split point to the first task of the new stream.
Continuous stream labels move together, with GE's double count kept (5.8). The walk decides
the split points, the new stream ids and the split events exactly as GE; where the Send/Recv
tasks go afterwards (each with its node) is `split_events.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import pairwise

import msgspec
import numpy as np

from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import INVALID, RESERVED_UNITS
from streamalloc.ir.graph import Graph, Node
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import TaskColumns
from streamalloc.sync.tasks import RowUnits, explicit_counts

NO_SPLIT_TYPES = frozenset({"LabelSet", "LabelGotoEx", "LabelSwitchByIndex"})
CONTINUOUS_LABEL = "_continuous_stream_label"


class SplitEvent(msgspec.Struct):
    """One split event: from row `pre` (on stream `old`) to row `recv` (first on `new`)."""

    id: int
    pre: int
    recv: int
    old: int
    new: int
    attached: bool


class SplitResult(msgspec.Struct):
    """What the split produced."""

    stream_num: int
    split_streams: list[set[int]]
    split_to_logic: dict[int, int]
    # new stream -> the row opening it
    opened_by: dict[int, int] = msgspec.field(default_factory=dict)
    events: list[SplitEvent] = msgspec.field(default_factory=list)
    event_num: int = 0


class _Walk(msgspec.Struct):
    graph: Graph
    rows: TaskColumns
    max_task: int
    stream_num: int
    event_num: int
    explicit: Mapping[str, tuple[int, int]]  # ASSIGNED (main, attached) of the nodes giving one
    labels: dict[str, str]  # the continuous stream label of each node carrying one
    count: dict[int, int] = msgspec.field(default_factory=lambda: defaultdict(int))
    latest: dict[int, int] = msgspec.field(default_factory=dict)
    added: dict[int, int] = msgspec.field(default_factory=lambda: defaultdict(int))
    prev: dict[int, int] = msgspec.field(default_factory=dict)
    label_nodes: dict[str, list[int]] = msgspec.field(default_factory=lambda: defaultdict(list))
    # (label member's row, stream) -> the row counted on that stream just before the member
    # (None for the stream's first task): all 5.8 reads of a stream's earlier tasks
    label_prev: dict[tuple[int, int], int | None] = msgspec.field(default_factory=dict)


def split_streams(model: SyncModel, rows: TaskColumns, units: RowUnits,
                  limits: tuple[int, int, int]) -> SplitResult:
    """Split every logical stream by `max_task` units (limits: stream_num, max_task, event_num):
    `rows` is walked in order and changed in place."""
    stream_num, max_task, event_num = limits
    nodes = model.attributed  # explicit counts and labels are attributes
    walk = _Walk(model.graph, rows, max_task, stream_num, event_num, explicit_counts(model.graph),
                 _continuous_labels(nodes))
    result = SplitResult(stream_num, [set() for _ in range(stream_num)],
                         {s: s for s in range(stream_num)})
    plain = not walk.explicit and not walk.labels  # most graphs
    if plain and not units.multi:  # and every row on one stream: found a stream at a time
        _split_by_stream(walk, result, units.single)
    else:
        _walk_rows(walk, result, units, plain)
    result.stream_num = walk.stream_num
    result.event_num = walk.event_num
    return result


def _walk_rows(walk: _Walk, result: SplitResult, units: RowUnits, plain: bool) -> None:
    """The walk itself, a row at a time (`plain`: no node gives an explicit count or a
    label)."""
    rows, max_task = walk.rows, walk.max_task
    streams, multi, made = rows.streams, units.multi, rows.made
    count, latest, prev = walk.count, walk.latest, walk.prev
    for row, u in enumerate(units.single):
        pairs = multi.get(row)
        if pairs is not None:
            for s, v in pairs:
                if s != INVALID:
                    _visit(walk, result, row, s, v)
            continue
        s = streams[row]
        if s == INVALID:
            continue
        if not plain:
            _visit(walk, result, row, s, u)
            continue
        # `_visit` of a row on one stream when no node gives an explicit count or a label
        before = count[s]
        count[s] = before + u
        if before and before + u + RESERVED_UNITS > max_task and _splittable(walk, row):
            _open(walk, result, row, (s, u, False))
        if s in latest:
            if row in made:
                rows.set_stream(row, latest[s])
            else:  # a graph node's row (no record to move with it)
                streams[row] = latest[s]
        prev[s] = row


def _split_by_stream(walk: _Walk, result: SplitResult, units: list[int]) -> None:
    """The walk of `split_streams` when every row is on one stream and no node gives an
    explicit count or a label. A stream's count then only grows between its splits: over its
    rows' running sum (numpy), the next split is the first row whose count passes the
    capacity (a search per split instead of a step per row), or the first splittable one
    after it. The new ids and events are given in row order, as the walk gives them, and
    the rows after each split move to its stream."""
    rows = walk.rows
    streams = np.array(rows.streams, np.int64)
    units_at = np.array(units, np.int64)
    placed = np.flatnonzero(streams != INVALID)
    order = placed[np.argsort(streams[placed], kind="stable")]  # by stream, rows in order
    bounds = np.flatnonzero(np.diff(streams[order], prepend=INVALID - 1, append=INVALID - 1))
    limit = walk.max_task - RESERVED_UNITS  # a split when the count after a row passes it
    splits: list[tuple[int, int, int, int]] = []  # (row, stream, row before it, segment)
    segments: list[tuple[int, np.ndarray, list[int]]] = []  # stream, its rows, split places
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        on = order[start:end]
        total = np.cumsum(units_at[on])
        places = _split_places(walk, on, total, limit)
        segments.append((int(streams[on[0]]), on, places))
        splits += [(int(on[j]), int(streams[on[0]]), int(on[j - 1]), k)
                   for k, j in enumerate(places)]
    made_ids: dict[tuple[int, int], int] = {}
    for row, s, pre, k in sorted(splits):  # ids and events in row order
        new = walk.stream_num
        walk.stream_num += 1
        old = walk.latest.get(s, s)
        walk.latest[s] = new
        made_ids[(s, k)] = new
        result.split_streams[s].add(new)
        result.split_to_logic[new] = s
        result.opened_by[new] = row
        result.events.append(SplitEvent(walk.event_num, pre, row, old, new, False))
        walk.event_num += 1
    if not splits:
        return
    moved = streams.copy()
    for s, on, places in segments:  # a stream's rows up to its first split stay on it
        for k, (a, b) in enumerate(pairwise([*places, len(on)])):
            moved[on[a:b]] = made_ids[(s, k)]
    rows.streams[:] = moved.tolist()
    for row, task in rows.made.items():  # a made row's record moves with it
        task.stream = rows.streams[row]


def _split_places(walk: _Walk, on: np.ndarray, total: np.ndarray, limit: int) -> list[int]:
    """Where one stream splits (indices into its rows `on`, whose running sum of units is
    `total`): the walk's test `before and before + u + RESERVED > max_task`, the count
    starting over from the splitting row's units."""
    places: list[int] = []
    base, j = 0, 1  # the count before row j is total[j - 1] - base
    while True:
        j = max(j, int(np.searchsorted(total, base + limit, side="right")))
        while j < len(on) and (total[j - 1] == base or not _splittable(walk, int(on[j]))):
            j += 1  # no count before it yet, or GE keeps the row with its predecessors
        if j >= len(on):
            return places
        places.append(j)
        base = int(total[j - 1])
        j += 1


def _continuous_labels(nodes: Iterable[Node]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for node in nodes:
        value = node.attrs.get(CONTINUOUS_LABEL) if node.attrs else None
        if value is not None:
            labels[node.name] = str(value.value)
    return labels


def _units(walk: _Walk, row: int, attached: bool, u: int) -> int:
    """GE's ASSIGNED(node, attached) when positive, else `u`."""
    explicit = None if row in walk.rows.made else walk.explicit.get(walk.rows.names[row])
    if explicit is None:
        return u
    value = explicit[1 if attached else 0]
    return value if value > 0 else u


def _label(walk: _Walk, row: int) -> str | None:
    return None if row in walk.rows.made else walk.labels.get(walk.rows.names[row])


def _visit(walk: _Walk, result: SplitResult, row: int, s: int, u: int) -> None:
    attached = walk.rows.streams[row] != s  # evaluated now: an earlier visit may have moved it
    first = walk.count[s] == 0
    # most graphs give no explicit count and no continuous label: no lookup per task then
    walk.count[s] += _units(walk, row, attached, u) if walk.explicit else u
    label = _label(walk, row) if walk.labels else None
    if label is not None:
        walk.label_nodes[label].append(row)
        walk.label_prev[(row, s)] = walk.prev.get(s)
    if not first and walk.count[s] + RESERVED_UNITS > walk.max_task \
            and _splittable(walk, row):
        _open(walk, result, row, (s, u, attached))
    if walk.added[s] >= 1:
        _move(walk.rows, row, s, walk.latest[s])
    walk.prev[s] = row


def _splittable(walk: _Walk, row: int) -> bool:
    """A stream over capacity splits before `row` unless GE keeps the task with its
    predecessors (a node with subgraphs, a subgraph's first activator, an RTS label node)."""
    return row in walk.rows.made or splits_before(walk.graph.node(walk.rows.names[row]))


def splits_before(node: Node) -> bool:
    """May a split open a new stream at this graph node? Not at a node with subgraphs, a
    subgraph's first activator or an RTS label node: GE keeps it with its predecessors."""
    return not node.subgraphs and node.attr("subgraph_first_active") is not True \
        and node.type not in NO_SPLIT_TYPES


def _move(rows: TaskColumns, row: int, old: int, new: int) -> None:
    if rows.streams[row] == old:
        rows.set_stream(row, new)
    else:
        rows.set_attached(row, tuple(new if a == old else a for a in rows.attached[row]))


def _move_label_member(rows: TaskColumns, row: int, s: int, new: int, *, attached: bool,
                       split_to_logic: dict[int, int]) -> None:
    """Put a continuous-label member's use of logical stream s on the new stream."""
    if not attached:
        rows.set_stream(row, new)
    else:
        rows.set_attached(row, tuple(new if split_to_logic.get(a, a) == s else a
                                     for a in rows.attached[row]))


def _open(walk: _Walk, result: SplitResult, row: int, where: tuple[int, int, bool]) -> None:
    s, u, attached = where
    new = walk.stream_num
    walk.stream_num += 1
    pre, recv = walk.prev.get(s), row
    walk.count[s] = _units(walk, row, attached, u)
    label = _label(walk, row)
    if label is not None:
        pre, recv = _move_group(walk, result, label, (s, u, attached, new))
    walk.added[s] += 1
    old = walk.latest.get(s, s)
    walk.latest[s] = new
    result.split_streams[s].add(new)
    result.split_to_logic[new] = s
    result.opened_by[new] = row
    if pre is not None:
        result.events.append(SplitEvent(walk.event_num, pre, recv, old, new, attached))
        walk.event_num += 1


def _move_group(walk: _Walk, result: SplitResult, label: str,
                where: tuple[int, int, bool, int]) -> tuple[int, int]:
    """5.8: every node of the label seen so far moves to the new stream, counted with the
    splitting node's units (GE's approximation); the event goes from the member of the stream
    before the group's first node to that node."""
    s, u, attached, new = where
    group = walk.label_nodes[label]
    for member in group:
        _move_label_member(walk.rows, member, s, new, attached=attached,
                           split_to_logic=result.split_to_logic)
        walk.count[s] += _units(walk, member, attached, u)  # GE approximates by n's units
    key = (group[0], s)
    pre = walk.label_prev.get(key)
    if pre is None:  # GE fails the split here (spec 8)
        place = "the first task of" if key in walk.label_prev else "not on"
        raise AllocationInfeasible(
            f"continuous stream label {label!r}: its first node {walk.rows.names[group[0]]!r} "
            f"is {place} logical stream {s}, so GE's split finds no task before the group and "
            "fails")
    return pre, group[0]
