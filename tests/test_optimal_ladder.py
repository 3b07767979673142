"""The merge ladder down to an event budget (`optimal/ladder.py`), with a probe that counts
events exactly and times plans by the schedule estimate (no emulator: the ladder's own logic).

* Streams are merged into the busiest one, the one that costs least per event saved first: of
  two side branches, the short one joins first.
* The last merge takes only as much of its stream as the budget needs (a prefix or a suffix in
  T-order), where that runs faster than merging it whole: a stream that holds two branches.
* A budget no merge reaches, a rule that forbids the merges, or no probes left: None.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamalloc.optimal.ladder import merge_ladder
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length

# a source s, then a long chain m0..m5 (the busiest stream) beside two side chains: a short one
# (a0, a1) and a long one (b0..b3); all join at j, which runs on the main chain's stream
NAMES = ["s", "m0", "m1", "m2", "m3", "m4", "m5", "a0", "a1", "b0", "b1", "b2", "b3", "j"]
EDGES = [("s", "m0"), ("m0", "m1"), ("m1", "m2"), ("m2", "m3"), ("m3", "m4"), ("m4", "m5"),
         ("s", "a0"), ("a0", "a1"), ("s", "b0"), ("b0", "b1"), ("b1", "b2"), ("b2", "b3"),
         ("m5", "j"), ("a1", "j"), ("b3", "j")]
DAG = TaskDag.build(NAMES, EDGES, ["g"] * len(NAMES))
DURATIONS = [10] * len(NAMES)
INDEX = {name: k for k, name in enumerate(NAMES)}
MAIN, SHORT, LONG = 0, 1, 2
START = [MAIN] * len(NAMES)  # the main chain, then each side chain on its own stream
for name in ("a0", "a1"):
    START[INDEX[name]] = SHORT
for name in ("b0", "b1", "b2", "b3"):
    START[INDEX[name]] = LONG


def probe(streams: Sequence[int]) -> tuple[int, float]:
    return event_count(DAG, streams), float(schedule_length(DAG, DURATIONS, streams))


def ladder(budget: int, *, allowed: bool = True, evaluations: int = 50) -> list[int] | None:
    return merge_ladder(DAG, START, budget=budget, probe=probe, allowed=lambda *_: allowed,
                        durations=DURATIONS, evaluations=evaluations)


def test_the_start_pays_an_event_into_and_out_of_each_side_chain() -> None:
    assert probe(START) == (4, 80.0)  # s, m0..m5, j on the main stream: 8 tasks


def test_the_cheapest_stream_joins_the_busiest_first() -> None:
    streams = ladder(2)
    assert streams is not None and probe(streams) == (2, 100.0)
    assert [streams[INDEX[n]] for n in ("a0", "a1")] == [MAIN, MAIN]  # +20 us, not +40
    assert all(streams[INDEX[n]] == LONG for n in ("b0", "b1", "b2", "b3"))


# a main chain m0..m5 and one side stream that holds two branches: b0, b1 (from m0 to m3) and
# c0, c1 (from m3 to m5), each with an event in and one out; T-order as listed
SPLIT_NAMES = ["m0", "b0", "b1", "m1", "m2", "m3", "c0", "c1", "m4", "m5"]
SPLIT = TaskDag.build(SPLIT_NAMES, [
    ("m0", "m1"), ("m1", "m2"), ("m2", "m3"), ("m3", "m4"), ("m4", "m5"),
    ("m0", "b0"), ("b0", "b1"), ("b1", "m3"), ("m3", "c0"), ("c0", "c1"), ("c1", "m5")],
    ["g"] * len(SPLIT_NAMES))


def test_the_last_merge_takes_only_what_the_budget_needs() -> None:
    """Budget 2 from 4: the side stream merged whole runs 100 us with no event; its prefix
    b0, b1 leaves c's two events at 90 us, its suffix c0, c1 leaves b's at 80 us (b runs beside
    m1, m2 and c then runs after m3 on the main stream): the suffix. Budget 1: no part of the
    stream reaches it, so the whole of it."""
    durations = [10] * SPLIT.size
    start = [1 if name[0] in "bc" else 0 for name in SPLIT_NAMES]

    def split_probe(streams: Sequence[int]) -> tuple[int, float]:
        return event_count(SPLIT, streams), float(schedule_length(SPLIT, durations, streams))

    def split_ladder(budget: int) -> list[int] | None:
        return merge_ladder(SPLIT, start, budget=budget, probe=split_probe,
                            allowed=lambda *_: True, durations=durations, evaluations=50)

    assert split_probe(start) == (4, 70.0)
    streams = split_ladder(2)
    assert streams is not None and split_probe(streams) == (2, 80.0)
    assert [SPLIT_NAMES[v] for v in range(SPLIT.size) if streams[v] == 1] == ["b0", "b1"]
    streams = split_ladder(1)
    assert streams is not None and split_probe(streams) == (0, 100.0)


def test_no_plan_when_no_merge_reaches_the_budget_or_a_rule_forbids_it() -> None:
    assert ladder(4) == START  # already within
    assert ladder(0, allowed=False) is None
    assert ladder(0, evaluations=2) is None  # the start and one merge
    streams = ladder(0)
    assert streams is not None and probe(streams) == (0, 140.0)
