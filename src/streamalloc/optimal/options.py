"""The optimal mode's settings and the report it writes into the plan (`solver` block)."""

from __future__ import annotations

from typing import Any

import msgspec

from streamalloc.runtime_emu.cost_table import CostTable

POLISH_PER_SECOND = 400  # polish evaluations per second of --time-limit (deterministic)
POLISH_NODES_PER_SECOND = 200_000  # and at most this many divided by the graph's streamed
# nodes: an evaluation (sync, emulate) costs about its node count, so the polish's
# wall time follows --time-limit on a 10k-node graph as on a 500-node one
MAX_SOLVER_NODES = 12_000  # above this the baseline is kept (status FALLBACK, with the reason)
# where CP-SAT solves the model whole: its search takes gigabytes at the default --time-limit
# (layered graphs with GE's rules: 10k nodes 6.3 GB; before the engine caps' Boolean form
# 9.7 GB, 12k 12.4 GB, and 18k killed at 24 GB)
MAX_WINDOWED_NODES = 120_000  # and where it solves windows of it (`solver.windows`), or not
# at all (the makespan objective, `chain_model.unsolved`: a 100k-node layered
# graph at --time-limit 10 took 196 s and 2.5 GB, 429 -> 309 ms): the
# exact reachability the model's edges come from grows as N^2 (`solver.dag`: 0.6 GB at 100k
# nodes, 2.4 GB at 200k)
TIME_SCALE = 10  # schedule time unit: 0.1 us
EPS_US = 1e-6  # tolerance on the makespan limit, in the driver's check and the search's
CAPACITY_SHARE = 0.9  # of a stream's free units: room for the Send/Recv tasks events add


def makespan_limit_us(baseline_us: float, slack: float) -> float:
    """The makespan a plan may reach: the baseline's x (1 + slack / 100)."""
    return baseline_us * (1 + slack / 100)


class OptimalOptions(msgspec.Struct, frozen=True):
    """The optimal mode's settings (CLI: --objective, --concurrency, ...)."""

    objective: str = "events"
    concurrency: str = "ge"
    makespan_slack: float = 0.0
    event_budget: int | None = None
    time_limit: float = 10.0
    seed: int = 0
    workers: int = 1
    sync: str = "minimal"
    costs: CostTable | None = None
    window: int = 8

    @property
    def budget(self) -> int | None:
        """The event budget the written plan keeps: the makespan objective's (the events
        objective has none, its bar is the baseline's events)."""
        return self.event_budget if self.objective == "makespan" else None


class SolverReport(msgspec.Struct, frozen=True):
    """The plan's `solver` block (formats: plan file)."""

    status: str
    objective: float | None
    bound: float | None
    events_final: int
    deterministic_time: float
    nimble_min_events: int | None
    reason: str = ""
    baseline_events: int = 0
    baseline_makespan_us: float = 0.0
    makespan_us: float = 0.0
    phase: str = ""
    baseline_over_limit: str = ""  # why the ge-mode plan does not fit the device, if it does not
    events_bound: int | None = None  # the fewest events of any plan within the limits

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (0 when proven optimal)."""
        if self.objective is None or self.bound is None:
            return None
        return round(abs(self.objective - self.bound) / max(1.0, abs(self.objective)), 6)

    def to_json(self) -> dict[str, Any]:
        """The plan file's `solver` block; wall time is never written (reproducible files)."""
        block: dict[str, Any] = {
            "status": self.status, "objective": self.objective, "bound": self.bound,
            "gap": self.gap, "events_final": self.events_final,
            "events_bound": self.events_bound,
            "deterministic_time": self.deterministic_time,
            "nimble_min_events": self.nimble_min_events,
            "baseline_events": self.baseline_events,
            "baseline_makespan_us": round(self.baseline_makespan_us, 3),
            "makespan_us": round(self.makespan_us, 3), "phase": self.phase}
        if self.reason:
            block["reason"] = self.reason
        if self.baseline_over_limit:
            block["baseline_over_limit"] = self.baseline_over_limit
        return block


