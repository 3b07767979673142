"""A small SimPy-shaped discrete-event kernel: one environment, processes, events, resources.

The environment owns the clock and one heap of `(time, priority, seq, process, value)` entries;
`seq` is a global counter, so equal times and priorities resume in scheduling order and every
run is deterministic. Processes are generators that yield what they wait for:

* a number `d` (int or float): resume after `d` time units (SimPy's `Timeout`);
* an `Event`: resume when it is recorded, with the recorded value;
* a `Resource`: resume holding one unit (give it back with `Resource.release`);
* a `Request` (`resource.request(n)`): resume holding `n` units (give them back with
  `Request.release`). A resource serves its requests strictly first come, first served: a
  request that does not fit blocks every later one, so a stream of narrow requests cannot
  starve a wide one.

Unlike SimPy's one-shot events, `Event` behaves like a device event: `record` sets it, a wait
consumes it (the event is reset and can be recorded again), and a record with a waiter present
hands the value straight to the first waiter. When the queue is empty while processes are still
parked, nothing can ever wake them: `Environment.run` returns and `parked` names each blocked
process with what it waits for (the caller reports that as a deadlock).

>>> env = Environment()
>>> ev = Event("go")
>>> log = []
>>> def waiter():
...     value = yield ev
...     log.append((env.now, value))
>>> def sender():
...     yield 2.5
...     ev.record(env, "hello")
>>> _ = env.process(waiter(), "w"); _ = env.process(sender(), "s")
>>> env.run(); log
[(2.5, 'hello')]
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Generator
from typing import Any

URGENT = 0  # resumptions caused by a record or release: before timeouts due at the same time
NORMAL = 1  # timeouts

ProcessGen = Generator[Any, Any, None]


class Process:
    """A running generator with a name (for deadlock reports) and a `done` flag."""

    __slots__ = ("done", "gen", "name")

    def __init__(self, gen: ProcessGen, name: str) -> None:
        self.gen = gen
        self.name = name
        self.done = False

    def __repr__(self) -> str:
        return f"Process({self.name!r})"


class Event:
    """A reusable binary event: record sets it or wakes the first waiter; a wait resets it.

    `lost` counts records that found the event already set (the value of the second record is
    dropped, as a device event would); the caller decides whether that is an error.
    """

    __slots__ = ("lost", "name", "recorded", "value", "waiters")

    def __init__(self, name: str) -> None:
        self.name = name
        self.recorded = False
        self.value: Any = None
        self.waiters: deque[Process] = deque()
        self.lost = 0

    def record(self, env: Environment, value: Any = None) -> None:
        """Set the event now, or hand `value` to the first waiting process."""
        if self.waiters:
            env.wake(self.waiters.popleft(), value)
        elif self.recorded:
            self.lost += 1
        else:
            self.recorded, self.value = True, value

    def take(self) -> Any:
        """Consume a recorded value (the event is reset), or return `PARK` when unset."""
        if not self.recorded:
            return PARK
        self.recorded = False
        value, self.value = self.value, None
        return value

    def park(self, proc: Process) -> None:
        """Queue `proc` for the next record (the kernel calls this after `take` said PARK)."""
        self.waiters.append(proc)

    def __repr__(self) -> str:
        return f"Event({self.name!r})"


class Resource:
    """`capacity` identical units handed out strictly first come, first served.

    SimPy's Resource, with requests for several units at once: a request is served when it is
    the first in line and enough units are free. `waiters` holds (process, units) in arrival
    order; a release serves them from the front for as long as they fit.
    """

    __slots__ = ("capacity", "free", "name", "waiters")

    def __init__(self, name: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"resource {name!r} needs at least one unit, not {capacity}")
        self.name = name
        self.capacity = capacity
        self.free = capacity
        self.waiters: deque[tuple[Process, int]] = deque()

    def request(self, count: int) -> Request:
        """A reusable claim of `count` units (1 <= count <= capacity) to yield."""
        return Request(self, count)

    def acquire(self, count: int) -> Any:
        """Take `count` units (returns None), or return `PARK` when they are not free or
        someone is already waiting (strict FIFO: nobody overtakes a waiting request)."""
        if self.waiters or self.free < count:
            return PARK
        self.free -= count
        return None

    def take(self) -> Any:
        """Take one unit (returns None), or return `PARK` (see `acquire`)."""
        return self.acquire(1)

    def park(self, proc: Process) -> None:
        """Queue `proc` for one unit (the kernel calls this after `take` said PARK)."""
        self.waiters.append((proc, 1))

    def release(self, env: Environment, count: int = 1) -> None:
        """Give `count` units back, then serve the waiters in order while the first fits."""
        self.free += count
        waiters = self.waiters
        while waiters and waiters[0][1] <= self.free:
            proc, wanted = waiters.popleft()
            self.free -= wanted
            env.wake(proc, None)

    def __repr__(self) -> str:
        return f"Resource({self.name!r}, {self.capacity})"


class Request:
    """`count` units of one resource, as one claim: yield it, later `release` it."""

    __slots__ = ("count", "resource")

    def __init__(self, resource: Resource, count: int) -> None:
        if not 1 <= count <= resource.capacity:
            raise ValueError(f"{resource!r} cannot give {count} units at once")
        self.resource = resource
        self.count = count

    def take(self) -> Any:
        """Take the units now (returns None), or return `PARK`."""
        return self.resource.acquire(self.count)

    def park(self, proc: Process) -> None:
        """Queue `proc` for the units, behind every earlier request of the resource."""
        self.resource.waiters.append((proc, self.count))

    def release(self, env: Environment) -> None:
        """Give the units back."""
        self.resource.release(env, self.count)

    def __repr__(self) -> str:
        return f"Request({self.resource.name!r}, {self.count})"


PARK: Any = object()  # "not available": the process must wait
Waitable = Event | Resource | Request  # what a process can park on


class Environment:
    """The clock, the event queue and the processes; `run()` executes until nothing is left."""

    def __init__(self) -> None:
        self.now: float = 0.0
        self._queue: list[tuple[float, int, int, Process, Any]] = []
        self._seq = 0
        self.processes: list[Process] = []
        self.parked: dict[Process, Waitable] = {}
        self.steps = 0  # queue entries processed, for benchmarks

    def process(self, gen: ProcessGen, name: str) -> Process:
        """Start a generator as a process; it first runs at the current time, in start order."""
        proc = Process(gen, name)
        self.processes.append(proc)
        self._push(self.now, NORMAL, proc, None)
        return proc

    def wake(self, proc: Process, value: Any) -> None:
        """Resume a parked process now (URGENT), sending it `value`."""
        del self.parked[proc]
        self._push(self.now, URGENT, proc, value)

    def _push(self, time: float, priority: int, proc: Process, value: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time, priority, self._seq, proc, value))

    def run(self) -> None:
        """Process the queue until it is empty; parked processes are then deadlocked."""
        # The hot loop of every emulation: locals only, one heap operation per resumption.
        # A timeout that ends before every queued entry resumes the process directly: popping
        # it from the heap would give the same order, only slower.
        queue, pop, push, parked = self._queue, heapq.heappop, heapq.heappush, self.parked
        steps = 0
        while queue:
            now, _, _, proc, value = pop(queue)
            self.now = now
            steps += 1
            send = proc.gen.send
            while True:
                try:
                    target = send(value)
                except StopIteration:
                    proc.done = True
                    break
                if target.__class__ is float or target.__class__ is int:
                    due = self.now + target
                    if queue and queue[0][0] <= due:
                        self._seq += 1
                        push(queue, (due, NORMAL, self._seq, proc, None))
                        break
                    self.now, value = due, None
                    continue
                value = target.take()
                if value is PARK:
                    target.park(proc)
                    parked[proc] = target
                    break
        self.steps += steps

    def blocked(self) -> list[tuple[Process, Waitable]]:
        """Parked processes in start order, with what each waits for."""
        order = {p: i for i, p in enumerate(self.processes)}
        return sorted(self.parked.items(), key=lambda item: order[item[0]])
