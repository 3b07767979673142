"""The discrete-event kernel: ordering by (time, priority, seq), events, resources (one unit or
several at once, strictly first come first served), deadlock."""

from __future__ import annotations

import random

import pytest

from streamalloc.runtime_emu.kernel import PARK, Environment, Event, ProcessGen, Request, Resource


def test_timeouts_resume_in_time_order_and_ties_in_scheduling_order() -> None:
    env, log = Environment(), []

    def proc(name: str, delays: list[float]) -> ProcessGen:
        for d in delays:
            yield d
            log.append((env.now, name))

    env.process(proc("a", [2.0, 1.0]), "a")
    env.process(proc("b", [1.0, 2.0]), "b")
    env.process(proc("c", [3.0]), "c")
    env.run()
    # all three are due at 3.0: c scheduled that at time 0, b at time 1, a at time 2
    assert log == [(1.0, "b"), (2.0, "a"), (3.0, "c"), (3.0, "b"), (3.0, "a")]


def test_a_woken_process_runs_before_timeouts_due_at_the_same_time() -> None:
    env, ev, log = Environment(), Event("e"), []

    def waiter() -> ProcessGen:
        yield ev
        log.append("waiter")

    def recorder() -> ProcessGen:
        yield 1.0
        ev.record(env)
        log.append("recorder")

    def sleeper() -> ProcessGen:
        yield 1.0  # due at the same time as the recorder's record, scheduled after it
        log.append("sleeper")

    for gen, name in ((waiter(), "w"), (recorder(), "r"), (sleeper(), "s")):
        env.process(gen, name)
    env.run()
    assert log == ["recorder", "waiter", "sleeper"]  # URGENT wake-up beats the NORMAL timeout


def test_event_record_then_wait_consumes_and_resets() -> None:
    env, ev, got = Environment(), Event("e"), []

    def proc() -> ProcessGen:
        ev.record(env, "first")
        got.append((yield ev))       # already recorded: no waiting
        assert not ev.recorded       # the wait reset it
        ev.record(env, "second")
        ev.record(env, "third")      # set already: this record is lost
        got.append((yield ev))

    env.process(proc(), "p")
    env.run()
    assert got == ["first", "second"] and ev.lost == 1 and env.now == 0.0


def test_event_take_and_resource_take_say_park_when_unavailable() -> None:
    assert Event("e").take() is PARK
    res = Resource("r", 1)
    assert res.take() is None and res.take() is PARK
    with pytest.raises(ValueError, match="at least one unit"):
        Resource("bad", 0)


def test_resource_units_go_first_come_first_served() -> None:
    env, res, log = Environment(), Resource("core", 1), []

    def user(name: str, hold: float) -> ProcessGen:
        yield res
        log.append((env.now, name))
        yield hold
        res.release(env)

    for name, hold in (("a", 5.0), ("b", 1.0), ("c", 1.0)):
        env.process(user(name, hold), name)
    env.run()
    assert log == [(0.0, "a"), (5.0, "b"), (6.0, "c")] and res.free == 1


def test_requests_take_several_units_strictly_in_arrival_order() -> None:
    # 4 units: a holds 3 for 5; b wants 2 and waits; c wants 1, which is free, but queues
    # behind b; d wants 1 and comes after c. At 5 one release serves b, c and d at once.
    env, res, log = Environment(), Resource("cores", 4), []

    def user(name: str, count: int, hold: float) -> ProcessGen:
        claim = res.request(count)
        yield claim
        log.append((env.now, name, res.free))
        yield hold
        claim.release(env)

    for name, count, hold in (("a", 3, 5.0), ("b", 2, 1.0), ("c", 1, 1.0), ("d", 1, 2.0)):
        env.process(user(name, count, hold), name)
    env.run()
    assert log == [(0.0, "a", 1), (5.0, "b", 0), (5.0, "c", 0), (5.0, "d", 0)]
    assert res.free == 4 and env.now == 7.0


def test_a_wide_request_is_not_overtaken_by_later_narrow_ones() -> None:
    # 2 units: a holds 1 for 10; w wants 2 from time 1; n1 and n2 want 1 each from 2 and 3, and
    # one unit is free then, but w is first in line: a narrow stream cannot starve it.
    env, res, log = Environment(), Resource("cores", 2), []

    def user(name: str, count: int, delay: float, hold: float) -> ProcessGen:
        yield delay
        claim = res.request(count)
        yield claim
        log.append((env.now, name))
        yield hold
        claim.release(env)

    for name, count, delay, hold in (("a", 1, 0.0, 10.0), ("w", 2, 1.0, 1.0),
                                     ("n1", 1, 2.0, 1.0), ("n2", 1, 3.0, 1.0)):
        env.process(user(name, count, delay, hold), name)
    env.run()
    assert log == [(0.0, "a"), (10.0, "w"), (11.0, "n1"), (11.0, "n2")]


def test_requests_are_checked_against_the_capacity() -> None:
    res = Resource("cores", 4)
    assert Request(res, 4).take() is None and res.request(1).take() is PARK
    for count in (0, 5):
        with pytest.raises(ValueError, match="cannot give"):
            res.request(count)


def test_a_wait_that_can_never_be_satisfied_is_left_parked_with_its_event() -> None:
    env, e1, e2 = Environment(), Event("e1"), Event("e2")

    def one() -> ProcessGen:
        yield e1
        e2.record(env)

    def two() -> ProcessGen:
        yield 1.0
        yield e2
        e1.record(env)

    p1, p2 = env.process(one(), "one"), env.process(two(), "two")
    env.run()
    assert [(p.name, t.name) for p, t in env.blocked()] == [("one", "e1"), ("two", "e2")]
    assert not p1.done and not p2.done and env.now == 1.0


def test_finished_processes_are_done_and_nothing_stays_parked() -> None:
    env = Environment()

    def proc() -> ProcessGen:
        yield 1
        yield 0.5

    p = env.process(proc(), "p")
    env.run()
    assert p.done and env.blocked() == [] and env.now == 1.5


def _random_log(seed: int) -> list[tuple[float, str]]:
    rng, env, log = random.Random(seed), Environment(), []
    events = [Event(f"e{i}") for i in range(3)]
    res = Resource("r", 2)

    def proc(name: str) -> ProcessGen:
        for _ in range(20):
            choice = rng.random()
            if choice < 0.5:
                yield rng.choice([0.0, 0.5, 1.0, 1.5])
            elif choice < 0.7:
                rng.choice(events).record(env, name)
            else:
                yield res
                yield 1.0
                res.release(env)
            log.append((env.now, name))

    for i in range(6):
        env.process(proc(f"p{i}"), f"p{i}")
    env.run()
    return log


def test_runs_are_deterministic() -> None:
    assert _random_log(7) == _random_log(7)
    times = [t for t, _ in _random_log(3)]
    assert times == sorted(times)  # the clock never goes back
