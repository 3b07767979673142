"""The pool of session-scoped variable managers (spec 9).

A pool maps session id -> `VarManager`, creating managers on first request; sessions are isolated
(offsets restart at 0 per session). GE has one global pool; `default_pool()` is ours. Plans and
tests create their own `VarManagerPool` so that nothing leaks between runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from streamalloc.memory.context import GeContext
from streamalloc.memory.manager import VarManager


class VarManagerPool:
    """Session id -> variable manager, plus the GE context the managers read options from."""

    def __init__(self, context: GeContext | None = None) -> None:
        self.context = context or GeContext()
        self._managers: dict[int, VarManager] = {}

    def get(self, session_id: int) -> VarManager:
        """The session's manager, created (uninitialized) on first request."""
        manager = self._managers.get(session_id)
        if manager is None:
            manager = VarManager(session_id, self)
            self._managers[session_id] = manager
        return manager

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._managers

    def __len__(self) -> int:
        return len(self._managers)

    def __iter__(self) -> Iterator[int]:
        return iter(self._managers)

    def remove(self, session_id: int) -> None:
        """Remove and destroy a session's manager (no-op when absent)."""
        manager = self._managers.pop(session_id, None)
        if manager is not None:
            manager.destroy()

    def destroy(self) -> None:
        """Destroy every manager and empty the pool."""
        for session_id in list(self._managers):
            self.remove(session_id)


_DEFAULT = VarManagerPool()


def default_pool() -> VarManagerPool:
    """The process-wide pool (GE's `VarManagerPool::Instance()`)."""
    return _DEFAULT
