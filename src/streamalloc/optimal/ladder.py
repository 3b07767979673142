"""Under an event budget: a fast plan over it brought within by merging whole streams into its
busiest one (`merge_ladder`).

The polish down to a budget (`makespan_budget.reduced_to_budget`) moves a node at a time, and
each move saves an event or two: on a training step whose fastest start is hundreds of events
over the budget, its tries run out first. A stream merged into the busiest stream saves all the
events between them at once. Each step merges the stream that costs least per event saved: the
candidates are ranked by their work per dependency between them and the busiest stream (what
the merge puts on it, and the events it may save; cheap, where an exact event count per
candidate took seconds a step on a start of a hundred streams), and the first LADDER_EMULATED
of them are emulated: the least emulated makespan growth per event saved wins. The step that
brings the plan within the budget merges its stream whole, or only as much of it as the budget
needs: the shortest prefix and the shortest suffix in T-order (by bisection) that do. The
fastest of the three is the start.

The BERT base training step under the parallel options, free rules, `--time-limit 5`: its
fastest start needs 604 events (13.8 ms); the polish down to budgets of 150 to 398 ran out of
tries at each, and the plans ran 34525, 27176, 25236 and 32669 us at 150, 222, 310 and 398.
From the ladder's starts: 29720, 27008, 20151 and 18171 us.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from streamalloc.solver.dag import TaskDag

Run = tuple[int, float]  # (events, makespan us)
Probe = Callable[[Sequence[int]], Run | None]  # None: no plan (over the task capacity)
Allowed = Callable[[Sequence[int], Sequence[int]], bool]  # (streams, moved nodes) -> rules hold
LADDER_EMULATED = 2  # candidates emulated per step, best ranked first


def merge_ladder(dag: TaskDag, streams: Sequence[int], *, budget: int, probe: Probe,
                 allowed: Allowed, durations: Sequence[int], evaluations: int
                 ) -> list[int] | None:
    """`streams` with streams merged into its busiest one until the plan has at most `budget`
    events (None when no merge gets it there within `evaluations` probes)."""
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
    evaluations: int
    members: dict[int, list[int]] = field(default_factory=dict)
    links: dict[int, Counter[int]] = field(default_factory=dict)  # dependencies between streams
    work: dict[int, int] = field(default_factory=dict)  # time of each stream's nodes
    main: int = 0

    def run(self) -> list[int] | None:
        for v, s in enumerate(self.streams):
            self.members.setdefault(s, []).append(v)
        self.work = {s: sum(self.durations[v] for v in nodes) for s, nodes in self.members.items()}
        self.links = {s: Counter() for s in self.members}
        for u, v in self.dag.reduction:
            a, b = self.streams[u], self.streams[v]
            if a != b:
                self.links[a][b] += 1
                self.links[b][a] += 1
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
            self._join(stream)
            current, run = trial, trial_run
        return current if run is not None and run[0] <= self.budget else None

    def _probe(self, streams: list[int]) -> Run | None:
        self.evaluations -= 1
        return self.probe(streams)

    def _step(self, current: list[int], run: Run, left: list[int]
              ) -> tuple[int, list[int], Run] | None:
        """The stream of `left` whose merge into the busiest costs least per event saved:
        (stream, the merged streams, their probe); None when no merge saves an event."""
        linked = self.links[self.main]
        ranked = sorted((self.work[stream] / linked[stream], stream)
                        for stream in left if linked[stream])
        best: tuple[float, int, list[int], Run] | None = None
        tried = 0
        for _, stream in ranked:
            if tried == LADDER_EMULATED or self.evaluations <= 0:
                break
            trial = _merged(current, self.members[stream], self.main)
            if not self.allowed(trial, self.members[stream]):
                continue
            tried += 1
            trial_run = self._probe(trial)
            if trial_run is None or trial_run[0] >= run[0]:
                continue
            cost = max(0.0, trial_run[1] - run[1]) / (run[0] - trial_run[0])
            if best is None or (cost, stream) < best[:2]:
                best = (cost, stream, trial, trial_run)
        return None if best is None else (best[1], best[2], best[3])

    def _join(self, stream: int) -> None:
        """Its dependencies with the other streams become the busiest stream's."""
        for other, count in self.links.pop(stream).items():
            del self.links[other][stream]
            if other != self.main:
                self.links[self.main][other] += count
                self.links[other][self.main] += count

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
