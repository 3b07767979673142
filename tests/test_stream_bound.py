"""The fewest main streams the rules need (`optimal/stream_bound.py`).

* Each dedicated-stream group that holds a streamed node needs a stream of its own, and the
  other streamed nodes at least one more; groups that share a node count once.
* Among the other nodes, the sides of a separate-streams rule and the groups of a
  disjoint-groups rule that hold one each need their own stream.
* A pin to stream k needs streams 0..k.
* The nodes' task units need streams of the stream depth (less the reserved units), and a
  stream limit below that fails before the search.
* Each dedicated-stream group that waits for a node outside it, or that one waits for, needs
  an event of its own each way (both counts where no path joins two groups), and an event
  limit below that fails before the search.
* Rules that force nothing apart (same stream, caps) need one stream; nodes the allocation
  leaves without a stream do not count.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streamalloc import api
from streamalloc.errors import LimitExceeded
from streamalloc.facts import UNLIMITED_DEPTH
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir import DataInput, GraphBuilder
from streamalloc.ir.graph import AttrValue, Graph
from streamalloc.optimal import OptimalOptions, allocate_optimal, driver
from streamalloc.optimal.evaluate import task_dag
from streamalloc.optimal.stream_bound import (
    events_needed,
    split_streams_needed,
    streams_needed,
)
from streamalloc.rules import constraints as c
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.split import CONTINUOUS_LABEL

NAMES = ["a", "b", "r1", "r2", "r3"]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _dag() -> TaskDag:
    return TaskDag.build(NAMES, [("a", "b"), ("b", "r1"), ("b", "r2"), ("b", "r3")],
                         ["g"] * len(NAMES))


def test_each_dedicated_group_and_the_other_nodes_need_a_stream() -> None:
    needed = streams_needed(_dag(), [c.DedicatedStream("own", ("r1",)),
                                     c.DedicatedStream("own", ("r2", "r3"))])
    assert needed.streams == 3
    assert needed.why == ("2 that rule 'own' keeps each for a group of nodes alone, 1 for the "
                          "other nodes")


def test_dedicated_groups_that_share_a_node_count_once() -> None:
    needed = streams_needed(_dag(), [c.DedicatedStream("own", ("r1", "r2")),
                                     c.DedicatedStream("own", ("r2", "r3"))])
    assert needed.streams == 2


def test_groups_kept_apart_among_the_other_nodes_need_a_stream_each() -> None:
    apart = c.DisjointGroups("apart", (("a",), ("b",), ("r1", "r2")))
    assert streams_needed(_dag(), [apart]).streams == 3
    assert streams_needed(_dag(), [c.DedicatedStream("own", ("r1", "r2")), apart]).streams \
        == 1 + 2
    separate = streams_needed(_dag(), [c.DifferentStreams("sep", ("a",), ("r3",))])
    assert separate.streams == 2 and "rule 'sep' keeps apart" in separate.why


def test_rules_that_force_nothing_apart_need_one_stream() -> None:
    assert streams_needed(_dag(), []).streams == 1
    assert streams_needed(_dag(), [c.SameStream("same", ("a", "b"))]).streams == 1
    # a group of nodes without a stream (none of the DAG's) needs none
    assert streams_needed(_dag(), [c.DedicatedStream("own", ("x",))]).streams == 1
    assert streams_needed(_dag(), [c.DedicatedStream("own", tuple(NAMES))]).streams == 1


def test_a_pin_to_stream_k_needs_k_plus_one_streams() -> None:
    needed = streams_needed(_dag(), [c.PinnedStream("pin", ("r1",), 3)])
    assert (needed.streams, needed.why) == (4, "rule 'pin' pins nodes to stream 3")
    # fewer than the dedicated groups need: those count
    assert streams_needed(_dag(), [c.PinnedStream("pin", ("a",), 1),
                                   c.DedicatedStream("own", ("r1",)),
                                   c.DedicatedStream("own", ("r2",))]).streams == 3


def _heavy(count: int, units: int, **options: str) -> Graph:
    """A chain of `count` Relus of `units` task units each."""
    return _chain([units] * count, **options)


def _chain(units: list[int], labels: dict[int, str] | None = None, **options: str) -> Graph:
    """A chain of Relus of these task units; `labels`: continuous stream labels by index."""
    builder = GraphBuilder("heavy")
    builder.add_node("x", "Data")
    for i, count in enumerate(units):
        label = (labels or {}).get(i)
        builder.add_node(f"r{i}", "Relu", inputs=[DataInput(f"r{i - 1}" if i else "x")],
                         task_count=count,
                         attrs={} if label is None else {CONTINUOUS_LABEL: AttrValue("str", label)})
    builder.add_node("out", "NetOutput", inputs=[DataInput(f"r{len(units) - 1}")])
    return api.with_options(builder.build(), options)


def test_the_nodes_task_units_need_streams_of_the_stream_depth() -> None:
    """Five nodes of 400 units: a stream holds 1024 less the 27 reserved, two of them, so
    three streams (the split makes them of one stream: ge mode's plan has three)."""
    graph = _heavy(5, 400)
    dag = task_dag(graph, allocate_ge(graph))
    needed = split_streams_needed(graph, dag)
    assert needed is not None and needed.streams == 3
    assert api.plan(graph).to_json()["physical_stream_count"] == 3
    assert split_streams_needed(_heavy(5, 400, **{UNLIMITED_DEPTH: "true"}), dag) is None


def test_a_task_larger_than_the_stream_depth_has_a_stream_alone() -> None:
    """Four nodes of 15 units at a depth of 37 (10 beyond the reserved units): the split
    puts each on a stream of its own, four, not the 6 of their 60 units over 10."""
    graph = _heavy(4, 15, **{"streamalloc.max_task_per_stream": "37"})
    needed = split_streams_needed(graph, task_dag(graph, allocate_ge(graph)))
    assert needed is not None and needed.streams == 4
    assert needed.why == ("the nodes' 60 task units, option streamalloc.max_task_per_stream 37 "
                          "less 27 reserved: at most 10 on a stream, or one larger task alone")
    assert api.plan(graph).to_json()["physical_stream_count"] >= 4


@pytest.mark.parametrize("depth", ["20", "27"])
def test_a_depth_within_the_reserved_units_gives_each_task_a_stream(depth: str) -> None:
    """At or below the 27 reserved units GE splits before every task after a stream's first:
    each of three nodes needs a stream (at 27 the bound divided by zero)."""
    graph = _heavy(3, 2, **{"streamalloc.max_task_per_stream": depth,
                            "streamalloc.max_streams": "3"})
    needed = split_streams_needed(graph, task_dag(graph, allocate_ge(graph)))
    assert needed is not None and needed.streams == 3
    assert needed.why.endswith(f"option streamalloc.max_task_per_stream {depth} leaves no units "
                               "beyond the 27 reserved: each task with units on a stream of its "
                               "own")
    with pytest.raises(LimitExceeded, match="it needs at least 3 streams"):
        allocate_optimal(graph, None, OptimalOptions(time_limit=1.0))


@pytest.mark.parametrize("seed", range(30))
def test_the_split_never_makes_fewer_streams_than_the_bound(seed: int) -> None:
    """Random task units and depths, some nodes of one continuous label (its group moves as
    one, counted by GE's approximation): ge mode's one stream, split, has at least as many
    physical streams as the bound says every plan needs. Draws where ge mode fails (a stream
    over its depth with its profiling units) are drawn again."""
    rng = random.Random(seed)
    while True:
        depth = rng.choice([20, 27, 28, 30, 35, 40, 60])
        units = [rng.choice([0, 1, 2, 3, 5, 8, 13]) for _ in range(rng.randint(1, 12))]
        labels = {i: "L" for i in range(1, len(units)) if rng.random() < 0.2}
        graph = _chain(units, labels, **{"streamalloc.max_task_per_stream": str(depth)})
        try:
            physical = api.plan(graph).to_json()["physical_stream_count"]
        except LimitExceeded:
            continue
        needed = split_streams_needed(graph, task_dag(graph, allocate_ge(graph)))
        assert needed is not None and physical >= needed.streams
        return


def test_a_stream_limit_the_task_units_cannot_fit_fails_before_the_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _heavy(5, 400, **{"streamalloc.max_streams": "3"})
    monkeypatch.setattr(driver, "search", pytest.fail)
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, None, OptimalOptions(time_limit=1.0, objective="makespan"))
    assert ("it needs at least 3 streams (the nodes' 2000 task units, option "
            "streamalloc.max_task_per_stream 1024 less 27 reserved: at most 997 on a stream, or "
            "one larger task alone), over the limit of 2") in str(caught.value)


def test_each_dedicated_group_that_waits_or_is_waited_for_needs_an_event() -> None:
    """r1 and r2 depend on b, outside their groups; b depends on a's group. A path joins a's
    group to r1's, so an event may count both ways: the larger count; without one, both."""
    groups = [c.DedicatedStream("own", ("r1",)), c.DedicatedStream("own", ("r2",)),
              c.DedicatedStream("first", ("a",))]
    assert events_needed(_dag(), groups) == (
        2, "rule 'own' keeps 2 group(s) on a stream alone: 2 wait for another stream, 0 are "
           "waited for; rule 'first' keeps 1 group(s) on a stream alone: 0 wait for another "
           "stream, 1 are waited for; paths join groups, so not both counts")
    # with b a group too: three receive (r1, r2, b), b sends: a path joins them, so 3
    assert events_needed(_dag(), [*groups[:2], c.DedicatedStream("mid", ("b",))])[0] == 3
    apart = [c.DedicatedStream("own", ("r1",)), c.DedicatedStream("own", ("b",))]
    assert events_needed(_dag(), apart)[0] == 2  # b's path to r1 joins them
    assert events_needed(_dag(), [c.DedicatedStream("own", ("b",))])[0] == 2  # in and out
    # a group holding its own predecessors waits for none, and is waited for by r2 and r3
    assert events_needed(_dag(), [c.DedicatedStream("own", ("a", "b", "r1"))])[0] == 1


def test_rules_that_need_more_events_than_the_device_allows_fail_before_the_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three gradients, each all-reduced on a stream of its own: each AllReduce waits for the
    compute stream and the output waits for each, so every plan needs 6 events (ge mode's
    too), and `max_events` 2 fails at once."""
    builder = GraphBuilder("grads")
    builder.add_node("x", "Data")
    for i in range(3):
        builder.add_node(f"g{i}", "MatMul", inputs=[DataInput(f"g{i - 1}" if i else "x")])
        builder.add_node(f"ar{i}", "HcomAllReduce", inputs=[DataInput(f"g{i}")])
    builder.add_node("out", "NetOutput", inputs=[DataInput(f"ar{i}") for i in range(3)])
    graph = api.with_options(builder.build(), {"streamalloc.max_events": "2"})
    rules = api.load_rule_set(EXAMPLES / "rules" / "allreduce_own_stream.yaml")
    monkeypatch.setattr(driver, "search", pytest.fail)
    with pytest.raises(LimitExceeded) as caught:
        allocate_optimal(graph, rules, OptimalOptions(time_limit=1.0))
    assert "the plan needs 6 events, over the limit of 2" in str(caught.value)
    assert ("it needs at least 6 events (rule 'allreduce-dedicated' keeps 3 group(s) on a "
            "stream alone: 3 wait for another stream, 3 are waited for), over the device's 2"
            ) in str(caught.value)
