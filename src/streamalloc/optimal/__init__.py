"""`--mode optimal`: the CP-SAT allocator composed with the GE baseline, sync, verifier and
emulator (layer L9, docs/architecture.md).

`options` (settings, the plan's `solver` block), `evaluate` (the streamed-node DAG, plans of
stream assignments and their verified, emulated outcome), `search` (CP-SAT or the exact
matching, then the polish), `driver` (baseline, search, fallback).
"""

from streamalloc.optimal.driver import allocate_optimal
from streamalloc.optimal.evaluate import matching_chains, nimble_min_events, task_dag
from streamalloc.optimal.options import FREE, OptimalOptions, SolverReport

__all__ = ["FREE", "OptimalOptions", "SolverReport", "allocate_optimal", "matching_chains",
           "nimble_min_events", "task_dag"]
