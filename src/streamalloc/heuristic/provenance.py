"""Where each node's stream came from, for the heuristic's Allocation: the notes of the
rules that touched it, in the order the rules ran, and the rule that decided its stream."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

from streamalloc.allocation import Touch
from streamalloc.heuristic.plan import GraphPlan, Note
from streamalloc.ir.partition import GraphPartition


class Provenance:
    """Each node's notes in the order the rules ran (`RuleSet.run_order`: label, graph, then
    model rules, whatever their priorities; a rule's own notes keep their order) and the
    deciding rule: the last (in run order) whose note chose the node's stream; label notes, a
    node taking its subgraph's stream and compaction renames choose none ("initial").

    Passes share one note among the nodes it explains, and a plan one tuple of notes among
    the nodes noted alike, so nodes of one subgraph mostly carry the same tuple: the deciding
    rule and the touches are kept per subgraph and per pair of note containers. The touches
    are made when first read (`explain` and messages read them, the plan does not): a
    100k-node model has thousands of subgraphs."""

    def __init__(self, order: Mapping[str, int]) -> None:
        self.order = order
        self.scoped: dict[tuple[str, int | None], tuple[Touch, ...]] = {}
        # keyed by the ids of note containers the plan (or `label_notes`) keeps alive meanwhile
        self.known: dict[tuple[str, int | None, int, int], tuple[Touches, str]] = {}

    def of(self, plan: GraphPlan, partition: GraphPartition | None, index: int | None,
           labels: Sequence[Note], own: Sequence[Note]) -> tuple[Touches, str]:
        """A node's touches (made when read) and its deciding rule, from its subgraph's
        `index`, its label notes and its own notes."""
        key = (plan.graph, index, id(labels), id(own))
        known = self.known.get(key)
        if known is None:
            notes: tuple[Note, ...]
            scope, notes = "", ()  # no subgraph (a node outside the partition)
            if partition is not None and index is not None and index < len(plan.sg_notes):
                scope, notes = f"subgraph {partition.subgraphs[index].id}", plan.sg_notes[index]
            known = self.known[key] = (Touches(self, ((plan.graph, index), scope, notes),
                                                tuple(labels), tuple(own)),
                                       self._deciding(chain(labels, notes, own)))
        return known

    def _deciding(self, notes: Iterable[Note]) -> str:
        """The rule of the last deciding note once the notes are in run order: the latest
        rule in run order, the last of its notes given (a stable sort keeps them so)."""
        rule, latest = "initial", None
        for note in notes:
            if note.decides:
                at = self.order.get(note.rule, -1)
                if latest is None or at >= latest:
                    rule, latest = note.rule, at
        return rule

    def scoped_touches(self, key: tuple[str, int | None], scope: str,
                       notes: tuple[Note, ...]) -> tuple[Touch, ...]:
        """The touches of a subgraph's notes in run order, shared by its nodes."""
        found = self.scoped.get(key)
        if found is None:
            found = self.scoped[key] = in_run_order([Touch(scope, n) for n in notes],
                                                     self.order) if scope else ()
        return found


_Subgraph = tuple[tuple[str, int | None], str, tuple[Note, ...]]  # key, scope, notes


class Touches:
    """The touches of the nodes noted alike, in run order, made on first read."""

    __slots__ = ("_labels", "_made", "_of", "_own", "_subgraph")

    def __init__(self, of: Provenance, subgraph: _Subgraph, labels: tuple[Note, ...],
                 own: tuple[Note, ...]) -> None:
        self._of, self._subgraph, self._labels, self._own = of, subgraph, labels, own
        self._made: tuple[Touch, ...] | None = None

    def value(self) -> tuple[Touch, ...]:
        """The touches: label notes, the subgraph's, the node's own, in run order."""
        if self._made is None:
            scoped = self._of.scoped_touches(*self._subgraph)
            if self._labels or self._own:
                touches = [Touch("labels", n) for n in self._labels]
                touches += scoped
                touches += [Touch("node", n) for n in self._own]
                self._made = in_run_order(touches, self._of.order)
            else:
                self._made = scoped
        return self._made


def in_run_order(touches: list[Touch], order: Mapping[str, int]) -> tuple[Touch, ...]:
    """`touches` sorted by their rules' place in `order` (stable: a rule's own keep theirs)."""
    return tuple(sorted(touches, key=lambda t: order.get(t.note.rule, -1)))
