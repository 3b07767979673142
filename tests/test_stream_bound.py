"""The fewest main streams the rules need (`optimal/stream_bound.py`).

* Each dedicated-stream group that holds a streamed node needs a stream of its own, and the
  other streamed nodes at least one more; groups that share a node count once.
* Among the other nodes, the sides of a separate-streams rule and the groups of a
  disjoint-groups rule that hold one each need their own stream.
* A pin to stream k needs streams 0..k.
* Rules that force nothing apart (same stream, caps) need one stream; nodes the allocation
  leaves without a stream do not count.
"""

from __future__ import annotations

from streamalloc.optimal.stream_bound import streams_needed
from streamalloc.rules import constraints as c
from streamalloc.solver.dag import TaskDag

NAMES = ["a", "b", "r1", "r2", "r3"]


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
