"""Stream activation (spec 6): by label (6.1), for subgraphs (6.2), the loop activator (6.4)
and the post-split update (6.5).

`LabelActivation` is what 6.1 and 6.2 fix once (labels' streams, activators, first-active
nodes); `Activation` holds the activation lists as later steps extend them. A stage changes
its own `copy()` of an `Activation`, never the one in the state it was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import msgspec

from streamalloc.errors import AllocationInfeasible
from streamalloc.facts import INVALID
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps, Task


class LabelActivation(msgspec.Struct, frozen=True):
    """Fixed by 6.1 and 6.2: the streams of each stream label (a label some node activates but
    none carries has none), the nodes activating each label, the activators of each stream,
    and each subgraph's first-active node."""

    labeled_streams: Mapping[str, frozenset[int]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    activated_labels: Mapping[str, tuple[str, ...]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    stream_activators: Mapping[int, tuple[str, ...]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    first_active: Mapping[str, str] = msgspec.field(default_factory=lambda: MappingProxyType({}))


class Activation(msgspec.Struct):
    """The activation lists (`active_stream_list`: activator -> streams it starts), the streams
    some node activates, and the StreamActive nodes 6.3 made (name -> task)."""

    active_stream_list: dict[str, list[int]] = msgspec.field(default_factory=dict)
    activated_streams: set[int] = msgspec.field(default_factory=set)
    generated: dict[str, Task] = msgspec.field(default_factory=dict)

    def copy(self) -> Activation:
        """A copy the caller owns (the generated tasks are shared)."""
        return Activation({n: list(s) for n, s in self.active_stream_list.items()},
                          set(self.activated_streams), dict(self.generated))


def label_activation(model: SyncModel, streams: Mapping[str, int]
                     ) -> tuple[LabelActivation, Activation]:
    """A3 and A4: activation by label, then for subgraphs."""
    labeled: dict[str, set[int]] = {}
    for node in model.attributed:  # a node without attributes has no label
        label = model.label(node.name)
        if label and streams[node.name] != INVALID:
            labeled.setdefault(label, set()).add(streams[node.name])
    activation = Activation()
    activated_labels, activators = _by_label(model, labeled, activation)
    first_active = _for_subgraphs(model, streams, activation)
    fixed = LabelActivation(
        MappingProxyType({k: frozenset(v) for k, v in labeled.items()}),
        MappingProxyType({k: tuple(v) for k, v in activated_labels.items()}),
        MappingProxyType({k: tuple(v) for k, v in activators.items()}),
        MappingProxyType(first_active))
    return fixed, activation


def _by_label(model: SyncModel, labeled: dict[str, set[int]], activation: Activation
              ) -> tuple[dict[str, list[str]], dict[int, list[str]]]:
    """A3: nodes listing labels in `_active_label_list` activate those labels' streams."""
    activated_labels: dict[str, list[str]] = {}
    activators: dict[int, list[str]] = {}
    for node in model.attributed:
        labels = model.active_labels(node.name)
        if not labels:
            continue
        name = node.name
        streams = []
        for label in labels:
            activated_labels.setdefault(label, []).append(name)
            for s in sorted(labeled.setdefault(label, set())):
                streams.append(s)
                activation.activated_streams.add(s)
                activators.setdefault(s, []).append(name)
        activation.active_stream_list[name] = streams
    return activated_labels, activators


def _for_subgraphs(model: SyncModel, streams: Mapping[str, int],
                   activation: Activation) -> dict[str, str]:
    """A4: a subgraph's `subgraph_first_active` StreamActive starts its other streams."""
    first_active: dict[str, str] = {}
    for sub in model.graph.r_order():
        started: set[int] = set()
        first = None
        for node in model.graph.subgraphs[sub].nodes:
            if model.label(node.name):
                continue
            started |= {streams[node.name], *model.attached.get(node.name, ())} - {INVALID}
            if node.attr("subgraph_first_active") is True:
                first = node.name  # the last such node wins
        if first is None:
            continue
        first_active[sub] = first
        started.discard(streams[first])
        activation.active_stream_list[first] = [*activation.active_stream_list.get(first, []),
                                                *sorted(started)]
        activation.activated_streams |= started
    return first_active


def loop_activation(model: SyncModel, streams: Mapping[str, int], activation: Activation,
                    maps: SyncMaps, stream_num: int, *,
                    split: Sequence[set[int]] | None = None) -> None:
    """6.4: the first `is_loop_active` node starts every stream nobody else activates and gets
    one event from the last root-graph node of each loop stream to the iteration switch."""
    loop_streams = [s for s in range(stream_num) if s not in activation.activated_streams]
    for node in model.attributed:
        if node.attr("is_loop_active") is not True:
            continue
        name = node.name
        switch = _iteration_switch(model, name)
        if model.active_labels(node.name):
            continue
        activation.active_stream_list[name] = loop_streams
        last, has_switch = _last_nodes(model, streams, set(loop_streams))  # models with a loop
        for s in sorted(last):
            if split is not None and s < len(split) and not split[s]:
                continue
            if s in has_switch or model.node(last[s]).graph != model.graph.root.name:
                continue
            if switch is None:
                raise AllocationInfeasible(f"loop activator {name!r} has no StreamSwitch among "
                                           "its control predecessors")
            maps.pair(last[s], switch)
        break


def _last_nodes(model: SyncModel, streams: Mapping[str, int], wanted: set[int]
                ) -> tuple[dict[int, str], set[int]]:
    """The last node (T-order) of each stream, and the streams that hold a StreamSwitch."""
    last: dict[int, str] = {}
    has_switch: set[int] = set()
    for node in model.nodes:
        s = streams[node.name]
        if s in wanted:
            last[s] = node.name
            if node.type == "StreamSwitch":
                has_switch.add(s)
    return last, has_switch


def _iteration_switch(model: SyncModel, name: str) -> str | None:
    for p in model.node(name).control_inputs:
        if model.node(p).type == "StreamSwitch":
            return p
        for q in model.node(p).control_inputs:
            if model.node(q).type == "StreamSwitch":
                return q
    return None


class _AfterSplit(msgspec.Struct, frozen=True):
    """What 6.5 reads besides the activation it extends."""

    model: SyncModel
    streams: Mapping[str, int]
    first_active: Mapping[str, str]

    def graph_of(self, activation: Activation, name: str) -> str:
        """The owner graph of a graph node or a generated node."""
        made = activation.generated.get(name)
        return made.graph if made is not None else self.model.node(name).graph

    def stream_of(self, activation: Activation, name: str) -> int:
        """The current stream of a graph node or a generated node."""
        made = activation.generated.get(name)
        return made.stream if made is not None else self.streams[name]


def after_split(model: SyncModel, streams: Mapping[str, int], labels: LabelActivation,
                activation: Activation, *, split: Sequence[set[int]],
                opened_by: dict[int, Task]) -> Mapping[str, frozenset[int]]:
    """6.5 steps 1-3 and 5: activation lists learn the streams the split opened (`streams`:
    the physical streams of the graph nodes). Returns the label sets after step 1, which the
    switch handling of B5 reads."""
    view = _AfterSplit(model, streams, labels.first_active)
    labeled = _split_label_sets(labels.labeled_streams, activation, split)
    for name, listed in list(activation.active_stream_list.items()):
        if name not in activation.generated and model.node(name).type == "StreamSwitch":
            continue  # a switch goes through 6.3 again instead (B5)
        extra = []
        for t in listed:
            if t >= len(split):
                raise AllocationInfeasible(f"{name!r} activates stream {t}, which is not a "
                                           "logical stream")
            extra += [p for p in sorted(split[t])
                      if opened_by[p].graph == view.graph_of(activation, name)]
        activation.active_stream_list[name] = [*listed, *extra]
    for p, trigger in sorted(opened_by.items()):
        _subgraph_first_active(view, activation, p, trigger)
    for name, listed in activation.active_stream_list.items():
        if view.stream_of(activation, name) in listed:
            raise AllocationInfeasible(f"{name!r} would activate its own stream "
                                       f"{view.stream_of(activation, name)}")
    return labeled


def _split_label_sets(labeled: Mapping[str, frozenset[int]], activation: Activation,
                      split: Sequence[set[int]]) -> Mapping[str, frozenset[int]]:
    """6.5 step 1: a split logical stream's new streams are activated where it is, and join
    the set of the first label (label-string order) that holds it, only that one."""
    result = dict(labeled)
    for i, new in enumerate(split):
        if not new:
            continue
        if i in activation.activated_streams:
            activation.activated_streams |= new
        label = next((k for k in sorted(result) if i in result[k]), None)
        if label is not None:
            result[label] = result[label] | new
    return MappingProxyType(result)


def _subgraph_first_active(view: _AfterSplit, activation: Activation, p: int,
                           trigger: Task) -> None:
    graph = trigger.graph
    first = view.first_active.get(graph)
    labelled = not trigger.is_sync and view.model.label(trigger.name)
    if graph == view.model.graph.root.name or labelled or first is None:
        return
    if any(p in listed for listed in activation.active_stream_list.values()):
        return
    activation.activated_streams.add(p)
    if p != view.streams[first]:
        activation.active_stream_list[first] = sorted(
            {*activation.active_stream_list.get(first, []), p})
