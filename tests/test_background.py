"""`background.Background`: a call run in a forked child gives what the call gives in the caller
(its result or its exception); where no child can run or the child fails, it runs in the caller."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import wait
from pathlib import Path

import pytest

from streamalloc import background
from streamalloc.background import (
    SERIAL_ENV,
    Background,
    can_fork,
    can_start_processes,
    only_fork_safe_threads,
)
from streamalloc.outputs import Progress

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def _fails() -> None:
    raise ValueError("bad plan input")


def _unpicklable() -> object:
    pid = os.getpid()
    return lambda: pid  # a lambda does not pickle: the child cannot send it


def test_the_call_runs_in_a_child_and_returns_its_result() -> None:
    if background.usable_cpus() < 2:
        pytest.skip("a child runs only with a second CPU")
    assert can_fork()
    pid, doubled = Background(_pid_and, 21).result()
    assert doubled == 42 and pid != os.getpid()


def _sleeps_then(seconds: float, value: int) -> tuple[int, bool, bool]:
    time.sleep(seconds)
    return value, can_fork(), can_start_processes()


def test_calls_are_waited_for_together_and_their_children_fork_no_more() -> None:
    """`compare --jobs` waits for whichever of its runs ends first (`fileno`); a run in a
    child starts no child or pool of its own: its siblings have the other cores."""
    if background.usable_cpus() < 2:
        pytest.skip("a child runs only with a second CPU")
    slow, fast = Background(_sleeps_then, 2.0, 1), Background(_sleeps_then, 0.0, 2)
    assert slow.forked and fast.forked
    ready = wait([slow.fileno(), fast.fileno()], timeout=1.5)
    assert ready == [fast.fileno()]
    assert fast.result() == (2, False, False)
    assert slow.result() == (1, False, False)
    assert can_fork() and can_start_processes() == (sys.platform == "linux")


def test_an_exception_in_the_child_is_raised_by_the_call_in_the_caller() -> None:
    pending = Background(_fails)
    with pytest.raises(ValueError, match="bad plan input"):
        pending.result()


def test_a_result_that_does_not_pickle_is_computed_in_the_caller() -> None:
    made_by = Background(_unpicklable).result()
    assert made_by() == os.getpid()


def test_serial_environment_runs_the_call_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERIAL_ENV, "1")
    assert not can_fork()
    assert Background(_pid_and, 1).result() == (os.getpid(), 2)


def test_no_fork_while_another_thread_runs() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not can_fork()
        assert Background(_pid_and, 3).result() == (os.getpid(), 6)
    finally:
        release.set()
        thread.join()


def test_no_fork_on_one_usable_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "usable_cpus", lambda: 1)
    assert not can_fork()
    assert Background(_pid_and, 4).result() == (os.getpid(), 8)


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="Linux's MemAvailable")
def test_free_memory_counts_bytes_between_the_free_pages_and_all_memory() -> None:
    page = os.sysconf("SC_PAGE_SIZE")
    free_pages, total = os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    available = background.free_memory()
    assert available is not None
    assert 0.9 * free_pages <= available <= total  # MemAvailable adds reclaimable cache


def _sleeps_after_noting(marker: str) -> None:
    Path(marker).write_text(str(os.getpid()))
    time.sleep(60)


def test_cancel_stops_the_child_and_does_not_run_the_call(tmp_path: Path) -> None:
    if background.usable_cpus() < 2:
        pytest.skip("a child runs only with a second CPU")
    marker = tmp_path / "pid"
    pending = Background(_sleeps_after_noting, str(marker))
    for _ in range(3000):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.01)
    child = int(marker.read_text())
    pending.cancel()
    assert child != os.getpid()
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(child, 0)
    pending.cancel()  # nothing left to stop
    assert int(marker.read_text()) == child  # the call did not run here


class _LockedTerminal(io.StringIO):
    """A terminal whose writes hold a lock for a while, as a buffered stderr does: a fork in
    the middle of one would leave the child's copy held."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            time.sleep(0.0005)
            return super().write(text)


def _writes_to(stream: _LockedTerminal) -> int:
    signal.alarm(2)  # a child stuck on a held lock dies, and the call runs in the caller
    stream.write("from the child")
    signal.alarm(0)
    return os.getpid()


def test_the_progress_line_does_not_keep_calls_from_forking() -> None:
    """On a terminal the progress line's thread runs beside every command; a fork waits for
    its write to end, so children never inherit the stream's lock held, and they still run
    (they used to run in the caller whenever stderr was a terminal)."""
    if background.usable_cpus() < 2:
        pytest.skip("a child runs only with a second CPU")
    stream = _LockedTerminal()
    with Progress("allocate", stream, after=0.0, every=0.0):
        assert can_fork() and only_fork_safe_threads()
        pids = [Background(_writes_to, stream).result() for _ in range(20)]
    assert "streamalloc allocate" in stream.getvalue()
    assert os.getpid() not in pids
