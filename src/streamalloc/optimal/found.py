"""What the searches of the optimal mode pass on: streams with the order they run in
(`Found`), and the search's result (`Search`)."""

from __future__ import annotations

from dataclasses import dataclass

from streamalloc.optimal.order import Order

Chains = tuple[tuple[int, ...], ...]  # the streamed nodes (dag indices) of each stream
Found = tuple[Chains, Order | None]  # streams; execution order (None: the graph's)


@dataclass(frozen=True)
class Search:
    """The streams found, CP-SAT's report on its model, and which phases made them."""

    chains: Chains
    status: str
    objective: float | None
    bound: float | None
    deterministic_time: float
    phase: str
    order: Order | None = None  # the execution order, when it is not the graph's
