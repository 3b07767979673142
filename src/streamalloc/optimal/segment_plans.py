"""Plans of single segments from the runs the sync-aware bound found: a last change to the
makespan search's best plan.

Between two consecutive cut tasks a and b (tasks ordered with every other task,
`optimal/series.py`) every other task runs after a and before b. For its series floors the
bound solves each such segment of up to 16 tasks with CP-SAT, on a relaxation that keeps the
streams, the engines' units and a Send and a Recv around each cross-stream dependency; the
best run that solve found is a plan of the segment: each task on the stream the run gives it,
the segment's tasks in the order the run starts them. BERT base's attention blocks: from a
layer's LayerNorm to its second MatMul the search's best takes 44.6 us, running the value
projection first; the run puts it after the query's and key's projections, which the scores'
chain waits for, and starts that chain on a stream of its own: 38.6 us. The search does not
find that on its own: it moves one task or branch at a time.

The relaxation leaves out what streams cost beyond that (an engine's strict arrival order, a
Send or Recv shared by two dependencies), so a segment's plan can run slower than the start's:
`with_segment_plans` tries one kind of segment at a time (equal segments, such as BERT's 11
attention blocks after the first, together), on the emulated device, and keeps each kind
whose plans run faster.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from streamalloc.optimal.evaluate import assignment_of, chains_of_assignment
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.found import Found
from streamalloc.optimal.options import TIME_SCALE
from streamalloc.optimal.order import Orders
from streamalloc.optimal.series import SegmentRun
from streamalloc.solver.dag import TaskDag


def with_segment_plans(dag: TaskDag, start: Found, makespan: int, *,
                       runs: Sequence[SegmentRun[str]], evaluator: Evaluator,
                       allowed: Callable[[Sequence[int]], bool]) -> tuple[Found, int]:
    """`start` (its emulated `makespan` in schedule units) with the plans of the segments of
    `runs` (tasks named by node) put in, kind by kind in the order the kinds first run,
    where each kind makes the plan faster, within the rules (`allowed`), the device's
    limits and the event budget; and the makespan of the result. Only where the search may
    order (`evaluator.orders`): the plans run the segments' tasks in their own order."""
    orders = evaluator.orders
    index: dict[str, int] = {name: v for v, name in enumerate(dag.names)}
    usable = [run for run in runs if all(name in index for name in run.members)]
    if orders is None or not usable:
        return start, makespan
    idle = [evaluator.tasks[name][1] == 0 for name in dag.names]
    budget = evaluator.options.event_budget
    best, kept = (start, makespan), set[int]()
    for kind in dict.fromkeys(run.kind for run in usable):
        trial = kept | {kind}
        found = _applied(dag, start, [r for r in usable if r.kind in trial], index=index,
                         orders=orders, idle=idle)
        streams = assignment_of(dag, found[0])
        outcome = evaluator.outcome(streams, found[1]) if allowed(streams) else None
        if outcome is None or (budget is not None and outcome.events > budget):
            continue
        length = math.ceil(outcome.makespan_us * TIME_SCALE)
        if length < best[1]:
            best, kept = (found, length), trial
    return best


def _applied(dag: TaskDag, start: Found, runs: Sequence[SegmentRun[str]], *, index: dict[str, int],
             orders: Orders, idle: Sequence[bool]) -> Found:
    """`start` with each run's segment on the run's streams, in the run's order. A run's
    stream 0 is its first task's (a's) stream; its other streams take the lowest ids of the
    plan but a's, then new ones (every task outside the segment runs before a or after b, so
    any stream is free in between). What followed b on its stream in `start` follows it on
    its new one: the two ids swap for everything after b. A node without work (`idle`) that
    consumes a task of the segment but b goes with the latest such task."""
    chains, order = start
    original = assignment_of(dag, chains)
    position = {name: i for i, name in enumerate(order if order is not None else orders.start)}
    placed: dict[int, tuple[int, int, int]] = {}  # member but a -> (run, its stream, start)
    for k, run in enumerate(runs):
        for name, stream, begin in zip(run.members[1:], run.streams[1:], run.starts[1:],
                                       strict=True):
            placed[index[name]] = (k, stream, begin)
    firsts = {index[run.members[0]]: k for k, run in enumerate(runs)}
    lasts = {index[run.members[-1]] for run in runs}
    ids = sorted(set(original))
    relabel = {s: s for s in ids}
    streams = list(original)
    key = {v: (position[name], 0.0) for v, name in enumerate(dag.names)}
    mapping: dict[tuple[int, int], int] = {}  # (run, its stream) -> stream id
    for v in sorted(range(dag.size), key=lambda v: position[dag.names[v]]):
        producers = [u for u in dag.preds[v] if u in placed and u not in lasts]
        if v in placed:
            k, stream, begin = placed[v]
            streams[v] = mapping[(k, stream)]
            key[v] = (key[index[runs[k].members[0]]][0], float(begin))
            if v in lasts and relabel[original[v]] != streams[v]:
                old, new = relabel[original[v]], streams[v]
                relabel = {s: new if t == old else old if t == new else t
                           for s, t in relabel.items()}
        elif idle[v] and producers:
            u = max(producers, key=lambda p: key[p])
            streams[v], key[v] = streams[u], (key[u][0], key[u][1] + 0.5)
        else:
            streams[v] = relabel[original[v]]
        if v in firsts:
            k = firsts[v]
            others = (s for s in itertools.chain(ids, itertools.count(ids[-1] + 1))
                      if s != streams[v])  # a's stream may be a new id since an earlier b
            for stream in dict.fromkeys(runs[k].streams):
                mapping[(k, stream)] = streams[v] if stream == 0 else next(others)
    ranked = sorted(range(dag.size), key=lambda v: (*key[v], position[dag.names[v]]))
    return chains_of_assignment(streams), orders.following([dag.names[v] for v in ranked])
