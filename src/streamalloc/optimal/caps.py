"""Starting points brought within GE's per-engine stream caps.

The makespan objective's starting points (list schedules, packings, Nimble's chains, prologue
variants) know no rules. Under GE's rule set the engine caps (`StreamCap`: at most N streams
opened by an engine's nodes in a graph, `ge.streamMaxParallelNum`) reject nearly all of them,
and the search then starts from ge mode's own streams: the 48-layer transformer training step
under the parallel options went from 57.1 to 56.7 ms, where its fastest start without rules
runs 21.4 ms with 7 streams opened by AI Core nodes against a cap of 4.

`within_caps` merges streams until every cap holds: at each step one of the streams an engine
over its cap opens, the one with the least work, joins another stream of its graph, the one
that gives the shortest schedule estimate (dependencies and stream order, no contention) among
the merges that lower the count. A merged stream keeps T-order, so the result stays deadlock
free. Starts of more than MAX_STREAMS streams are not repaired (each step tries every stream).
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import assignment_of, chains_of_assignment
from streamalloc.rules.check import Placement, broken
from streamalloc.rules.constraints import Constraint, StreamCap
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import schedule_length

MAX_STREAMS = 64  # the packings' starts have 7-11 streams, the list schedules' hundreds

Chains = tuple[tuple[int, ...], ...]


def within_caps(graph: Graph, dag: TaskDag, chains: Chains, constraints: Sequence[Constraint],
                durations: Sequence[int]) -> Chains | None:
    """`chains` with streams merged until the engine caps among `constraints` hold (`chains`
    itself when they do); None when a cap cannot be met so, or the start has more than
    MAX_STREAMS streams."""
    caps: list[Constraint] = [c for c in constraints if isinstance(c, StreamCap)]
    streams = assignment_of(dag, chains)
    over = _over(graph, dag, streams, caps)
    if over is None:
        return chains
    if len(chains) > MAX_STREAMS:
        return None
    work = [0] * (max(streams, default=-1) + 1)
    for v, s in enumerate(streams):
        work[s] += durations[v]
    while over is not None:
        cap, opened = over
        index = {n: v for v, n in enumerate(dag.names)}
        moved = min((streams[index[n]] for n in opened), key=lambda s: (work[s], s))
        home = dag.graphs[streams.index(moved)]
        best: tuple[int, int, list[int]] | None = None
        for target in sorted(set(streams)):
            if target == moved or dag.graphs[streams.index(target)] != home:
                continue
            trial = [target if s == moved else s for s in streams]
            left = _over(graph, dag, trial, [cap])
            if left is not None and len(left[1]) >= len(opened):
                continue
            length = schedule_length(dag, durations, trial)
            if best is None or (length, target) < best[:2]:
                best = (length, target, trial)
        if best is None:
            return None
        work[best[1]] += work[moved]
        streams = best[2]
        over = _over(graph, dag, streams, caps)
    return chains_of_assignment(streams)


def _over(graph: Graph, dag: TaskDag, streams: Sequence[int], caps: list[Constraint]
          ) -> tuple[Constraint, tuple[str, ...]] | None:
    """The first cap `streams` break and the openers of the streams it counts."""
    placement = Placement({dag.names[v]: streams[v] for v in range(dag.size)}, {})
    problems = broken(caps, graph, placement)
    return (problems[0].constraint, problems[0].nodes) if problems else None
