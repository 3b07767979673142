"""Minimal elimination (`--sync minimal`), in place of GE's optimisations of step A7.

Keeps exactly the dependency pairs that are edges of the transitive reduction of
H = program order of each logical stream (T-order) + activation (activator before the first node
of each stream it starts) + the pairs of insertion (spec 2.1-2.3). Among event sets that add no
ordering H does not imply, that is the unique minimum: a reduction edge u->v has no other path
in H, so every such set must hold it. Hence GE's Phase A pairs contain these whenever GE's plan
is valid under the same orderings, and minimal never needs more of them. (The final counts also
hold the split, loop and attached events, which both strategies get from the shared later steps.)

Reachability is per node a vector over streams: reach[v][s] = the highest position on stream s
of a node that reaches v (chain decomposition; nodes in a topological order of H, each stream in
T-order: an activator G-order puts after the stream it starts comes first). A pair u->v is
redundant iff
another direct predecessor w of v (program predecessor, activator, other pair source) has
reach[w][stream(u)] >= pos(u). Vectors are kept per stream (the running row) and copied only
for nodes a later node reads, until their last reader: O(N + E*S) time, O(S^2 + live*S) memory.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from streamalloc.facts import INVALID
from streamalloc.sync.activation import Activation, LabelActivation
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps
from streamalloc.sync.switch import SwitchState, handle_switches

Pair = tuple[int, str, str]  # (sync id, sender, receiver)


def minimize(model: SyncModel, streams: Mapping[str, int], labels: LabelActivation,
             activation: Activation, maps: SyncMaps) -> None:
    """Remove every inserted pair that program order, activation or other pairs imply."""
    pairs = _pairs(maps)
    edges = activation_edges(model, streams, labels, activation)
    sweep = _Sweep(model, streams, pairs, edges)
    order = sweep.topological()
    if order is None:  # activation waits for the stream it starts: GE's plan deadlocks too
        sweep = _Sweep(model, streams, pairs,
                       activation_edges(model, streams, labels, activation, later=False))
        order = [n for n in model.order if n in sweep.pos]
    keep = sweep.run(order)
    for x, u, v in pairs:
        if x not in keep:
            maps.remove(x, u, v)


def _pairs(maps: SyncMaps) -> list[Pair]:
    """Inserted pairs in insertion order (ids ascend with insertion, spec 2.4)."""
    senders, receivers = maps.senders(), maps.receivers()
    return [(x, senders[x], receivers[x]) for x in sorted(senders)]


@dataclass
class _Sweep:
    """One pass over T-order keeping running reach rows per stream."""

    model: SyncModel
    streams: Mapping[str, int]
    pairs: list[Pair]
    activators: dict[str, list[str]]
    keep: set[int] = field(default_factory=set)
    snaps: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        used = sorted({s for s in self.streams.values() if s != INVALID})
        self.col = {s: i for i, s in enumerate(used)}
        self.rows = np.full((len(used), len(used)), -1, dtype=np.int32)
        self.incoming: dict[str, list[tuple[int, str]]] = defaultdict(list)
        ids = self.model.ids
        for x, u, v in self.pairs:
            # A loop back edge (NextIteration -> Merge) points backwards in T-order: it orders
            # the next iteration, which the loop's restart already does (the verifier and the
            # emulator exempt it), and no one-pass order can carry it; it gets no event.
            if ids[u] < ids[v]:
                self.incoming[v].append((x, u))
        self.readers = Counter(u for ins in self.incoming.values() for _, u in ins)
        self.readers.update(a for acts in self.activators.values() for a in acts)
        self.pos = self._linked_positions()

    def _linked_positions(self) -> dict[str, int]:
        """Position on its stream (T-order) of each node a pair or an activation links: only
        they read or feed a reach row. Any other node just moves its stream's running row to
        its own position, which the next linked node on that stream overwrites before a read
        (a pair's source is on another stream, so `_choose` never reads the own column)."""
        linked = self.incoming.keys() | self.activators.keys() | self.readers.keys()
        count: dict[int, int] = defaultdict(int)
        pos: dict[str, int] = {}
        for name in self.model.order:
            s = self.streams[name]
            if s != INVALID:
                if name in linked:
                    pos[name] = count[s]
                count[s] += 1
        return pos

    def topological(self) -> list[str] | None:
        """The linked nodes in an order H allows (each stream in T-order), None when H has a
        cycle. The other nodes have no predecessor in H: they never hold a chain back. Where
        every activator precedes the node it starts in T-order, T-order is one (pairs and
        program order always point forward in it); the reach rows, and so the pairs kept, are
        the same in any order H allows."""
        ids = self.model.ids
        if all(ids[a] < ids[v] for v, acts in self.activators.items() for a in acts):
            return [name for name in self.model.order if name in self.pos]
        chains: dict[int, deque[str]] = defaultdict(deque)
        for name in self.model.order:
            if name in self.pos:
                chains[self.streams[name]].append(name)
        total, order, done = sum(map(len, chains.values())), [], set()
        parked: dict[str, list[int]] = defaultdict(list)
        ready = deque(chains)
        while ready:
            chain = chains[ready.popleft()]
            while chain:
                v = chain[0]
                missing = next((p for p in self._preds(v) if p not in done), None)
                if missing is not None:
                    parked[missing].append(self.streams[v])
                    break
                done.add(chain.popleft())
                order.append(v)
                ready.extend(parked.pop(v, ()))
        return order if len(order) == total else None

    def _preds(self, v: str) -> list[str]:
        return [*(u for _, u in self.incoming.get(v, ())), *self.activators.get(v, ())]

    def run(self, order: list[str]) -> set[int]:
        """The ids of the pairs to keep, visiting the linked nodes in `order` (each stream in
        T-order)."""
        for name in order:
            self._visit(name, self.col[self.streams[name]])
        return self.keep

    def _visit(self, v: str, k: int) -> None:
        row = self.rows[k]  # reach of v's program predecessor, updated in place to v's
        incoming, acts = self.incoming.get(v, []), self.activators.get(v, [])
        if incoming:
            self._choose(row, incoming, acts)
        for w in [*(u for _, u in incoming), *acts]:
            np.maximum(row, self.snaps[w], out=row)
            self._release(w)
        row[k] = self.pos[v]
        if self.readers[v]:
            self.snaps[v] = row.copy()

    def _choose(self, row: np.ndarray, incoming: list[tuple[int, str]], acts: list[str]) -> None:
        """Keep the pairs into v that no other direct predecessor of v implies."""
        if len(incoming) == 1 and not acts:  # most nodes: only the program predecessor can
            x, u = incoming[0]  # imply the pair, read without building arrays
            if row[self.col[self.streams[u]]] < self.pos[u]:
                self.keep.add(x)
            return
        latest: dict[int, tuple[int, str]] = {}
        for x, u in incoming:  # per source stream only the latest source can matter
            c = self.col[self.streams[u]]
            if c not in latest or self.pos[u] > self.pos[latest[c][1]]:
                latest[c] = (x, u)
        cols = np.array(list(latest), dtype=np.intp)
        sources = list(latest.values())
        own = np.array([self.pos[u] for _, u in sources], dtype=np.int32)
        best = row[cols].copy()  # the program predecessor
        for a in acts:
            np.maximum(best, self.snaps[a][cols], out=best)
        if len(sources) > 1:  # the other sources; a source never implies its own pair
            others = np.stack([self.snaps[u][cols] for _, u in sources])
            np.fill_diagonal(others, -1)
            np.maximum(best, others.max(axis=0), out=best)
        self.keep.update(x for (x, _), b, p in zip(sources, best, own, strict=True) if b < p)

    def _release(self, w: str) -> None:
        self.readers[w] -= 1
        if not self.readers[w]:
            del self.snaps[w]


def activation_edges(model: SyncModel, streams: Mapping[str, int], labels: LabelActivation,
                     activation: Activation, *, later: bool = True) -> dict[str, list[str]]:
    """First node of an activated stream -> the activator it starts after, as the verifier
    credits it: never the loop activator (it restarts streams; the first iteration starts with
    the model); the activator no later in T-order than the stream's first node, or, when there
    is none, the later one (`later`): a stream in an activation list runs only once activated.
    A stream with two such activators starts at the first of them to run, which orders only
    what precedes both: no edge then (its pairs stay)."""
    first: dict[int, str] = {}
    for name in model.order:
        if streams[name] != INVALID:
            first.setdefault(streams[name], name)
    found: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    final = _final_lists(model, streams, labels, activation)
    for a, listed in sorted(final.items(), key=lambda i: model.ids[i[0]]):
        own = streams[a]
        if own == INVALID or model.node(a).attr("is_loop_active") is True:
            continue
        for s in dict.fromkeys(listed):
            f = first.get(s)
            if f is not None and s != own:
                found[f][0 if model.ids[a] < model.ids[f] else 1].append(a)
    chosen = {f: earlier or (late if later else []) for f, (earlier, late) in found.items()}
    return {f: activators for f, activators in chosen.items() if len(activators) == 1}


def _final_lists(model: SyncModel, streams: Mapping[str, int], labels: LabelActivation,
                 activation: Activation) -> dict[str, list[int]]:
    """Activation lists of graph nodes as the plan will carry them after switch handling (6.3),
    run here on a scratch copy: a switch whose label covers several streams activates them
    through a new StreamActive (counted as the switch's own activation), and its list is then
    overwritten, so its single-stream labels are no longer activated by it (GE quirk). Using the
    lists of 6.1/6.2 as they stand would credit orderings the final plan does not have."""
    scratch = activation.copy()
    scratch.generated = {}
    base = 1 + max([*streams.values(), *(a for v in model.attached.values() for a in v), 0])
    made = {t.stream: t.name for t in handle_switches(model, labels.labeled_streams, scratch,
                                                      SwitchState(), base)}

    def through_made(s: int) -> list[int]:
        """A made StreamActive's stream stands for the streams it activates."""
        return scratch.active_stream_list[made[s]] if s in made else [s]

    return {name: [t for s in listed for t in through_made(s)]
            for name, listed in scratch.active_stream_list.items() if name in model.ids}
