"""Lower bounds on the makespan of any plan of a graph on a device, from the compiled tasks.

* critical path: the longest chain of graph tasks over graph edges, each weighted by its task
  time (launch + execution); sync tasks and nodes without tasks weigh nothing;
* work over units: per engine, the unit-time of its graph tasks (block dim x task time, summed)
  divided by its units; the largest engine wins (a unit serves one task at a time, so an
  engine cannot do more than `units` unit-microseconds per microsecond).

A run whose status is ok is never shorter than either (tests check it as a property).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.program import TASK, Program


@dataclass(frozen=True, slots=True)
class LowerBounds:
    """The two bounds in microseconds, and the engine that gives the work bound."""

    critical_path_us: float
    work_over_units_us: float
    bottleneck_engine: str | None


def lower_bounds(program: Program, table: CostTable) -> LowerBounds:
    """Both bounds of a compiled program."""
    finish = [0.0] * program.task_count()
    durations, widths, preds, kinds = program.durations, program.widths, program.preds, \
        program.kinds
    for tid in program.topo:  # a topological order, so every predecessor is done
        before = preds[tid]
        ready = (finish[before[0]] if len(before) == 1 else max([finish[p] for p in before])) \
            if before else 0.0
        finish[tid] = ready + durations[tid] if kinds[tid] == TASK else ready
    work: dict[str, float] = {}
    for engine, kind, width, duration in zip(program.engines, kinds, widths, durations,
                                             strict=True):
        if engine is not None and kind == TASK:  # summed in tid order, as reported
            work[engine] = work.get(engine, 0.0) + width * duration
    per_unit = {e: w / table.engine(e).units for e, w in sorted(work.items())}
    bottleneck = max(per_unit, key=lambda e: (per_unit[e], e), default=None)
    return LowerBounds(critical_path_us=max(finish, default=0.0),
                       work_over_units_us=per_unit[bottleneck] if bottleneck else 0.0,
                       bottleneck_engine=bottleneck)
