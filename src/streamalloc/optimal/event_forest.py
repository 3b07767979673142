"""A plan with as few events as the streams bound joins its physical streams in a forest, and a
forest runs the tasks between a source and a sink one after the other.

Take a plan's physical streams as vertices and each event or notify as an edge from its Send's
stream to its Recv's. Every dependency between streams is ordered by a walk of edges, so each
component of the dependencies lies in one component of this graph, and a graph of P vertices
in K components has at least P - K edges, exactly that many only as a forest. The events bound
(`optimal/event_bound.py`) is P - C (the fewest streams less the components of the
dependencies), so a plan with that many events uses the fewest streams and its streams form a
forest: one event on each edge, and every walk a simple path.

In a forest, let c reach x and y, and x and y reach d (tasks on streams C, X, Y, D). The walks
C -> X -> D and C -> Y -> D are the one path from C to D, so X and Y both lie on it, say X
first. If X != Y, x leaves X by the one Send of X's edge towards D, so x ends before that
Send; the walk from c to y passes the same Send, so y starts after it: x and y never overlap
(on one stream they never do). Every task that a source c reaches and that reaches a sink d
(c and d included) then runs one at a time, and the plan runs at least their time.

Where that time is over the makespan limit for some source and sink, no plan within the limit
is a forest: each needs one event more than the streams bound. The ResNet-50 training step
under the parallel options: 12,178 us from its input to its output, over ge mode's 10,148, so
42 events instead of 41, which the optimal mode's plan has.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from streamalloc.optimal.fork_join import closure
from streamalloc.solver.dag import TaskDag

MAX_NODES = 5_000  # streamed nodes; above, no check (its bitsets grow as the square)
PAIRS = 4096  # (source, sink) pairs whose tasks between are added up at most, the longest
# sides first (a pair left out only weakens the bound)


def serialized_over(dag: TaskDag, times: Sequence[float], limit_us: float) -> bool:
    """Do the tasks between some source and some sink of `dag` (`times`: each node's task time
    on its stream) take longer than `limit_us` one after the other?"""
    size = dag.size
    if size == 0 or size > MAX_NODES:
        return False
    weights = np.asarray(times, dtype=np.float64)
    after = closure(range(size - 1, -1, -1), dag.succs)  # per node, the nodes it reaches
    before = dag.ancestors
    sources = _longest(weights, [after[v] | 1 << v for v in range(size) if not dag.preds[v]],
                       limit_us)
    sinks = _longest(weights, [before[v] | 1 << v for v in range(size) if not dag.succs[v]],
                     limit_us)
    pairs = 0
    for reached in sources:
        for reaching in sinks:
            if pairs == PAIRS:
                return False
            pairs += 1
            if _time(weights, reached & reaching) > limit_us:
                return True
    return False


def _longest(weights: np.ndarray, masks: list[int], limit_us: float) -> list[int]:
    """Those of `masks` whose nodes take longer than `limit_us`, the longest first (the pair's
    tasks are a subset of each side's)."""
    timed = sorted(((_time(weights, m), k) for k, m in enumerate(masks)), key=lambda t: -t[0])
    return [masks[k] for time, k in timed if time > limit_us]


def _time(weights: np.ndarray, mask: int) -> float:
    """The time of the nodes in `mask`, bit v for node v."""
    raw = np.frombuffer(mask.to_bytes((len(weights) + 7) // 8, "little"), dtype=np.uint8)
    bits = np.unpackbits(raw, bitorder="little")[:len(weights)]
    return float(bits @ weights)
