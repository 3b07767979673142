"""The moves the critical-chain search tries at one link of the chain.

A move reassigns some nodes to streams: a tuple of (node, target stream) pairs. Beside single
nodes and whole streams, the moves relocate *branches*: the chain of nodes between a fork and a
join (a maximal path of the transitive reduction whose inner edges are the only way in and out
of their nodes, `Branches.of`). Moving a whole branch keeps it free of events inside; moving it
onto a sibling branch's stream lets the two share one event at the fork (one Send there) and
one at the join (one Recv there), which is what a 4-branch Inception module needs, with the
longest branch staying on the producer's and consumer's stream.

At a link whose task waited for its stream predecessor (cause `stream`):

* a predecessor it does not depend on (the stream runs its tasks in T-order, so an unrelated
  task earlier in T-order blocks it): the task, its branch, then the blocker and the blocker's
  branch, each onto a fresh stream;
* producers on other streams (a join): the task, then its branch, onto a producer's stream
  (the join onto the long branch's stream: its other producers are done by then); the producer's
  branch onto the task's stream, swapped with the branch that runs there, and onto each other
  producer's stream (grouped); the producer and its whole stream likewise (fewer Recvs);
* consumers of the task before it on other streams (a fork): the same, from the fork's side
  (fewer Sends).

At a link whose task waited for engine units (cause `units`): the tasks that held them onto its
stream (which runs them after it when they come later in T-order) or a fresh stream.

>>> from streamalloc.solver.dag import TaskDag
>>> dag = TaskDag.build(["p", "a1", "a2", "b", "j"],
...     [("p", "a1"), ("a1", "a2"), ("p", "b"), ("a2", "j"), ("b", "j")], ["g"] * 5)
>>> Branches(dag).of(1), Branches(dag).of(3)  # a1 -> a2, and b alone
((1, 2), (3,))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from streamalloc.runtime_emu.critical_chain import UNITS
from streamalloc.solver.dag import TaskDag

Move = tuple[tuple[int, int], ...]  # (node, target stream) pairs, in node order


@dataclass(frozen=True)
class Link:
    """A task of the critical chain (dag index), why it started when it did, the tasks
    behind that cause (the graph task before it on its stream, or the tasks that held its
    engine's units) and the graph task before it on its stream (None for the first)."""

    node: int
    cause: str
    behind: tuple[int, ...]
    before: int | None = None


def move(nodes: Sequence[int], target: int) -> Move:
    """Every node of `nodes` onto `target`."""
    return tuple((w, target) for w in sorted(set(nodes)))


def _both(first: Move, second: Move) -> Move:
    """Both moves; a node in both goes where `first` puts it."""
    taken = dict(second) | dict(first)
    return tuple(sorted(taken.items()))


@dataclass
class Branches:
    """The dag's successor lists and the branch (fork-to-join path) of every node."""

    dag: TaskDag
    _in: list[list[int]] = field(default_factory=list)
    _out: list[list[int]] = field(default_factory=list)
    _memo: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.dag.size
        self._in, self._out = [[] for _ in range(n)], [[] for _ in range(n)]
        for u, v in sorted(self.dag.reduction):
            self._out[u].append(v)
            self._in[v].append(u)

    def of(self, w: int) -> tuple[int, ...]:
        """The maximal path through `w` whose inner reduction edges are the only edge out of
        their tail and the only edge into their head (in T-order)."""
        if w not in self._memo:
            path = [w]
            while len(self._in[path[0]]) == 1 and len(self._out[self._in[path[0]][0]]) == 1:
                path.insert(0, self._in[path[0]][0])
            while len(self._out[path[-1]]) == 1 and len(self._in[self._out[path[-1]][0]]) == 1:
                path.append(self._out[path[-1]][0])
            branch = tuple(path)
            for x in branch:
                self._memo[x] = branch
        return self._memo[w]

    def moves(self, link: Link, streams: Sequence[int], fresh: int) -> Iterator[Move]:
        """Moves that may shorten the chain at `link`, in a fixed order."""
        v = link.node
        if link.cause == UNITS:
            for w in sorted(link.behind, reverse=True):
                if w > v:
                    yield move((w,), streams[v])  # runs after v
                yield move((w,), fresh)
            return
        if link.behind and link.behind[0] not in self.dag.preds[v]:
            yield from self._unblock(v, link.behind[0], streams, fresh)
        producers = [p for p in sorted(self.dag.preds[v], reverse=True)
                     if streams[p] != streams[v]]
        for p in producers:
            yield move((v,), streams[p])
            yield move(self.of(v), streams[p])
        yield from self._grouped(v, producers, self.dag.preds[v], streams, fresh)
        if link.behind:  # fewer Sends after the task before v
            u = link.behind[0]
            yield from self._grouped(u, [c for c in self.dag.succs[u] if streams[c] != streams[u]],
                                     self.dag.succs[u], streams, fresh)

    def _unblock(self, v: int, blocker: int, streams: Sequence[int], fresh: int
                 ) -> Iterator[Move]:
        """Moves that take `v` and the unrelated task before it on its stream apart."""
        for w in (v, blocker):
            yield move((w,), fresh)
            yield move(self.of(w), fresh)
            for x in sorted({*self.dag.preds[w], *self.dag.succs[w]}):
                if streams[x] != streams[v]:
                    yield move(self.of(w), streams[x])

    def _grouped(self, anchor: int, others: Sequence[int], side: Sequence[int],
                 streams: Sequence[int], fresh: int) -> Iterator[Move]:
        """Neighbours of `anchor` on other streams (its producers, or its consumers: `side`):
        their branch onto the anchor's stream (swapped with the branch of the neighbour on
        that stream, or not), onto each other's streams, and the neighbour and its whole
        stream onto each other's streams."""
        targets = sorted({streams[w] for w in others})
        home = [h for h in side if streams[h] == streams[anchor]]
        for w in others:
            branch = self.of(w)
            yield move(branch, streams[anchor])
            for h in home:
                yield _both(move(branch, streams[anchor]), move(self.of(h), streams[w]))
            members = tuple(x for x, s in enumerate(streams) if s == streams[w])
            for target in targets:
                if target != streams[w]:
                    yield move(branch, target)
                    yield move((w,), target)
                    yield move(members, target)
            yield move(branch, fresh)
