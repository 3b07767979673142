"""The polish on the exact event count (`solver.polish`): a greedy pass keeps the first move
that helps, so the order it visits the event edges in decides which optimum it ends at (the
events objective runs it both ways, `optimal.polishing.polish_both_ways`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length
from streamalloc.solver.polish import Polish, Remembered, polish

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


def test_a_length_is_measured_once_per_partition() -> None:
    dag = TaskDag.build(NAMES, EDGES, ["g"] * len(NAMES))
    measured: list[list[int]] = []

    def length(streams: Sequence[int]) -> int:
        measured.append(list(streams))
        return schedule_length(dag, DURATIONS, streams)

    remembered_length = Remembered(length)
    assert remembered_length([0, 0, 1, 1, 2]) == remembered_length([7, 7, 3, 3, 0])  # labels
    assert remembered_length([0, 1, 1, 1, 2]) != remembered_length([0, 0, 1, 1, 2])
    assert measured == [[0, 0, 1, 1, 2], [0, 1, 1, 1, 2]]
    # a polish gives the same streams with it, and measures each partition once
    start = list(range(len(NAMES)))
    plain = Polish(dag, partial(schedule_length, dag, DURATIONS), 11,
                   lambda streams, moved: True, 100, list(start)).run()
    measured.clear()
    assert polish(dag, start, length=length, limit=11, allowed=lambda streams, moved: True,
                  budget=100) == plain
    partitions = [tuple(sorted(tuple(v for v, x in enumerate(s) if x == k) for k in set(s)))
                  for s in measured]
    assert partitions and len(partitions) == len(set(partitions))


def test_a_polish_computes_no_more_lengths_than_its_cap() -> None:
    dag = TaskDag.build(NAMES, EDGES, ["g"] * len(NAMES))
    calls: list[int] = []

    def length(streams: Sequence[int]) -> int:
        calls.append(1)
        return schedule_length(dag, DURATIONS, streams)

    start = list(range(len(NAMES)))
    free = Polish(dag, Remembered(length), 11, lambda streams, moved: True, 100, list(start))
    free.run()
    assert len(calls) > 2  # uncapped, it measures more than the cap below allows
    calls.clear()
    capped = Polish(dag, Remembered(length, 2), 11, lambda streams, moved: True, 100,
                    list(start))
    capped.run()
    assert len(calls) == 2 and capped.budget > 0  # it stopped at the cap, tries left


# A round trip through a side stream: q (stream 0) feeds s1 -> s2 on stream 1, whose result
# o joins stream 0 again; z, long and unrelated, keeps stream 1 busy from the start.
TRIP_NAMES = ["z", "p", "q", "s1", "s2", "o", "r"]
TRIP_EDGES = [("p", "q"), ("q", "s1"), ("s1", "s2"), ("s2", "o"), ("q", "o"), ("o", "r")]
TRIP_DURATIONS = [10, 1, 1, 1, 1, 1, 1]


def trip_polish(start: list[int], *, round_trips: bool = True) -> Polish:
    dag = TaskDag.build(TRIP_NAMES, TRIP_EDGES, ["g"] * len(TRIP_NAMES))
    return Polish(dag, partial(schedule_length, dag, TRIP_DURATIONS), 10,
                  lambda streams, moved: True, 100, start, round_trips=round_trips)


def test_a_round_trip_moves_back_whole() -> None:
    start = [1, 0, 0, 1, 1, 0, 0]
    run = trip_polish(list(start))
    assert event_count(run.dag, start) == 2
    # found from either event: from q -> s1 the nodes after it that lead back, from s2 -> o
    # the nodes before it that came from stream 0
    assert run._round_trips(2, 3) == [([3, 4], 0)] and run._round_trips(4, 5) == [([3, 4], 0)]
    # moving s1 or q alone keeps two events, and merging the streams puts z before the
    # chain (length 16 > 10): only s1 and s2 together onto stream 0 remove both events
    for moved, target in (([3], 0), ([2], 1)):
        trial = list(start)
        for w in moved:
            trial[w] = target
        assert event_count(run.dag, trial) == 2
    assert schedule_length(run.dag, TRIP_DURATIONS, [0] * len(start)) == 16
    assert run.run() == [1, 0, 0, 0, 0, 0, 0] and run.events == 0
    # without them (the makespan objective's polish) the two events stay
    without = trip_polish(list(start), round_trips=False)
    assert without.run() == start and without.events == 2


def test_round_trips_wait_for_the_local_optimum_of_the_other_moves() -> None:
    dag = TaskDag.build(NAMES, EDGES, ["g"] * len(NAMES))
    length = partial(schedule_length, dag, DURATIONS)
    optimum = Polish(dag, length, 11, lambda streams, moved: True, 100, list(range(5)),
                     round_trips=False).run()
    seen: list[list[int]] = []

    class Recorded(Polish):
        def _round_trips(self, u: int, v: int) -> list[tuple[list[int], int]]:
            seen.append(list(self.streams))
            return super()._round_trips(u, v)

    ended = Recorded(dag, length, 11, lambda streams, moved: True, 100, list(range(5))).run()
    # the first pass that changes nothing is the one that also tries them
    assert ended == optimum == [0, 0, 2, 0, 4]
    assert len(seen) == 3 and all(streams == optimum for streams in seen)
