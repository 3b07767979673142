"""Under an event budget: a fast plan over it brought within by merging whole streams into its
busiest one (`merge_ladder`).

The polish down to a budget (`search._reduced`) moves a node at a time, and each move saves an
event or two: on a training step whose fastest start is hundreds of events over the budget, its
tries run out first. A stream merged into the busiest stream saves all the events between them
at once. Each step merges the stream that costs least per event saved: the candidates are
ranked by their schedule estimate (`earliest_ends`: dependencies and stream order, cheap) per
event saved (`event_count`), and the first LADDER_EMULATED of them are emulated; the least
emulated makespan growth per event saved wins. The step that brings the plan within the budget
merges its stream whole, or only as much of it as the budget needs: the shortest prefix and the
shortest suffix in T-order (by bisection) that do. The fastest of the three is the start.

The BERT base training step under the parallel options, free rules, `--time-limit 5`: its
fastest start (604 events, 13.8 ms) over budgets of 222 to 398 events; the polish down to the
budget ran out of tries at each, and the search started from plans of 27 to 40 ms. The ladder:
591 events at 13.8 ms after four cheap merges, then 450 at 16.9 ms, 381 at 18.3, 222 at 28.9.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count, schedule_length

Probe = Callable[[Sequence[int]], tuple[int, float] | None]  # (events, makespan us), None: no
# plan (over the task capacity)
Allowed = Callable[[Sequence[int], Sequence[int]], bool]  # (streams, moved nodes) -> rules hold
Run = tuple[int, float]
LADDER_EMULATED = 2  # candidates emulated per step, best schedule estimates first
RANK_COST = 0.25  # of an evaluation, the event count and schedule estimate of a candidate (a
# start of hundreds of streams would rank for long before its probes ran out)


def merge_ladder(dag: TaskDag, streams: Sequence[int], *, budget: int, probe: Probe,
                 allowed: Allowed, durations: Sequence[int], evaluations: int
                 ) -> list[int] | None:
    """`streams` with streams merged into its busiest one until the plan has at most `budget`
    events (None when no merge gets it there within `evaluations` probes, a candidate's
    ranking counted as RANK_COST of one)."""
    return _Ladder(dag, streams, budget, probe, allowed, durations, evaluations).run()


@dataclass
class _Ladder:
    """The merges so far, and the probes left."""

    dag: TaskDag
    streams: Sequence[int]
    budget: int
    probe: Probe
    allowed: Allowed
    durations: Sequence[int]
    evaluations: float
    members: dict[int, list[int]] = field(default_factory=dict)
    main: int = 0

    def run(self) -> list[int] | None:
        for v, s in enumerate(self.streams):
            self.members.setdefault(s, []).append(v)
        self.main = min(self.members, key=lambda s: (-len(self.members[s]), s))
        graph = self.dag.graphs[self.members[self.main][0]]
        left = sorted(s for s, nodes in self.members.items()
                      if s != self.main and all(self.dag.graphs[v] == graph for v in nodes))
        current = list(self.streams)
        run = self._probe(current)
        while run is not None and run[0] > self.budget and left and self.evaluations > 0:
            step = self._step(current, run, left)
            if step is None:
                return None
            stream, trial, trial_run = step
            if trial_run[0] <= self.budget:
                return self._within(current, self.members[stream], trial, trial_run)
            left.remove(stream)
            current, run = trial, trial_run
        return current if run is not None and run[0] <= self.budget else None

    def _probe(self, streams: list[int]) -> Run | None:
        self.evaluations -= 1
        return self.probe(streams)

    def _step(self, current: list[int], run: Run, left: list[int]
              ) -> tuple[int, list[int], Run] | None:
        """The stream of `left` whose merge into the busiest costs least per event saved:
        (stream, the merged streams, their probe); None when no merge saves an event."""
        dag, durations = self.dag, self.durations
        events, estimate = event_count(dag, current), schedule_length(dag, durations, current)
        ranked = []
        for stream in left:
            if self.evaluations <= LADDER_EMULATED:
                break
            self.evaluations -= RANK_COST
            trial = _merged(current, self.members[stream], self.main)
            saved = events - event_count(dag, trial)
            if saved > 0 and self.allowed(trial, self.members[stream]):
                growth = max(0, schedule_length(dag, durations, trial) - estimate)
                ranked.append((growth / saved, stream, trial))
        ranked.sort(key=lambda item: item[:2])
        best: tuple[float, int, list[int], Run] | None = None
        for _, stream, trial in ranked[:LADDER_EMULATED]:
            if self.evaluations <= 0:
                break
            trial_run = self._probe(trial)
            if trial_run is None or trial_run[0] >= run[0]:
                continue
            cost = max(0.0, trial_run[1] - run[1]) / (run[0] - trial_run[0])
            if best is None or (cost, stream) < best[:2]:
                best = (cost, stream, trial, trial_run)
        return None if best is None else (best[1], best[2], best[3])

    def _within(self, current: list[int], nodes: list[int], whole: list[int], whole_run: Run
                ) -> list[int]:
        """The fastest of merging `nodes` whole and merging their shortest prefix and suffix
        (in T-order) that bring the plan within the budget, found by bisection."""
        found = [(whole_run[1], 0, whole)]
        for rank, part in enumerate((lambda k: nodes[:k], lambda k: nodes[len(nodes) - k:]), 1):
            low, high, kept = 1, len(nodes) - 1, None
            while low <= high and self.evaluations > 0:
                middle = (low + high) // 2
                trial = _merged(current, part(middle), self.main)
                trial_run = self._probe(trial) if self.allowed(trial, part(middle)) else None
                if trial_run is not None and trial_run[0] <= self.budget:
                    kept, high = (trial_run[1], rank, trial), middle - 1
                else:
                    low = middle + 1
            if kept is not None:
                found.append(kept)
        return min(found, key=lambda item: item[:2])[2]


def _merged(streams: list[int], nodes: Sequence[int], target: int) -> list[int]:
    trial = list(streams)
    for v in nodes:
        trial[v] = target
    return trial
