"""Synchronization and physical streams, shared by every allocator (ge-sync-and-split.md).

Phase A inserts cross-stream events (or notifies), removes redundant ones, renumbers them and
places Send/Recv tasks; Phase B splits logical streams by task capacity, adds split events and
updates activation. `synchronize(graph, allocation)` runs both as named stages (`driver.py`:
`sync_stages`, each a pass over a frozen `SyncState`) and returns a `SyncPlan`.
"""
