"""Child processes, measured: wall time and the child's own peak memory.

Every command of the benchmark runs in a fresh interpreter (`python -m streamalloc ...`), so its
wall time is what a user waits for end to end: interpreter start, imports, load, work, write.
Peak memory is the child's `ru_maxrss` from `os.wait4` on that one child (not
`RUSAGE_CHILDREN`, whose maximum would carry over from an earlier, bigger child). A timeout
kills the child (SIGKILL) and says so in the result; a memory limit (RLIMIT_AS, address space)
makes an allocation fail in the child instead of pushing a shared machine into swap or the OOM
killer.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

# One plain `json.load` of a file, timed inside the child (interpreter start excluded): the
# yardstick of the speed targets.
_JSON_LOAD = ("import json, sys, time\n"
              "t = time.perf_counter()\n"
              "with open(sys.argv[1], 'rb') as f:\n"
              "    json.load(f)\n"
              "print(time.perf_counter() - t)\n")


@dataclass(frozen=True)
class Run:
    """One finished child: exit code (-9 after a timeout), wall seconds, peak RSS in MiB."""

    returncode: int
    wall_s: float
    peak_mb: float
    stdout: str
    stderr: str
    timed_out: bool = False

    def error(self) -> str:
        """A one-line reason for a failed run (the last line of stderr, or the timeout)."""
        if self.timed_out:
            return f"killed after {self.wall_s:.0f} s (--timeout)"
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return f"exit {self.returncode}: {lines[-1] if lines else 'no message'}"


# Commands run as a user runs them: with Python's bytecode cache (a sandbox or CI may turn it
# off, and then every command compiles the package again, ~0.1 s of each run).
_USER_ENVIRONMENT = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: Sequence[str], *, timeout: float | None = None,
        memory_mb: int | None = None) -> Run:
    """Run `argv` to completion (stdout and stderr to temporary files, so a large output never
    blocks on a pipe) and measure it."""

    def limit_memory() -> None:  # in the child, before exec
        cap = (memory_mb or 0) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        killed = threading.Event()
        began = time.perf_counter()
        # preexec_fn is safe here: limit_memory takes no lock, and the only other thread (the
        # timer) is started after the fork.
        child = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env=_USER_ENVIRONMENT,
                                 preexec_fn=limit_memory if memory_mb else None)  # noqa: PLW1509

        def kill() -> None:
            killed.set()
            child.kill()

        timer = threading.Timer(timeout or 0, kill)
        if timeout:
            timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Run(child.returncode, wall, usage.ru_maxrss / 1024,
                   out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                   killed.is_set())


def streamalloc(*args: str, timeout: float | None = None, memory_mb: int | None = None) -> Run:
    """`python -m streamalloc ARGS` with this interpreter."""
    return run([sys.executable, "-m", "streamalloc", *args], timeout=timeout,
               memory_mb=memory_mb)


def startup_s(repeat: int = 5) -> float:
    """Best wall time of `streamalloc --version` over `repeat` runs."""
    return min(streamalloc("--version").wall_s for _ in range(repeat))


def json_load(path: str, repeat: int = 3) -> tuple[float, float]:
    """Best in-child time of a plain `json.load` of `path` over `repeat` fresh interpreters, and
    the largest peak RSS (MiB) of those children."""
    runs = [run([sys.executable, "-c", _JSON_LOAD, path]) for _ in range(repeat)]
    failed = [r for r in runs if r.returncode != 0]
    if failed:
        raise RuntimeError(f"json.load of {path} failed: {failed[0].error()}")
    return min(float(r.stdout) for r in runs), max(r.peak_mb for r in runs)
