"""`--mode optimal`: the CP-SAT allocator composed with the GE baseline, sync, verifier and
emulator (layer L9, docs/architecture.md).

`options` (settings, the plan's `solver` block), `evaluate` (the streamed-node DAG, plans of
stream assignments and their emulated outcome), `nimble` (Nimble's setting without
rules: its fewest events, then fewest streams), `search` (CP-SAT or the exact chains, then the
polish), `driver` (baseline, search, fallback).
"""

from typing import Any

from streamalloc.optimal.options import OptimalOptions, SolverReport
from streamalloc.rules import FREE

__all__ = ["FREE", "OptimalOptions", "SolverReport", "allocate_optimal", "matching_chains",
           "nimble_min_events", "task_dag"]

# The search imports OR-Tools and networkx (about half a second): only when it is used, so that
# ge mode and the other commands do not pay for it.
_LAZY = {"allocate_optimal": "driver", "matching_chains": "nimble",
         "nimble_min_events": "nimble", "task_dag": "evaluate"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
