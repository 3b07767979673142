"""Runtime stream creation as GE's runtime does it (ge-sync-and-split.md section 9).

* `StreamPool` is V2's `gert::StreamAllocator`: 2024 slots, slot 0 reserved for the caller's
  stream, grow-only, the same streams handed out again to every later acquisition.
* `StreamRegistry` is V1's `ge::ReusableStreamAllocator` as the code behaves: despite its name
  and its design document it never reuses; every request creates a stream, and the pool keyed
  by (priority, flags) is bookkeeping only.
* `DeviceStreams` stands in for the driver: it hands out handles and can run out.

>>> pool = StreamPool(DeviceStreams())
>>> len(pool.acquire(3)), pool.created, len(pool.acquire(2)), pool.created
(3, 2, 3, 2)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from streamalloc.errors import LimitExceeded
from streamalloc.facts import LIMIT_DEFAULTS

V2_MAX_STREAMS = LIMIT_DEFAULTS["streamalloc.max_streams"]  # kMaxStreamNum: V2 pool slots
FLAG_PERSISTENT = 1 << 0
FLAG_HUGE = 1 << 1
FLAG_FORCE_COPY = 1 << 2  # HCCL (and HCCL attached) streams
FLAG_OVERFLOW = 1 << 3


class DeviceStreams:
    """The driver's streams: handles from 1 up; `available` bounds the live ones (None: no bound).

    With `recycle=True` a destroyed handle value is handed out again (last freed first), as a
    driver may do; the V1 registry has a documented quirk for that case.
    """

    def __init__(self, available: int | None = None, *, recycle: bool = False) -> None:
        self.available = available
        self.recycle = recycle
        self.live: set[int] = set()
        self._freed: list[int] = []
        self._next = 1
        self.created = 0

    def create(self, priority: int = 0, flags: int = 0) -> int | None:
        """A new stream handle, or None when the device has no stream left."""
        if self.available is not None and len(self.live) >= self.available:
            return None
        if self.recycle and self._freed:
            handle = self._freed.pop()
        else:
            handle, self._next = self._next, self._next + 1
        self.live.add(handle)
        self.created += 1
        return handle

    def destroy(self, handle: int) -> None:
        """Destroy a live stream."""
        self.live.discard(handle)
        self._freed.append(handle)


class StreamPool:
    """V2 stream pool: `acquire(n)` returns n slots (slot 0 = the caller's stream, None here).

    Slots never shrink; a pool shared by several models grows to the largest request, so a
    later model reuses the streams an earlier one created.
    """

    def __init__(self, device: DeviceStreams, capacity: int = V2_MAX_STREAMS, *,
                 priority: int = 0, flags: int = 0) -> None:
        self.device = device
        self.capacity = capacity
        self.priority, self.flags = priority, flags
        self.slots: list[int | None] = [None]  # slot 0 is reserved for the caller's stream
        self.created = 0

    @property
    def size(self) -> int:
        """Slots in use (the largest request so far, at least 1)."""
        return len(self.slots)

    def acquire(self, n: int) -> list[int | None] | None:
        """The first max(size, n) slots, creating streams as needed; None on failure."""
        if n >= self.capacity:
            return None
        for _ in range(self.size, n):
            handle = self.device.create(self.priority, self.flags)
            if handle is None:  # the streams created so far stay in the pool
                return None
            self.slots.append(handle)
            self.created += 1
        return list(self.slots)

    def teardown(self) -> None:
        """Destroy every created stream; slot 0 is the caller's and is never destroyed."""
        for handle in self.slots[1:]:
            if handle is not None:
                self.device.destroy(handle)
        self.slots = [None]


def acquire_for_model(pool: StreamPool, streams: int) -> dict[str, int | str]:
    """Acquire the streams a model needs at load; LimitExceeded with the numbers on failure."""
    before = pool.created
    if pool.acquire(streams) is None:
        if streams >= pool.capacity:
            raise LimitExceeded(
                f"the plan needs {streams} streams, but the runtime's stream pool has "
                f"{pool.capacity} slots with slot 0 reserved for the caller's stream: at most "
                f"{pool.capacity - 1} per model; allocate with fewer streams")
        raise LimitExceeded(
            f"the plan needs {streams} streams, but the device had only "
            f"{pool.device.available} streams (created {pool.created - before} of "
            f"{streams - 1} new ones)")
    created = pool.created - before
    return {"runtime": "v2", "capacity": pool.capacity, "requested": streams,
            "created": created, "reused": max(0, streams - 1 - created), "pool_size": pool.size}


@dataclass
class StreamRecord:
    """V1 registry record of one stream: creator model, task count, still valid or destroyed."""

    handle: int
    device_stream_id: int
    models: set[int]
    task_num: int
    valid: bool = True


@dataclass
class StreamRegistry:
    """V1 `ReusableStreamAllocator`: every request creates; records are never removed."""

    device: DeviceStreams
    registry: dict[int, StreamRecord] = field(default_factory=dict)
    # (priority, flags) -> records ordered by (task_num, handle); first insertion of a key wins
    pool: dict[tuple[int, int], dict[tuple[int, int], StreamRecord]] = field(
        default_factory=lambda: defaultdict(dict))

    def get_or_create(self, model: int, priority: int, flags: int, task_num: int) -> int:
        """A stream for `model`. The pool is never searched: GE's code always creates."""
        handle = self.device.create(priority, flags)
        if handle is None:
            raise LimitExceeded(f"model {model}: the device has no stream left "
                                f"({len(self.device.live)} live of {self.device.available})")
        record = StreamRecord(handle, handle, {model}, task_num)
        self.registry[handle] = record  # a recycled handle value replaces the old entry ...
        self.pool[(priority, flags)].setdefault((task_num, handle), record)  # ... not this one
        return handle

    def destroy(self, handle: int | None, force: bool = False) -> None:
        """Destroy a stream; destroying it again succeeds and does nothing (GE's state table)."""
        record = self.registry.get(handle) if handle is not None else None
        if record is None:
            raise ValueError(f"stream handle {handle!r} was not created by this registry")
        if record.valid:
            self.device.destroy(record.handle)  # `force` only changes the driver call GE makes
            record.valid = False

    def sorted_pool(self, priority: int, flags: int) -> list[StreamRecord]:
        """The pool entries of one key in GE's (task_num, handle) order."""
        entries = self.pool.get((priority, flags), {})
        return [entries[k] for k in sorted(entries)]


def load_model_v1(registry: StreamRegistry, model: int, stream_num: int, *,
                  task_num: int = 0, huge: frozenset[int] = frozenset(),
                  hccl: frozenset[int] = frozenset()) -> dict[str, int | str]:
    """V1 model load: one new persistent stream per model stream (huge / force-copy flags)."""
    for sid in range(stream_num):
        flags = FLAG_PERSISTENT | (FLAG_HUGE if sid in huge else 0)
        flags |= FLAG_FORCE_COPY if sid in hccl else 0
        registry.get_or_create(model, 0, flags, task_num)
    return {"runtime": "v1", "requested": stream_num, "created": stream_num, "reused": 0}
