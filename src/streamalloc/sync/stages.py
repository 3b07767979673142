"""Phase A's stages in GE's order (spec 1.5): activation, event insertion, elimination,
numbering, attached-stream dependency events, switch and loop activation, attached-stream
NetOutput events, the task order with Send/Recv, attached sync resources.

Each stage is a pass (`streamalloc.passes`): an immutable object with a `name` and
`apply(ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]` that works on its own copies
of what it changes; a stage is a frozen msgspec struct of its typed options, if any
(docs/architecture.md: no methods to generate at import). Phase B (`split`, `limits`) is in
`physical.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from itertools import repeat

import msgspec
from msgspec.structs import replace

from streamalloc.errors import UsageError
from streamalloc.mappings import values_of
from streamalloc.passes import PassResult, outcome
from streamalloc.sync.activation import (
    Activation,
    LabelActivation,
    label_activation,
    loop_activation,
)
from streamalloc.sync.attached import (
    AttachedSync,
    dependency_events,
    netoutput_events,
    reserve_resources,
)
from streamalloc.sync.context import SyncModel
from streamalloc.sync.generate import Namer, sync_task
from streamalloc.sync.insert import insert_cross_stream_pairs
from streamalloc.sync.minimal import minimize
from streamalloc.sync.model import SyncMaps, Task, TaskColumns
from streamalloc.sync.multiplexing import EVENT_REUSE_THRESHOLD, multiplex_events
from streamalloc.sync.numbering import renumber, reuse_multi_dims
from streamalloc.sync.optimize import optimize
from streamalloc.sync.state import SyncInputs, SyncState
from streamalloc.sync.switch import handle_switches, place_after_graph

Eliminator = Callable[[SyncModel, Mapping[str, int], LabelActivation, Activation, SyncMaps],
                      None]

# A7, the elimination of redundant pairs: GE's four optimisations (spec 3), or the transitive
# reduction of program order + activation + pairs (`minimal`). Everything else is shared.
ELIMINATION: Mapping[str, Eliminator] = {"ge": optimize, "minimal": minimize}
SYNC_STRATEGIES = tuple(ELIMINATION)


class Activate(msgspec.Struct, frozen=True):
    """A3, A4 (spec 6.1, 6.2): activation by label and for subgraphs."""

    name = "activate"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The label activation and the first activation lists."""
        labels, activation = label_activation(ctx.model, plan.streams)
        return outcome(plan, replace(plan, labels=labels, activation=activation))


class Insert(msgspec.Struct, frozen=True):
    """A6 (spec 2.1-2.3): one pair per cross-stream edge, subgraph boundaries included;
    `strategy` "minimal" leaves out a pair to a label stream only when every activator of
    the label follows the producer (`insert_cross_stream_pairs`'s `every_activator`)."""

    strategy: str = "ge"
    name = "insert"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The pairs, numbered in insertion order."""
        pairs = SyncMaps()
        insert_cross_stream_pairs(ctx.model, plan.streams, plan.labels.activated_labels, pairs,
                                  every_activator=self.strategy == "minimal")
        return outcome(plan, replace(plan, pairs=pairs))


class Eliminate(msgspec.Struct, frozen=True):
    """A7 (spec 3): redundant pairs go; `strategy` "ge" (GE's four optimisations) or
    "minimal" (only the pairs no other ordering implies)."""

    strategy: str = "ge"
    name = "eliminate"

    def __post_init__(self) -> None:
        if self.strategy not in ELIMINATION:
            raise UsageError(f"sync strategy {self.strategy!r} is not available; valid: "
                             f"{', '.join(SYNC_STRATEGIES)}")

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The pairs that survive."""
        pairs = plan.pairs.copy()
        ELIMINATION[self.strategy](ctx.model, plan.streams, plan.labels, plan.activation, pairs)
        return outcome(plan, replace(plan, pairs=pairs))


class Renumber(msgspec.Struct, frozen=True):
    """4.1: continuous ids in sender name order."""

    name = "renumber"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The pairs renumbered from 0."""
        pairs = plan.pairs.copy()
        pairs.counter = renumber(pairs)
        return outcome(plan, replace(plan, pairs=pairs))


class MultiDimsReuse(msgspec.Struct, frozen=True):
    """4.2: ids used inside one dim of a multi-batch Case are shared with the other dims."""

    name = "multi-dims-reuse"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The pairs with shared ids."""
        pairs = plan.pairs.copy()
        reuse_multi_dims(ctx.model, pairs)
        return outcome(plan, replace(plan, pairs=pairs))


class Multiplex(msgspec.Struct, frozen=True):
    """4.3: `_event_multiplexing` sharing when the events number over `threshold` (events
    only: nothing in notify mode)."""

    threshold: int = EVENT_REUSE_THRESHOLD
    name = "multiplex"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The pairs with the declared sharing."""
        if ctx.notify:
            return PassResult(plan, False)
        pairs = plan.pairs.copy()
        multiplex_events(ctx.model, pairs, self.threshold)
        return outcome(plan, replace(plan, pairs=pairs))


class AttachedDependencies(msgspec.Struct, frozen=True):
    """A11 (spec 2.6): events from the producers an attached stream's work depends on. The
    events of this and the later stages are numbered after Phase A's (from 0 in notify mode,
    whose pairs are notifies)."""

    name = "attached-dependencies"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """One event per (producer, node) whose attached streams differ."""
        events = SyncMaps(counter=0 if ctx.notify else plan.pairs.counter)
        made = dependency_events(ctx.model, events)
        # changed: an event was added (not merely the id space's start set)
        return PassResult(replace(plan, events=events, attached_sync=made),
                          bool(made) or bool(events.ids()) or bool(events.recv))


class Switch(msgspec.Struct, frozen=True):
    """6.3 (A12): StreamSwitch branch activation through new StreamActive nodes."""

    name = "switch"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """New StreamActive nodes on new streams, and the switches' new lists."""
        activation, switches = plan.activation.copy(), plan.switches.copy()
        made = handle_switches(ctx.model, plan.labels.labeled_streams, activation, switches,
                               plan.stream_num)
        return outcome(plan, replace(plan, activation=activation, switches=switches,
                                     stream_num=plan.stream_num + len(made)))


class LoopActivation(msgspec.Struct, frozen=True):
    """6.4: the loop activator starts the streams nobody else does; events to the switch."""

    name = "loop-activation"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The loop activator's list and the loop events."""
        events = plan.events.copy()
        activation = plan.activation.copy()
        loop_activation(ctx.model, plan.streams, activation, events, plan.stream_num)
        return outcome(plan, replace(plan, activation=activation, events=events))


class AttachedEvents(msgspec.Struct, frozen=True):
    """A13 (spec 2.7): the last user of each attached stream signals its graph's NetOutput."""

    name = "attached-events"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """One event per attached stream with a last user."""
        events = plan.events.copy()
        sends = netoutput_events(ctx.model, events)
        return outcome(plan, replace(plan, events=events,
                                     attached_sync=(*plan.attached_sync, *sends)))


class SyncTasks(msgspec.Struct, frozen=True):
    """A14 (spec 7): every graph node as a task, its Recvs before it, its Sends after it; the
    StreamActive nodes of 6.3 after the last task of their graph."""

    name = "sync-tasks"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The task order of Phase A."""
        namer = plan.namer.copy()
        columns = place_after_graph(ctx.model, _phase_a_tasks(ctx, plan, namer),
                                    list(plan.activation.generated.values()))
        return outcome(plan, replace(plan, tasks=columns.table(), namer=namer))


def _phase_a_tasks(ctx: SyncInputs, plan: SyncState, namer: Namer) -> TaskColumns:
    """Per node in T-order: its Recvs, the node, its Sends, each in GE's creation order (spec
    7): Phase A's events on the main stream (the pairs, then the attached-dependency and loop
    events), those on an attached stream (2.6's, then 2.7's), then the notifies. The nodes'
    rows are made as columns; only the few synchronized nodes are visited one by one."""
    model = ctx.model
    main_events = [plan.events] if ctx.notify else [plan.pairs, plan.events]
    notifies = [plan.pairs] if ctx.notify else []
    attached = _attached_by_node(plan.attached_sync)
    synced = {name for m in [*main_events, *notifies] for side in (m.send, m.recv)
              for name, ids in side.items() if ids} | {name for name, _ in attached}
    names = list(model.order)
    streams = values_of(plan.streams, names)
    columns = TaskColumns(names, streams, values_of(model.attached, names, ()), {})
    inserts: list[tuple[int, Task]] = []
    for row in sorted(map(model.ids.__getitem__, synced)):  # T-order
        name, stream = names[row], streams[row]
        peer = (name, model.node(name).graph)
        # the Sends, then the Recvs, each in the order of the lists above: the namer numbers
        # them as they are made
        after = [sync_task(namer, "Send", x, stream, peer)
                 for m in main_events for x in m.send.get(name, ())]
        after += [sync_task(namer, "Send", x, on, peer) for x, on in attached.get((name, True), ())]
        after += [sync_task(namer, "Send_Notify", x, stream, peer)
                  for m in notifies for x in m.send.get(name, ())]
        before = [sync_task(namer, "Recv", x, stream, peer)
                  for m in main_events for x in m.recv.get(name, ())]
        before += [sync_task(namer, "Recv", x, on, peer)
                   for x, on in attached.get((name, False), ())]
        before += [sync_task(namer, "Recv_Notify", x, stream, peer)
                   for m in notifies for x in m.recv.get(name, ())]
        inserts += [*zip(repeat(row), before), *zip(repeat(row + 1), after)]
    return columns.inserted(inserts)


def _attached_by_node(records: tuple[AttachedSync, ...]
                      ) -> defaultdict[tuple[str, bool], list[tuple[int, int]]]:
    """(node, send?) -> [(id, attached stream)]: 2.6's records, then 2.7's."""
    found: defaultdict[tuple[str, bool], list[tuple[int, int]]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.explicit):
        found[(record.node, record.send)].append((record.id, record.stream))
    return found


class AttachedResources(msgspec.Struct, frozen=True):
    """A16 (spec 4.5): the event and notify ids kernels reserve: attached notify resources
    after the notifies, then attached event resources after every Phase A event."""

    name = "attached-resources"

    def apply(self, ctx: SyncInputs, plan: SyncState) -> PassResult[SyncState]:
        """The reserved ids per node; the event counter moves past them."""
        resources = reserve_resources(ctx.model, plan.events.counter, plan.notify_count)
        events = plan.events.copy()
        events.counter += resources.event_count
        return outcome(plan, replace(plan, events=events, resources=resources))
