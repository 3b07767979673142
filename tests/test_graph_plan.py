"""GraphPlan's ways of setting node streams give what setting them node by node gives:
`set_groups` (one stream and note per group of nodes, as node-stream-update sets them) and
`set_nodes` (a change per node) against a node-by-node reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.allocation import Note
from streamalloc.heuristic.plan import INVALID, GraphPlan, initial_graph_plan

NAMES = [f"n{i}" for i in range(12)]


def _plan_with_history(history: list[list[int]]):
    """A plan whose nodes carry notes from earlier passes: pass k notes the nodes it lists."""
    plan = initial_graph_plan("g", {n: i for i, n in enumerate(NAMES)}, [0] * len(NAMES),
                              subgraphs=0, default_stream=INVALID, next_stream=1)
    for k, nodes in enumerate(history):
        note = Note(f"earlier{k}", k, f"pass {k}")
        plan = plan.set_nodes({NAMES[i]: (k, note) for i in nodes})
    return plan


class _NodeByNode:
    """Streams and notes after changes made one node at a time."""

    def __init__(self, plan: GraphPlan, changes: dict[str, tuple[int, Note]]) -> None:
        self.streams, self.notes = dict(plan.streams), dict(plan.notes)
        for name, (stream, note) in changes.items():
            self.streams[name] = stream
            self.notes[name] = (*self.notes.get(name, ()), note)


@settings(max_examples=200, deadline=None)
@given(history=st.lists(st.lists(st.integers(0, 11), max_size=6), max_size=3),
       owners=st.lists(st.integers(-1, 3), min_size=12, max_size=12))
def test_set_groups_equals_set_nodes(history: list[list[int]], owners: list[int]) -> None:
    plan = _plan_with_history(history)
    groups = []
    changes = {}
    for g in range(4):
        members = [n for n, o in zip(NAMES, owners, strict=True) if o == g]
        note = Note("copy", g, f"group {g}")
        groups.append((members, g, note))
        changes.update((n, (g, note)) for n in members)
    by_groups, by_nodes = plan.set_groups(groups), _NodeByNode(plan, changes)
    for made in (by_groups, plan.set_nodes(changes)):
        assert dict(made.streams) == dict(by_nodes.streams)
        assert dict(made.notes) == dict(by_nodes.notes)
    assert (by_groups is plan) == (not changes)  # nothing to set: the same plan back


def test_shared_history_gets_one_tuple() -> None:
    """Nodes noted alike so far share the extended notes tuple (the allocation record keys
    nodes by it)."""
    plan = _plan_with_history([[0, 1, 2], [3]])
    note = Note("copy", 5, "group")
    after = plan.set_groups([(NAMES[:3], 5, note), (NAMES[3:5], 6, note)])
    assert after.notes["n0"] is after.notes["n1"] is after.notes["n2"]
    assert after.notes["n3"] == (Note("earlier1", 1, "pass 1"), note)
    assert after.notes["n4"] == (note,)
    assert after.streams["n3"] == after.streams["n4"] == 6


@settings(max_examples=200, deadline=None)
@given(history=st.lists(st.lists(st.integers(0, 11), max_size=6), max_size=3),
       owners=st.lists(st.integers(-1, 3), min_size=12, max_size=12),
       keep=st.sets(st.integers(0, 11), max_size=3))
def test_set_by_owner_equals_a_group_per_owner(history: list[list[int]], owners: list[int],
                                               keep: set[int]) -> None:
    """Every node takes its owner's stream and note (-1: the last entry), the kept ones
    excepted, as `set_groups` with one group per owner gives them; nodes noted alike share
    one notes tuple either way (a column at a time when every node is noted alike)."""
    plan = _plan_with_history(history)
    streams, notes = [10, 11, 12, 13, -1], [Note("copy", s, f"owner {s}") for s in range(5)]
    kept = [NAMES[i] for i in sorted(keep)]
    groups = [([n for n, o in zip(NAMES, owners, strict=True) if o == k and n not in kept],
               streams[k], notes[k]) for k in range(-1, 4)]
    made, expected = plan.set_by_owner(owners, streams, notes, kept), plan.set_groups(groups)
    assert dict(made.streams) == dict(expected.streams)
    assert dict(made.notes) == dict(expected.notes)
    sharing = [[made.notes[a] is made.notes[b] for b in NAMES] for a in NAMES]
    assert sharing == [[expected.notes[a] is expected.notes[b] for b in NAMES] for a in NAMES]
