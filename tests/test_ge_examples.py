"""The worked examples of ge-logical-streams.md section 7, asserted value by value.

The expected streams are typed in from the spec (not generated), so this file checks the
golden files of test_ge_goldens.py independently. Example 7.14 (DAG allocator) lives in
test_mini_dag.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.loaders import load_graph

CASES = Path(__file__).parent / "goldens" / "cases"
N = -1  # GE's INVALID: no stream

# case -> (expected stream per node, main_stream_num, total_stream_num, attached per node)
EXAMPLES: dict[str, tuple[dict[str, int], int, int, dict[str, tuple[int, ...]]]] = {
    "ex7_1_attach_no_pred": ({"d": N, "a1": 0, "a2": 0, "c1": 1, "a3": 0, "out": 0}, 2, 2, {}),
    "ex7_2_label_independent": ({"d": N, "a1": 0, "h": 1, "a2": 2, "out": 2}, 3, 3, {}),
    "ex7_2_user_label": ({"d": N, "a1": 0, "h": 0, "a2": 1, "out": 1}, 2, 2, {}),
    "ex7_3a_max_parallel": ({"d": N, "a0": 1, "h": 0, "a1": 2, "a2": 3, "out": 2}, 4, 4, {}),
    "ex7_3_fanout": ({"d": N, "a0": 0, "h": 0, "a1": 0, "a2": 0, "out": 0}, 1, 1, {}),
    "subgraph_known_shape": ({"d": N, "pc": 0, "out": 0, "bd": N, "b1": 0, "h": 1, "bout": 2},
                             3, 3, {}),
    "ex7_4b_quirk_q1": ({"d": N, "pc": 0, "out": 0, "bd": N, "u": 1, "bout": 1}, 1, 1, {}),
    "ex7_5_single_stream": ({"d": N, "a": 0, "c": 0, "out": 0}, 1, 1, {}),
    "ex7_6_parallel_group": ({"d": N, "a1": 0, "h1": 1, "h2": 1, "a2": 0, "out": 0}, 2, 2, {}),
    "ex7_6b_two_groups": ({"d": N, "a1": 0, "h1": 1, "h2": 2, "a2": 0, "out": 0}, 3, 3, {}),
    "ex7_6c_group_follows_producer": ({"d": N, "a1": 0, "h1": 0, "h2": 0, "a2": 0, "out": 0},
                                      1, 1, {}),
    "ex7_7_allreduce_parallel": ({"d": N, "g": 1, "ar": 0, "u": 2, "out": 2}, 3, 3, {}),
    "ex7_7_without_hcom_parallel": ({"d": N, "g": 0, "ar": 0, "u": 0, "out": 0}, 1, 1, {}),
    "ex7_8a_reshape_loses_stream": ({"d": N, "r": N, "a": 0, "out": 0}, 1, 1, {}),
    "ex7_8b_identity_between_labels": ({"d": N, "a1": 0, "k": 0, "a2": 0, "out": 1}, 2, 2, {}),
    "ex7_9_mde": ({"d": N, "a": 0, "out": 0}, 1, 1, {}),
    "ex7_10_progressive_optimize": ({"d": N, "a1": 1, "h1": 1, "h2": 0, "a2": 1, "out": 1},
                                    2, 2, {}),
    "ex7_12_dynamic": ({"d": 0, "relu": 0, "ar": 1, "dsa": 2, "out": 0}, 3, 3, {}),
    "ex7_12_dynamic_label": ({"d": 0, "relu": 1, "ar": 1, "dsa": 0, "out": 0}, 2, 2, {}),
    "ex7_13_attached": ({"d": N, "m1": 0, "m2": 1}, 2, 4, {"m1": (2,), "m2": (3,)}),
    "ex7_13_attached_force_reuse": ({"d": N, "m1": 0, "m2": 1}, 2, 3, {"m1": (2,), "m2": (2,)}),
    "ex7_13_attached_not_required": ({"d": N, "m1": 0, "m2": 1}, 2, 2, {}),
}


@pytest.mark.parametrize("case", sorted(EXAMPLES))
def test_worked_example(case: str) -> None:
    streams, main, total, attached = EXAMPLES[case]
    allocation = allocate_ge(load_graph(CASES / f"{case}.yaml"))
    assert {n: s.stream for n, s in allocation.nodes.items()} == streams
    assert (allocation.main_stream_num, allocation.total_stream_num) == (main, total)
    assert {n: s.attached for n, s in allocation.nodes.items() if s.attached} == attached


def test_quirk_q1_collides_with_the_next_allocation() -> None:
    """7.4b: main_stream_num is 1 although stream 1 is in use (a port that fixes Q1 says 2)."""
    allocation = allocate_ge(load_graph(CASES / "ex7_4b_quirk_q1.yaml"))
    used = {s.stream for s in allocation.nodes.values() if s.stream >= 0}
    assert used == {0, 1} and allocation.main_stream_num == 1


def test_mde_ids_only_advance_the_counter() -> None:
    """7.9: the NewStreamId stream is overwritten; the provenance shows it was reserved."""
    allocation = allocate_ge(load_graph(CASES / "ex7_9_mde.yaml"))
    rules = [t.note.rule for t in allocation.provenance["a"]]
    assert rules[0] == "mde-group" and allocation.nodes["a"].rule == "assign-by-dependency"
