"""Physical streams filled (`optimal/filled.py`): the order stays topological, only small tasks
move (earlier, with the sources they need), each stream's large tasks keep their order; the
split's walk; the last large tasks of a stream moved where the walk then counts fewer physical
streams (a training step's events: `test_grouped.py`)."""

from __future__ import annotations

import random
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc.optimal.filled import filled, rebalanced, split_walk
from streamalloc.optimal.order import Orders
from streamalloc.solver.dag import TaskDag

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(0, 10**6), size=st.integers(1, 40))
def test_only_small_tasks_move_and_the_order_stays_topological(seed: int, size: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(size)]
    preds = {n: tuple(sorted({names[j] for j in range(i) if rng.random() < 0.15}))
             for i, n in enumerate(names)}
    orders = Orders(None, MappingProxyType(preds), tuple(names))  # type: ignore[arg-type]
    # some nodes have no stream (sources among them come along with the tasks they feed)
    stream_of = {n: rng.randrange(2) for n in names if rng.random() < 0.8}
    units = {n: rng.choice([3, 3, 3, 245]) for n in names}
    moved = filled(orders, orders.start, stream_of, units, capacity=997 // 4, large=100)
    assert sorted(moved) == sorted(names)
    position = {n: i for i, n in enumerate(moved)}
    assert all(position[p] < position[n] for n in names for p in preds[n])
    start = {n: i for i, n in enumerate(names)}
    for n in names:  # what runs earlier is a small task of a stream or a source without one
        if position[n] < start[n]:
            assert (n in stream_of and units[n] < 100) or (n not in stream_of and not preds[n])
    for stream in (0, 1):
        large = [n for n in moved if stream_of.get(n) == stream and units[n] >= 100]
        assert large == sorted(large, key=start.__getitem__)


def test_the_split_walk_opens_a_stream_where_a_task_does_not_fit() -> None:
    units = {"a": 4, "b": 4, "c": 4, "d": 4, "e": 1}
    stream_of = {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}
    assert split_walk("abcde", stream_of, units, 10) == {0: (2, 4), 1: (1, 5)}


def test_the_last_large_task_goes_where_the_walk_counts_one_stream_fewer() -> None:
    dag = TaskDag.build(["a", "b", "c", "d"], [], ["g"] * 4)
    units = dict.fromkeys("abcd", 4)
    # stream 0: a b | c (two physical streams of 10 units), stream 1: d; c joins d (or all
    # three do: 4 tasks in 2 physical streams; b and c alone would make d's stream spill)
    assert rebalanced(dag, [0, 0, 0, 1], ("a", "b", "c", "d"), units, capacity=10,
                      large=3) == [[0, 0, 1, 1], [1, 1, 1, 1]]
    assert rebalanced(dag, [0, 0, 1, 1], ("a", "b", "c", "d"), units, capacity=10,
                      large=3) == []  # two physical streams already
