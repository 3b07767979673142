"""StreamSwitch branch activation (spec 6.3, Phase A step A12 and again in B5).

Every label of a switch whose streams number two or more gets a new StreamActive node (named
`<switch>_StreamActive_<i>`) on a new stream of its own, which activates the label's streams;
the switch then activates only the new StreamActive streams (its list is overwritten, GE quirk).
The created nodes get no events: sync insertion has already run.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from streamalloc.errors import AllocationInfeasible
from streamalloc.ir.graph import Graph
from streamalloc.sync.activation import Activation
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import Task, TaskColumns


class SwitchState(msgspec.Struct):
    """Per switch, across both calls: its current label list, labels done, labels created."""

    labels: dict[str, list[str]] = msgspec.field(default_factory=dict)
    done: dict[str, set[str]] = msgspec.field(default_factory=dict)
    created: dict[str, set[str]] = msgspec.field(default_factory=dict)

    def copy(self) -> SwitchState:
        """A copy the caller owns."""
        return SwitchState({k: list(v) for k, v in self.labels.items()},
                           {k: set(v) for k, v in self.done.items()},
                           {k: set(v) for k, v in self.created.items()})


def handle_switches(model: SyncModel, labeled_streams: Mapping[str, frozenset[int]],
                    activation: Activation, state: SwitchState, stream_num: int) -> list[Task]:
    """Run 6.3 for every StreamSwitch in T-order; returns the StreamActive tasks it created
    (their `stream` is set; the caller advances the stream count by their number). The new
    nodes join `activation.generated` and activate the label streams (`labeled_streams`)."""
    made: list[Task] = []
    for name in (node.name for node in model.nodes if node.type == "StreamSwitch"):
        created = _one_switch(model, labeled_streams, activation, state, name)
        for task in created:
            task.stream = stream_num + len(made)
            activation.activated_streams.add(task.stream)
            activation.generated[task.name] = task
            made.append(task)
        if created:
            activation.active_stream_list[name] = [t.stream for t in created]
    return made


def _one_switch(model: SyncModel, labeled_streams: Mapping[str, frozenset[int]],
                activation: Activation, state: SwitchState, switch: str) -> list[Task]:
    value = model.node(switch).attr("_active_label_list", ())
    given = [str(v) for v in value] if isinstance(value, tuple) else []
    labels = state.labels.setdefault(switch, given)
    if not labels:
        raise AllocationInfeasible(f"StreamSwitch {switch!r} has no _active_label_list")
    done = state.done.setdefault(switch, set())
    created_labels = state.created.setdefault(switch, set())
    new_labels: list[str] = []
    created: list[Task] = []
    for i, label in enumerate(labels):
        if label not in labeled_streams:
            if label not in created_labels:
                raise AllocationInfeasible(f"StreamSwitch {switch!r} activates label {label!r}, "
                                           "which no node carries")
            new_labels.append(label)
            continue
        if len(labeled_streams[label]) <= 1 or label in done:
            new_labels.append(label)
            continue
        done.add(label)
        active = Task(f"{switch}_StreamActive_{i}", "StreamActive", model.node(switch).graph,
                      -1, is_sync=True, peer=switch)
        created_labels.add(active.name)
        activation.active_stream_list[active.name] = sorted(labeled_streams[label])
        new_labels.append(active.name)
        created.append(active)
    state.labels[switch] = new_labels
    return created


def graph_parents(graph: Graph) -> dict[str, str | None]:
    """Each graph's enclosing graph (None for the root)."""
    return {c.name: graph.node(c.parent).graph if c.parent else None for c in graph.graphs()}


def place_after_graph(model: SyncModel, columns: TaskColumns, made: list[Task]) -> TaskColumns:
    """Insert each created node where GE appends it: after the last task of its graph (and of
    the subgraphs nested in it)."""
    parents = graph_parents(model.graph)
    by_name = model.graph.by_name
    for task in made:  # a few StreamActive nodes, in models with switches
        graphs = [columns.made[r].graph if r in columns.made else by_name[name].graph
                  for r, name in enumerate(columns.names)]
        last = max((r for r, graph in enumerate(graphs) if _within(graph, task.graph, parents)),
                   default=len(graphs) - 1)
        columns = columns.inserted([(last + 1, task)])
    return columns


def _within(graph: str, ancestor: str, parents: dict[str, str | None]) -> bool:
    current: str | None = graph
    while current is not None:
        if current == ancestor:
            return True
        current = parents.get(current)
    return False
