"""A call that runs in a forked child process while the caller goes on: `emulate` runs a large
plan while the verifier checks it.

The child starts as a copy of the caller (fork), so nothing is sent to it; it sends back the
pickled result. `result()` waits for it. Where a fork is not available, not safe or of no use
(no `os.fork`, Python threads running other than the progress line's, one usable CPU, the
environment variable `STREAMALLOC_SERIAL` set, or the caller is itself such a child, whose
cores its siblings use), or the child fails in any way (an exception, a result that does not
pickle, a signal), the call runs in the caller when `result()` is asked for, so its result or
exception is the same either way: only the wall time differs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

SERIAL_ENV = "STREAMALLOC_SERIAL"  # set (to anything): every call runs in the caller


_AT_FORK = threading.Lock()  # held by a fork-safe thread's steps; a fork waits for it
_IN_CHILD = False  # this process is a `Background` call's child


def can_fork() -> bool:
    """Whether `Background` calls run in a child process here and now: on one CPU a child
    only competes with the caller."""
    return hasattr(os, "fork") and not os.environ.get(SERIAL_ENV) and usable_cpus() > 1 \
        and only_fork_safe_threads() and not _IN_CHILD


def only_fork_safe_threads() -> bool:
    """Whether a fork here copies no other thread that could hold a lock the child needs:
    a `fork_safe_thread` never does (a fork waits for its step to end)."""
    current = threading.current_thread()
    return all(t is current or isinstance(t, _ForkSafeThread) for t in threading.enumerate())


def can_start_processes() -> bool:
    """Whether several processes forked from this one may run at once here (`compare --jobs`,
    the makespan objective's `--workers`): on Linux, with no Python thread but fork-safe ones
    (a Ray worker has some), in a process that is not a daemon (which may not start
    processes) nor a `Background` call's child (a `compare --jobs` run's: its siblings use the
    other cores)."""
    return sys.platform == "linux" and only_fork_safe_threads() \
        and not multiprocessing.current_process().daemon and not _IN_CHILD


class _ForkSafeThread(threading.Thread):
    pass


def fork_safe_thread(step: Callable[[], None], pause: Callable[[], bool]) -> threading.Thread:
    """A started daemon thread that runs `step()` after each call of `pause()` (which waits)
    until `pause()` returns True. A fork waits for a step to end, so the child never inherits
    what a step holds (the progress line's lock on stderr), and the thread is not copied: it
    does not keep the makespan searches and `Background` from forking as another thread
    does (on a terminal, the progress line runs beside every command)."""
    def run() -> None:
        while not pause():
            with _AT_FORK:
                step()

    thread = _ForkSafeThread(target=run, daemon=True, name="streamalloc-progress")
    thread.start()
    return thread


def _take_lock() -> None:
    _AT_FORK.acquire()


def _give_lock_back() -> None:
    _AT_FORK.release()


def _renew_lock_in_child() -> None:
    global _AT_FORK  # noqa: PLW0603 - the child's copy is held: the parent took it to fork
    _AT_FORK = threading.Lock()


if hasattr(os, "register_at_fork"):  # (by name, not bound to today's lock: a child that
    # forks in turn takes its own)
    os.register_at_fork(before=_take_lock, after_in_parent=_give_lock_back,
                        after_in_child=_renew_lock_in_child)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def free_memory() -> int | None:
    """Bytes of physical memory available now (None where the system does not say): a child's
    own allocations come out of it, on top of the caller's. Linux's MemAvailable counts the
    page cache the kernel would give up; elsewhere the free pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


class Background(Generic[_R]):
    """`func(*args, **kwargs)`, started in a child process; `result()` returns what it returned
    (or raises what it raised)."""

    def __init__(self, func: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> None:
        self._call: Callable[[], _R] = lambda: func(*args, **kwargs)
        self._child: tuple[int, int] | None = None  # (pid, read end of its pipe)
        if can_fork():
            self._child = _start(self._call)

    @property
    def forked(self) -> bool:
        """Whether the call runs in a child process (else `result()` runs it here)."""
        return self._child is not None

    def fileno(self) -> int:
        """The read end of the child's pipe: readable once the child is done, so several
        calls can be waited for at once (`multiprocessing.connection.wait`). Only while
        `forked`."""
        assert self._child is not None
        return self._child[1]

    def result(self) -> _R:
        """The call's result: the child's, or the call run here when there is no child or it
        failed."""
        child, self._child = self._child, None
        if child is not None:
            pid, read_end = child
            with os.fdopen(read_end, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(pid, 0)
            if status == 0 and data:
                result: _R = pickle.loads(data)
                return result
        return self._call()

    def cancel(self) -> None:
        """Stop the child, if one runs, and reap it; the call is not run here. What the child
        wrote before it stopped is the caller's to remove."""
        child, self._child = self._child, None
        if child is not None:
            pid, read_end = child
            os.close(read_end)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _start(call: Callable[[], object]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, read_end
    # the child: it must never return into the caller's code, whatever happens
    global _IN_CHILD  # noqa: PLW0603 - the child's own copy
    _IN_CHILD = True
    status = 1
    try:
        os.close(read_end)
        data = pickle.dumps(call(), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no flushing of the caller's buffers
