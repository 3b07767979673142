"""Runtime stream creation: the V2 pool (grow-only, 2024 slots) and the V1 registry."""

from __future__ import annotations

import pytest
from emu.conftest import chain_graph, plan_dict

from streamalloc.errors import LimitExceeded
from streamalloc.runtime_emu import DeviceStreams, StreamPool, StreamRegistry, emulate
from streamalloc.runtime_emu.streams import (
    FLAG_FORCE_COPY,
    FLAG_HUGE,
    FLAG_PERSISTENT,
    acquire_for_model,
    load_model_v1,
)


def test_v2_pool_grows_only_and_hands_the_same_streams_out_again() -> None:
    device = DeviceStreams()
    pool = StreamPool(device)
    first = pool.acquire(5)
    assert first is not None and first[0] is None and len(first) == 5 and pool.created == 4
    again = pool.acquire(3)
    assert again == first and pool.created == 4  # nothing new: reused
    more = pool.acquire(8)
    assert more is not None and more[:5] == first and pool.created == 7 and pool.size == 8
    pool.teardown()
    assert device.live == set() and pool.size == 1


def test_v2_pool_has_2024_slots_and_slot_0_is_reserved() -> None:
    pool = StreamPool(DeviceStreams())
    assert pool.acquire(2024) is None and pool.created == 0
    slots = pool.acquire(2023)
    assert slots is not None and len(slots) == 2023 and pool.created == 2022


def test_v2_pool_keeps_what_it_created_when_the_device_runs_out() -> None:
    pool = StreamPool(DeviceStreams(available=3))
    assert pool.acquire(6) is None and pool.created == 3 and pool.size == 4
    with pytest.raises(LimitExceeded, match="needs 6 streams, but the device had only 3"):
        acquire_for_model(pool, 6)


def test_models_sharing_a_pool_reuse_its_streams() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1, "c": 1}, [])
    pool = StreamPool(DeviceStreams())
    plan3 = plan_dict("g", {0: ["a"], 1: ["b"], 2: ["c"]})
    plan2 = plan_dict("g", {0: ["a"], 1: ["b", "c"]})
    assert emulate(graph, plan3, pool=pool).stream_pool == {
        "runtime": "v2", "capacity": 2024, "requested": 3, "created": 2, "reused": 0,
        "pool_size": 3}
    second = emulate(graph, plan2, pool=pool).stream_pool
    assert (second["created"], second["reused"], second["pool_size"]) == (0, 1, 3)


def test_v1_registry_never_reuses() -> None:
    device = DeviceStreams()
    registry = StreamRegistry(device)
    h1 = registry.get_or_create(model=1, priority=0, flags=FLAG_PERSISTENT, task_num=10)
    registry.destroy(h1)
    h2 = registry.get_or_create(model=2, priority=0, flags=FLAG_PERSISTENT, task_num=10)
    h3 = registry.get_or_create(model=2, priority=0, flags=FLAG_PERSISTENT, task_num=10)
    assert len({h1, h2, h3}) == 3 and device.created == 3  # a destroyed stream is not reused
    assert [r.handle for r in registry.sorted_pool(0, FLAG_PERSISTENT)] == [h1, h2, h3]
    assert registry.registry[h2].models == {2} and not registry.registry[h1].valid


def test_v1_destroy_follows_ge_state_table() -> None:
    registry = StreamRegistry(DeviceStreams())
    handle = registry.get_or_create(0, 0, 0, 1)
    registry.destroy(handle, force=True)
    registry.destroy(handle)  # destroyed already: success, nothing happens
    with pytest.raises(ValueError, match="not created by this registry"):
        registry.destroy(99)
    with pytest.raises(ValueError, match="None"):
        registry.destroy(None)


def test_v1_recycled_handle_replaces_the_registry_entry_but_not_the_pool_entry() -> None:
    registry = StreamRegistry(DeviceStreams(recycle=True))
    old = registry.get_or_create(1, 0, 0, 5)
    registry.destroy(old)
    new = registry.get_or_create(2, 0, 0, 5)
    assert new == old  # the driver handed out the same handle value
    assert registry.registry[new].valid and registry.registry[new].models == {2}
    (kept,) = registry.sorted_pool(0, 0)
    assert kept.models == {1} and not kept.valid  # the pool keeps the older record


def test_v1_model_load_creates_one_persistent_stream_per_model_stream() -> None:
    device = DeviceStreams()
    registry = StreamRegistry(device)
    report = load_model_v1(registry, 7, 3, task_num=4, huge=frozenset({0}),
                           hccl=frozenset({2}))
    assert report == {"runtime": "v1", "requested": 3, "created": 3, "reused": 0}
    assert sorted(registry.pool) == [(0, FLAG_PERSISTENT), (0, FLAG_PERSISTENT | FLAG_HUGE),
                                     (0, FLAG_PERSISTENT | FLAG_FORCE_COPY)]
    with pytest.raises(LimitExceeded, match="no stream left"):
        StreamRegistry(DeviceStreams(available=0)).get_or_create(1, 0, 0, 1)


def test_emulate_with_the_v1_runtime() -> None:
    graph = chain_graph("g", {"a": 1, "b": 1}, [])
    result = emulate(graph, plan_dict("g", {0: ["a"], 1: ["b"]}), runtime="v1")
    assert result.stream_pool == {"runtime": "v1", "requested": 2, "created": 2, "reused": 0}
