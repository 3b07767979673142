"""The canonical text of a sync state (what `allocate --print-after STAGE` prints): stable and
sorted, with a versioned header.

Lines: `stream_num`; per stream (ascending) its task order once the `sync-tasks` stage made it,
before that its graph nodes in T-order (and StreamActive nodes made by 6.3); the label streams;
the pairs' and the events' id lists per node (N-order), with the next free id; the events on
attached streams; the reserved attached sync resources; the activation lists (N-order); after
`split`, the split streams' logical streams, the event count, the capacity and the huge
streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from streamalloc.facts import INVALID
from streamalloc.sync.model import SyncMaps, in_n_order
from streamalloc.sync.state import SyncInputs, SyncState

TEXT_VERSION = "v1"


def sync_state_text(ctx: SyncInputs, state: SyncState) -> str:
    """The whole state as text (see the module docstring)."""
    lines = [f"// streamalloc sync state {TEXT_VERSION}: graph {ctx.graph.name}",
             f"stream_num {state.stream_num}"]
    lines += _stream_lines(ctx, state)
    lines += [_listed(f"label {label}", sorted(streams))
              for label, streams in sorted(state.labels.labeled_streams.items())]
    lines += _id_lines("notifies" if ctx.notify else "events", state.pairs)
    if state.events.ids() or state.events.recv:
        lines += _id_lines("loop and attached events", state.events)
    lines += [f"attached_{'send' if s.send else 'recv'} {s.id}: {s.node} on stream {s.stream}"
              for s in state.attached_sync]
    lines += [_listed(f"reserved {kind} {name}", ids)
              for kind, table in (("events", state.resources.events),
                                  ("notifies", state.resources.notifies))
              for name in in_n_order(table) for ids in [table[name]]]
    lines += [_listed(f"active {name}", lists[name])
              for lists in [state.activation.active_stream_list] for name in in_n_order(lists)]
    lines += _physical_lines(state)
    return "\n".join(lines) + "\n"


def _listed(head: str, values: Iterable[int | str]) -> str:
    """`head: v1 v2 ...` (`head:` alone for no values)."""
    return " ".join([f"{head}:", *map(str, values)])


def _stream_lines(ctx: SyncInputs, state: SyncState) -> list[str]:
    members: dict[int, list[str]] = {}
    if state.tasks is not None:
        for name, stream in zip(state.tasks.names, state.tasks.streams, strict=True):
            members.setdefault(stream, []).append(name)
    else:
        for name in ctx.model.order:
            members.setdefault(state.streams[name], []).append(name)
        for task in state.activation.generated.values():
            members.setdefault(task.stream, []).append(task.name)
    return [_listed(f"stream {s}", names) for s, names in sorted(members.items()) if s != INVALID]


def _id_lines(title: str, maps: SyncMaps) -> list[str]:
    lines = [f"{title}: next id {maps.counter}"]
    for side, table in (("send", maps.send), ("recv", maps.recv)):
        lines += [_listed(f"{side} {node}", table[node]) for node in in_n_order(table)
                  if table[node]]
    return lines


def _physical_lines(state: SyncState) -> list[str]:
    physical = state.physical
    if physical is None:
        return []
    split: Mapping[int, int] = physical.split_to_logic
    return [*(f"split stream {new}: from {old}" for new, old in sorted(split.items())
              if new != old),
            f"event_count {physical.event_count}", f"capacity {physical.capacity}",
            _listed("huge_streams", physical.huge_streams)]
