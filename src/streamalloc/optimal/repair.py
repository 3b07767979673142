"""Starting points brought within the rules.

The makespan objective's starting points (list schedules, packings, Nimble's chains, prologue
variants) know no rules, so the rules rejected nearly all of them and the search started from
ge mode's own streams. Under GE's rule set it is the engine caps (`StreamCap`: at most N streams
opened by an engine's nodes in a graph, `ge.streamMaxParallelNum`, one by default): the
48-layer transformer training step under the parallel options went from 57.1 to 56.7 ms, where
its fastest start without rules runs 21.4 ms with 7 streams opened by AI Core nodes against a
cap of 4. Under a user's rule file it is its forms as well.

`within_rules` first moves nodes as each form asks: a `SameStream` group onto the stream of
its first node, a `DedicatedStream` group onto a new stream, the nodes of a `DifferentStreams`
second side that share a stream with the first side onto a new one, a `DisjointGroups` group
that shares a stream with an earlier group onto a new one. Then it merges streams until every
cap holds: at each step one of the streams an engine over its cap opens, the one with the least
work, joins another stream of its graph, the one that gives the shortest schedule estimate
(dependencies and stream order, no contention) among the merges that lower the count and break
no other rule. A stream keeps T-order, so every result is deadlock free. Starts of more than
MAX_STREAMS streams are not repaired (a merge tries every stream); pinned and attached streams
are not moved (the rules then reject the start).

`within_stream_limit` merges streams the same way until the device's stream limit holds, a
stream joining one of any graph (the limit counts the model's streams; ge mode's own streams
span subgraphs): a start over it is rejected whole, and the polish cannot bring one within
it, since each of its moves must be. ge mode's own streams are such a start when its plan is
over the limit. Where the least loaded stream can join none, the next one moves (the only
stream of a subgraph could not join one of its graph, and a graph with While and If nodes
lost every start so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import (
    assignment_of,
    breaks,
    chains_of_assignment,
    placement_of,
)
from streamalloc.optimal.found import Chains
from streamalloc.rules.check import broken
from streamalloc.rules.constraints import (
    Constraint,
    DedicatedStream,
    DifferentStreams,
    DisjointGroups,
    SameStream,
    StreamCap,
)
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length

MAX_STREAMS = 64  # the packings' starts have 7-11 streams, the list schedules' hundreds


def within_rules(graph: Graph, dag: TaskDag, chains: Chains, constraints: Sequence[Constraint],
                 durations: Sequence[int]) -> Chains | None:
    """`chains` with nodes moved and streams merged until `constraints` hold (`chains` itself
    when they do); None when they cannot be made to hold so, or the start has more than
    MAX_STREAMS streams."""
    if not constraints:
        return chains
    streams = assignment_of(dag, chains)
    if not breaks(graph, dag, constraints, streams):
        return chains
    if len(chains) > MAX_STREAMS:
        return None
    index = {n: v for v, n in enumerate(dag.names)}

    def at(names: Sequence[str]) -> list[int]:
        return [index[n] for n in names if n in index]

    for constraint in constraints:
        place = _PLACES.get(type(constraint))
        if place is not None:
            place(constraint, streams, at)
    caps: list[Constraint] = [c for c in constraints if isinstance(c, StreamCap)]
    others: list[Constraint] = [c for c in constraints if not isinstance(c, StreamCap)]
    capped = _merged(graph, dag, streams, over=partial(_over_caps, graph, dag, caps, index),
                     others=others, durations=durations, same_graph=True)
    if capped is None or breaks(graph, dag, constraints, capped):
        return None
    return chains_of_assignment(capped)


def _same(c: SameStream, streams: list[int], at: Callable[[Sequence[str]], list[int]]) -> None:
    members = at(c.nodes)
    if members:
        first = streams[min(members)]
        for v in members:
            streams[v] = first


def _dedicated(c: DedicatedStream, streams: list[int],
               at: Callable[[Sequence[str]], list[int]]) -> None:
    fresh = max(streams) + 1
    for v in at(c.nodes):
        streams[v] = fresh


def _different(c: DifferentStreams, streams: list[int],
               at: Callable[[Sequence[str]], list[int]]) -> None:
    taken, fresh = {streams[v] for v in at(c.first)}, max(streams) + 1
    for v in at(c.second):
        if streams[v] in taken:
            streams[v] = fresh


def _disjoint(c: DisjointGroups, streams: list[int],
              at: Callable[[Sequence[str]], list[int]]) -> None:
    used: set[int] = set()
    for group in c.groups:
        members = at(group)
        if used & {streams[v] for v in members}:
            fresh = max(streams) + 1
            for v in members:
                streams[v] = fresh
        used |= {streams[v] for v in members}


# how each form moves nodes (in place); the other forms move none
_PLACES: Mapping[type, Callable[..., None]] = {
    SameStream: _same, DedicatedStream: _dedicated, DifferentStreams: _different,
    DisjointGroups: _disjoint,
}


def within_stream_limit(graph: Graph, dag: TaskDag, chains: Chains, *, limit: int,
                        constraints: Sequence[Constraint], durations: Sequence[int]
                        ) -> Chains | None:
    """`chains` with streams merged, as for the caps, until at most `limit` remain; None when
    they cannot be without breaking one of `constraints`, or the start has more than
    MAX_STREAMS streams."""
    if len(chains) <= limit:
        return chains
    if len(chains) > MAX_STREAMS:
        return None

    def over(streams: Sequence[int]) -> Excess | None:
        return (set(streams), lambda _: True) if len(set(streams)) > limit else None

    merged = _merged(graph, dag, assignment_of(dag, chains), over=over,
                     others=list(constraints), durations=durations, same_graph=False)
    return None if merged is None else chains_of_assignment(merged)


# the streams one of which must join another, and whether a trial merge lowers the excess
Excess = tuple[set[int], Callable[[Sequence[int]], bool]]


def _merged(graph: Graph, dag: TaskDag, streams: list[int], *,
            over: Callable[[Sequence[int]], Excess | None], others: list[Constraint],
            durations: Sequence[int], same_graph: bool) -> list[int] | None:
    """`streams` with streams merged until `over` finds no excess (None when no merge lowers
    it without breaking one of `others`); `same_graph`: a stream joins only one of its own
    graph (a cap counts per graph), else any (ge mode's streams span subgraphs too)."""
    work = [0] * (max(streams, default=-1) + 1)
    for v, s in enumerate(streams):
        work[s] += durations[v]
    excess = over(streams)
    while excess is not None:
        movable, lowers = excess
        for moved in sorted(movable, key=lambda s: (work[s], s)):
            best = _best_merge(graph, dag, streams, moved, lowers=lowers, others=others,
                               durations=durations, same_graph=same_graph)
            if best is not None:
                break
        else:
            return None
        work[best[0]] += work[moved]
        streams = best[1]
        excess = over(streams)
    return streams


def _best_merge(graph: Graph, dag: TaskDag, streams: list[int], moved: int, *,
                lowers: Callable[[Sequence[int]], bool], others: list[Constraint],
                durations: Sequence[int], same_graph: bool) -> tuple[int, list[int]] | None:
    """The stream `moved` joins (of its graph when `same_graph`) and the streams then: the
    merge with the shortest schedule estimate among those that lower the excess and break
    none of `others`; None when there is none (say, the only stream of a subgraph under a
    cap: then the next least-loaded stream moves)."""
    home = dag.graphs[streams.index(moved)]
    best: tuple[int, int, list[int]] | None = None
    for target in sorted(set(streams)):
        if target == moved or (same_graph and dag.graphs[streams.index(target)] != home):
            continue
        trial = [target if s == moved else s for s in streams]
        if not lowers(trial) or breaks(graph, dag, others, trial):
            continue
        length = schedule_length(dag, durations, trial)
        if best is None or (length, target) < best[:2]:
            best = (length, target, trial)
    return None if best is None else (best[1], best[2])


def _over_caps(graph: Graph, dag: TaskDag, caps: list[Constraint], index: dict[str, int],
               streams: Sequence[int]) -> Excess | None:
    """The streams opened under the first cap `streams` break; a merge lowers the excess
    when that cap then counts fewer."""
    found = _over(graph, dag, streams, caps)
    if found is None:
        return None
    cap, opened = found

    def lowers(trial: Sequence[int]) -> bool:
        left = _over(graph, dag, trial, [cap])
        return left is None or len(left[1]) < len(opened)

    return {streams[index[n]] for n in opened}, lowers


def _over(graph: Graph, dag: TaskDag, streams: Sequence[int], caps: list[Constraint]
          ) -> tuple[Constraint, tuple[str, ...]] | None:
    """The first cap `streams` break and the openers of the streams it counts."""
    problems = broken(caps, graph, placement_of(dag, streams)) if caps else []
    return (problems[0].constraint, problems[0].nodes) if problems else None

