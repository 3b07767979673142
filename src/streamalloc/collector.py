"""Pausing Python's cyclic garbage collector around the allocation-heavy phases, and holding a
command's results until the command-line program exits.

Loading, allocating, synchronizing, verifying and emulating a 100k-node graph each allocate
millions of small acyclic objects (nodes, edges, tasks, tuples). Every burst of allocations
makes the collector rescan the whole heap, the graph included, which costs as much as the work
itself (about 40% of loading). These phases create no reference cycles worth collecting
meanwhile; reference counting frees their garbage. The collector is switched back on (if it was
on) however the phase ends.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextmanager
def paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (nesting is fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _age_survivors()
            gc.enable()


def _age_survivors() -> None:
    """Move the objects the phase left alive to the oldest generation without scanning them:
    otherwise the first young collection after the phase walks them all (0.1-0.2 s after
    loading a 100k-node graph). Freezing and unfreezing moves every tracked object there; it
    is skipped when someone else froze objects (unfreezing would release theirs)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def pausing(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a phase to run with the collector paused."""
    @functools.wraps(func)
    def phase(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with paused():
            return func(*args, **kwargs)
    return phase


_HELD: list[object] | None = None  # None: `hold` keeps nothing


def hold_until_exit() -> None:
    """From now on `hold` keeps objects alive. The command-line program exits without freeing
    its objects (`cli.console_main`): a command that holds its results skips freeing them one
    by one when it returns (20 ms for a 100k-node graph and plan)."""
    global _HELD  # noqa: PLW0603 - one switch for the process, set by the program's entry
    if _HELD is None:
        _HELD = []


def hold(*objects: object) -> None:
    """Keep `objects` alive until the process exits, once `hold_until_exit` was called (the
    command-line program); otherwise do nothing (a library caller frees them as usual)."""
    if _HELD is not None:
        _HELD.extend(objects)
