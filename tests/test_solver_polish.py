"""The polish on the exact event count (`solver.polish`): a greedy pass keeps the first move
that helps, so the order it visits the event edges in decides which optimum it ends at (the
events objective runs it both ways, `optimal.search._polished_both_ways`)."""

from __future__ import annotations

from functools import partial

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length
from streamalloc.solver.polish import Polish

NAMES = ["a", "b", "c", "d", "e"]
# a forks to b, c and d; b feeds d and e; c feeds d. The critical path a -> c -> d takes 11.
EDGES = [("a", "b"), ("a", "c"), ("a", "d"), ("b", "d"), ("b", "e"), ("c", "d")]
DURATIONS = [4, 3, 4, 3, 1]


def polished(reverse: bool) -> tuple[int, list[int]]:
    dag = TaskDag.build(NAMES, EDGES, ["g"] * len(NAMES))
    length = partial(schedule_length, dag, DURATIONS)
    start = list(range(len(NAMES)))  # a stream per node
    run = Polish(dag, length, length(start), lambda streams, moved: True, 100, start,
                 reverse=reverse)
    streams = run.run()
    assert run.events == event_count(dag, streams) and length(streams) <= 11
    return run.events, streams


def test_the_order_of_the_pass_decides_the_optimum() -> None:
    # first to last: b joins a's stream first, then d (a, b, d); c would make it too long,
    # c and e keep streams of their own: 3 events (a -> c, c -> d, b -> e)
    assert polished(reverse=False) == (3, [0, 0, 2, 0, 4])
    # last to first: d joins c's stream, e joins b's, then a joins c's: the critical path
    # a -> c -> d on one stream, b and e on another: 2 events (a -> b, b -> d)
    assert polished(reverse=True) == (2, [2, 1, 2, 2, 1])
