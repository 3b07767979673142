"""Stream numbers for the makespan objective: the stream that leads to the longest path first.

The emulated device starts its stream processes in stream-id order, so among tasks of several
streams that arrive at an engine together (the first tasks, at time 0) the lowest id is
admitted first, and a wide task behind a narrow one of a lower id waits for it (LLaMA's
32-core embedding Gather behind the 1-core Cast of the attention mask: 2 us on the critical
path). Numbering the streams by the longest path to the end from their first task (the list
schedule's priority) admits the critical one first.

The search runs with the numbering by first node in T-order; its streams are renumbered
critical first when they run faster so (`makespan_search.numbered`). The events objective keeps the
numbering by first node (its plans do not change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from streamalloc.optimal.found import Chains
from streamalloc.solver.dag import TaskDag

Numbering = Callable[[Chains], Chains]  # the chains in the order of their stream ids


def by_first_node(chains: Chains) -> Chains:
    """The chains as they come: ordered by first node in T-order."""
    return chains


def critical_first(dag: TaskDag, durations: Sequence[float]) -> Numbering:
    """Chains ordered by the longest path from their first node, longest first (ties:
    T-order)."""
    rank = dag.bottom_levels(durations)

    def ordered(chains: Chains) -> Chains:
        return tuple(sorted(chains, key=lambda c: (-rank[c[0]], c[0])))

    return ordered
