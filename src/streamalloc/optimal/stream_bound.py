"""The fewest main streams a plan under the rules needs, the fewest streams the nodes' task
units need, and the fewest events the rules need: where one is over the device's limit, no plan
fits, and the optimal mode says so at once instead of searching.

A dedicated-stream group keeps a stream to itself, so each such group (those that share no
node: groups that do are one stream or no plan) needs one, and the other streamed nodes at
least one more; among those other nodes, the groups of a separate-streams or disjoint-groups
rule that hold one each need a stream of their own. The bound is the dedicated groups plus
the most that any one of those rules (or the other nodes) needs; a pin to stream k needs k + 1
(streams 0..k) where that is more. Engine caps bound the streams from above, not below, and a
stream may span graphs (ge mode's own streams do), so neither adds to it.

A stream holds at most `max_task_per_stream` less the reserved units of node tasks, or one
larger task alone (GE splits before a task that would pass that, unless the stream holds
nothing yet; sync tasks only add), so the bins a packing of the nodes' units needs bound the
physical streams (none where the runtime does not split, nor in single-stream mode, whose one
stream GE may make huge).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from streamalloc.facts import RESERVED_UNITS
from streamalloc.ir.graph import Graph
from streamalloc.optimal.bins import martello_toth
from streamalloc.optimal.event_bound import node_capacity
from streamalloc.rules.constraints import (
    Constraint,
    DedicatedStream,
    DifferentStreams,
    DisjointGroups,
    PinnedStream,
)
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.limits import limits_of
from streamalloc.sync.split import CONTINUOUS_LABEL, splits_before
from streamalloc.sync.tasks import main_units


@dataclass(frozen=True)
class StreamsNeeded:
    """At least `streams` streams, and why."""

    streams: int
    why: str


def streams_needed(dag: TaskDag, constraints: Sequence[Constraint]) -> StreamsNeeded:
    """The fewest main streams a plan of `dag`'s nodes under `constraints` needs."""
    streamed = set(dag.names)
    dedicated = _dedicated_groups(dag, constraints)
    rules = Counter(rule for rule, _ in dedicated)
    apart = streamed.difference(*(group for _, group in dedicated))
    rest, rest_why = (1, "the other nodes") if apart else (0, "")
    for c in constraints:
        sides = (c.first, c.second) if isinstance(c, DifferentStreams) else \
            c.groups if isinstance(c, DisjointGroups) else ()
        held = sum(1 for side in sides if apart.intersection(side))
        if held > rest:
            rest, rest_why = held, f"the other nodes, in groups rule {c.rule!r} keeps apart"
    parts = [f"{count} that rule {rule!r} keeps each for a group of nodes alone"
             for rule, count in rules.items()]
    parts += [f"{rest} for {rest_why}"] if rest else []
    needed = StreamsNeeded(len(dedicated) + rest, ", ".join(parts))
    pins = [c for c in constraints if isinstance(c, PinnedStream) and streamed & set(c.nodes)]
    top = max(pins, key=lambda c: c.stream, default=None)
    if top is not None and top.stream + 1 > needed.streams:  # ids 0..k for a pin to k
        return StreamsNeeded(top.stream + 1, f"rule {top.rule!r} pins nodes to stream "
                                             f"{top.stream}")
    return needed


def events_needed(dag: TaskDag, constraints: Sequence[Constraint]) -> tuple[int, str]:
    """The fewest events (and notifies) a plan under `constraints` needs, and why. A
    dedicated-stream group that depends on a node outside it receives an event on its own
    stream, and one that a node outside it depends on sends one; no two groups share a
    stream, so each such group needs an event of its own each way (for a graph where only
    events order streams). Where no path joins two groups, no event goes from one to another,
    so the events they receive and those they send are different ones: the bound is both
    counts together; else the larger."""
    groups = _dedicated_groups(dag, constraints)
    index = {n: v for v, n in enumerate(dag.names)}
    group_of = {index[n]: k for k, (_, group) in enumerate(groups) for n in group}
    waits: Counter[str] = Counter()
    sends: Counter[str] = Counter()
    for rule, group in groups:
        members = {index[n] for n in group}
        waits[rule] += any(u not in members for v in members for u in dag.preds[v])
        sends[rule] += any(w not in members for v in members for w in dag.succs[v])
    received, sent = sum(waits.values()), sum(sends.values())
    joined = _groups_joined(dag, group_of)
    total = max(received, sent) if joined else received + sent
    kept = Counter(rule for rule, _ in groups)
    why = "; ".join(f"rule {rule!r} keeps {kept[rule]} group(s) on a stream alone: "
                    f"{waits[rule]} wait for another stream, {sends[rule]} are waited for"
                    for rule in kept if waits[rule] or sends[rule])
    return total, why + ("; paths join groups, so not both counts" if joined and total else "")


def _groups_joined(dag: TaskDag, group_of: dict[int, int]) -> bool:
    """Does a path lead from one group's node to another group's (in T-order, the least and
    the greatest group reaching each node: another one reaches a member when either is not
    its own)?"""
    none = len(group_of)
    least, most = [none] * dag.size, [-1] * dag.size
    for v in range(dag.size):
        for u in dag.preds[v]:
            own = group_of.get(u)
            least[v] = min(least[v], least[u], none if own is None else own)
            most[v] = max(most[v], most[u], -1 if own is None else own)
        own = group_of.get(v)
        if own is not None and (least[v] not in (none, own) or most[v] not in (-1, own)):
            return True
    return False


def _dedicated_groups(dag: TaskDag, constraints: Sequence[Constraint]
                      ) -> list[tuple[str, frozenset[str]]]:
    """The dedicated-stream groups with a streamed node, each rule's in order (a group that
    shares a node with an earlier one is the same stream or no plan: it is left out)."""
    streamed = set(dag.names)
    groups: list[tuple[str, frozenset[str]]] = []
    for c in constraints:
        if isinstance(c, DedicatedStream):
            group = frozenset(c.nodes) & streamed
            if group and not any(group & earlier for _, earlier in groups):
                groups.append((c.rule, group))
    return groups


def split_streams_needed(graph: Graph, dag: TaskDag) -> StreamsNeeded | None:
    """The fewest physical streams `dag`'s nodes' task units need; None where the runtime does
    not split streams or in single-stream mode."""
    capacity = node_capacity(graph)
    if capacity is None or graph.option("ge.enableSingleStream") == "true":
        return None
    nodes = [graph.node(n) for n in dag.names]
    # a node the split keeps with its predecessors, or one of a continuous label (its group
    # moves as one, counted by GE's approximation), may join any stream: left out
    sizes = [main_units(graph, node) for node in nodes
             if splits_before(node) and not node.has_attr(CONTINUOUS_LABEL)]
    most = limits_of(graph).max_task_per_stream
    depth = most - RESERVED_UNITS
    option = f"option streamalloc.max_task_per_stream {most}"
    why = f"{option} less {RESERVED_UNITS} reserved: at most {depth} on a stream, or one " \
        "larger task alone" if depth > 0 else \
        f"{option} leaves no units beyond the {RESERVED_UNITS} reserved: each task with units " \
        "on a stream of its own"
    return StreamsNeeded(martello_toth(sizes, capacity),
                         f"the nodes' {sum(sizes)} task units, {why}")
