"""Large-neighbourhood polish of a stream assignment on the exact event count.

The CP-SAT model counts an event per reduction edge whose ends are on different streams; the
events minimal sync keeps are fewer wherever program order implies a dependency. This pass
works on the exact count (`events.event_count`): it tries, in a fixed order, moving the
receiving node of each event onto the sending stream, the sending node onto the receiving
stream, each round trip through the event (a run of nodes that leaves a stream and comes
back) onto the stream it left (`Polish.run` says when), and merging the two streams, and
keeps a move when it needs fewer events (then fewer streams), the schedule stays within
`limit` and the rules the move touches still hold; given a `target`, it stops as soon as the
count is down to it (the makespan objective's event budget).
The number of tried moves is the budget (the caller reads what is left of it), so the result
depends only on the input. The makespan check is the caller's (the optimal mode emulates the
plan of each improving assignment), and runs only on moves that already need fewer events;
`Remembered` runs it once per partition of the nodes into streams.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from hashlib import blake2b

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.events import event_count

Allowed = Callable[[Sequence[int], Sequence[int]], bool]  # (streams, moved nodes) -> rules hold


@dataclass
class Polish:
    """The current assignment, its score and the remaining evaluation budget."""

    dag: TaskDag
    length: Callable[[Sequence[int]], int]  # schedule estimate of an assignment
    limit: int | None
    allowed: Allowed
    budget: int
    streams: list[int]
    target: int = -1
    events: int = 0
    reverse: bool = False  # a pass visits the event edges last to first
    round_trips: bool = True  # at a local optimum, move round trips too: they remove
    # several events at once, and cost the makespan objective, whose polish puts events
    # second, its time (the ResNet-50 training step at an event budget of 200: 160 events
    # at 5234 us, not 191 at 4344; at 120, 92 at 6322, not 99 at 6079)
    count: Callable[[Sequence[int]], int] | None = None  # exact event count of an
    # assignment; default: `event_count`, remembered per partition (`Remembered`): the
    # ResNet-50 training step's two passes count 1,334 partitions in 3,493 tries

    def __post_init__(self) -> None:
        if self.count is None:
            self.count = Remembered(partial(event_count, self.dag))

    def run(self) -> list[int]:
        """Improve until a whole pass changes nothing or the budget is spent: first with
        single nodes and merges, then, from their local optimum, with round trips as well.
        Tried from the start, round trips change the path the greedy passes take: the
        training steps of T5 and GPT-2 small gained (147 -> 133, 139 -> 130 events), the
        BERT base training step at 5% and 10% makespan slack lost (114 -> 146, 108 -> 139),
        and a 10k-node generated graph, which kept none of 152, lost 8 events to their
        tries. From the local optimum they only add to it."""
        self.events = self._count(self.streams)
        wide = False
        while self._going():
            improved = False
            for u, v in self._event_edges():
                if not self._going():
                    break
                improved |= self._try_moves(u, v, wide)
            if not improved:
                if wide or not self.round_trips:
                    break
                wide = True
        return self.streams

    def _going(self) -> bool:
        return self.budget > 0 and self.events > self.target and not self._spent()

    def _spent(self) -> bool:
        """Has a length with a cap on its computations (`Remembered`) reached it?"""
        return isinstance(self.length, Remembered) and self.length.spent

    def _event_edges(self) -> list[tuple[int, int]]:
        edges = [(u, v) for u, v in self.dag.reduction if self.streams[u] != self.streams[v]]
        return edges[::-1] if self.reverse else edges

    def _try_moves(self, u: int, v: int, wide: bool) -> bool:
        if self.streams[u] == self.streams[v]:
            return False
        return any(self._accept(moved, target) for moved, target in self._moves(u, v, wide))

    def _moves(self, u: int, v: int, wide: bool) -> Iterator[tuple[list[int], int]]:
        """v onto u's stream, u onto v's, when `wide` the round trips through u -> v, v's
        stream onto u's; each computed only when the ones before it did not help."""
        su, sv = self.streams[u], self.streams[v]
        yield [v], su
        yield [u], sv
        if wide:
            yield from self._round_trips(u, v)
        yield [w for w, s in enumerate(self.streams) if s == sv], su

    def _round_trips(self, u: int, v: int) -> list[tuple[list[int], int]]:
        """The round trips through the event u -> v: the nodes of v's stream from v on that
        lead back to u's stream after u, moved onto u's; the nodes of u's stream up to u that
        lead to u and that an earlier node of v's stream leads to, moved onto v's. Each
        removes the event and the one back (T5's encoder blocks: q MatMul -> attention -> o
        MatMul)."""
        streams, anc, graphs = self.streams, self.dag.ancestors, self.dag.graphs
        su, sv = streams[u], streams[v]
        back = 0  # the nodes that reach u's stream after v (what a node from v on reaches)
        for x in range(v + 1, len(streams)):
            if streams[x] == su:
                back |= anc[x]
        onto_u = [w for w in range(v, len(streams)) if streams[w] == sv
                  and (w == v or anc[w] >> v & 1) and back >> w & 1]
        fed = 0  # v's stream before u (what reaches a node up to u)
        for x in range(u):
            if streams[x] == sv:
                fed |= 1 << x
        onto_v = [w for w in range(u + 1) if streams[w] == su
                  and (w == u or anc[u] >> w & 1) and anc[w] & fed]
        return [(moved, streams[end]) for moved, end in ((onto_u, u), (onto_v, v))
                if len(moved) > 1 and all(graphs[w] == graphs[end] for w in moved)]

    def _count(self, streams: Sequence[int]) -> int:
        assert self.count is not None  # set in __post_init__
        return self.count(streams)

    def _accept(self, moved: list[int], target: int) -> bool:
        trial = list(self.streams)
        for w in moved:
            trial[w] = target
        self.budget -= 1
        events = self._count(trial)
        if (events, len(set(trial))) >= (self.events, len(set(self.streams))):
            return False
        if not self.allowed(trial, moved):
            return False
        if self.limit is not None and (self._spent() or self.length(trial) > self.limit):
            return False
        self.streams, self.events = trial, events
        return True


def polish(dag: TaskDag, streams: Sequence[int], *, length: Callable[[Sequence[int]], int],
           limit: int | None, allowed: Allowed, budget: int, target: int = -1,
           round_trips: bool = True, lengths: int | None = None) -> list[int]:
    """A better assignment than `streams` (or `streams` itself): fewer events with
    `length(streams)` <= `limit`, no fewer than needed to reach `target` when given; at most
    `lengths` lengths computed, if given."""
    return Polish(dag, Remembered(length, lengths), limit, allowed, budget, list(streams),
                  target, round_trips=round_trips).run()


class Remembered:
    """`of` an assignment whose stream ids are only labels (its schedule length, its event
    count), computed once per partition of the nodes: a pass retries a move the moves kept
    since did not change (the ResNet-50 training step: 1,186 emulated runs of 186
    partitions). A partition is kept as a 16-byte digest of its labels, so a long polish of a
    large graph keeps kilobytes, not a copy of each assignment. Past `most` computations it
    is `spent`: a polish whose length it is stops there."""

    def __init__(self, of: Callable[[Sequence[int]], int], most: int | None = None) -> None:
        self.of, self.most = of, most
        self.seen: dict[bytes, int] = {}

    def __call__(self, streams: Sequence[int]) -> int:
        labels: dict[int, int] = {}
        key = blake2b(array("i", [labels.setdefault(s, len(labels)) for s in streams]),
                      digest_size=16).digest()
        if key not in self.seen:
            self.seen[key] = self.of(streams)
        return self.seen[key]

    @property
    def spent(self) -> bool:
        """Has it been computed `most` times?"""
        return self.most is not None and len(self.seen) >= self.most
