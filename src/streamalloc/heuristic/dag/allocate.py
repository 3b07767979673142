"""The DAG allocation of one graph, as id offsets from the graph's base id (spec 6 steps 3-7).

`dag_streams` picks the strategy (WeightedLoadBalance as soon as one node matched profiling,
step 3), builds the residual graph, covers it with routes, merges the routes into at most
`limit` physical streams, renumbers them densely, and gives every serial label its own id after
the physical streams (first appearance by topo id). The pass adds the base id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import msgspec

from streamalloc.heuristic.dag import load_balance, main_stream
from streamalloc.heuristic.dag.model import MiniDag
from streamalloc.heuristic.dag.path_cover import min_path_cover
from streamalloc.heuristic.dag.residual import Residual, residual_graph
from streamalloc.heuristic.dag.units import DEFAULT_LIMIT, Layout, Score, Unit, best, make_units
from streamalloc.heuristic.dag.units import processing_order as ordered

WEIGHTED = "WeightedLoadBalance"
MAIN_STREAM = "MainStream"


class Decision(msgspec.Struct, frozen=True):
    """Where one unit went and why: its candidates' scores (empty when forced)."""

    unit: int
    stream: int
    scores: tuple[Score, ...] = ()

    def reason(self) -> str:
        """A short text for `streamalloc explain`."""
        if not self.scores:
            return "forced onto the main DAG stream (single-node level)"
        return "scores " + ", ".join(f"{s.stream}{' (new)' if s.opens else ''}: {s.total:.6g}"
                                     for s in self.scores)


class DagStreams(msgspec.Struct, frozen=True):
    """One graph's DAG result: per topo id its offset from the base id, and why."""

    strategy: str
    offsets: Mapping[int, int]
    reasons: Mapping[int, str]
    required: int
    decisions: tuple[Decision, ...]
    units: tuple[Unit, ...]


def dag_streams(dag: MiniDag, strategy: str, limit: int | None = None) -> DagStreams:
    """Offsets of every residual and serial node; `required` ids are used after the base."""
    chosen = WEIGHTED if dag.profiled else strategy
    residual = residual_graph(dag)
    units = make_units(min_path_cover(residual), residual, node_weights(dag, residual, chosen))
    decisions = merge(chosen, units, residual, DEFAULT_LIMIT if limit is None else limit)
    dense = _dense([d.stream for d in decisions])
    offsets: dict[int, int] = {}
    reasons: dict[int, str] = {}
    for decision in decisions:
        phys = dense[decision.stream]
        for node in units[decision.unit].nodes:
            offsets[residual.members[node]] = phys
            reasons[residual.members[node]] = (f"{chosen} route {decision.unit} on DAG stream "
                                               f"{phys}; {decision.reason()}")
    required = len(dense) + _serial(dag, len(dense), offsets, reasons)
    return DagStreams(chosen, MappingProxyType(offsets), MappingProxyType(reasons), required,
                      tuple(decisions), tuple(units))


def node_weights(dag: MiniDag, residual: Residual, strategy: str) -> list[float]:
    """Per residual node its load: 1, or for WeightedLoadBalance its time over the mean time.

    Dividing by the mean profiled time keeps the loads on the scale of node counts, so the
    score's edge and new-stream terms keep their weight; nodes without a profiled time (-1)
    count as one average node.
    """
    times = [dag.nodes[t].time for t in residual.members]
    known = [t for t in times if t > 0]
    if strategy != WEIGHTED or not known:
        return [1.0] * len(times)
    mean = sum(known) / len(known)
    return [t / mean if t > 0 else 1.0 for t in times]


def merge(strategy: str, units: Sequence[Unit], residual: Residual,
          limit: int) -> list[Decision]:
    """Place the units one by one in processing order; decisions in that order."""
    layout = Layout()
    neighbours = residual.neighbours()
    merger = _Merger(strategy, limit, main_stream.single_levels(residual.levels))
    decisions = []
    for unit in ordered(units):
        decision = merger.decide(unit, layout, layout.edge_weights(unit, neighbours))
        layout.place(unit, decision.stream)
        decisions.append(decision)
    return decisions


class _Merger(msgspec.Struct, frozen=True):
    """One strategy's choice of stream for a unit."""

    strategy: str
    limit: int
    single: frozenset[int]

    def decide(self, unit: Unit, layout: Layout, weights: Counter[int]) -> Decision:
        """LoadBalance and WeightedLoadBalance prefer the smaller stream on a full tie,
        MainStream the earlier candidate."""
        if self.strategy != MAIN_STREAM:
            found = load_balance.scores(unit, layout, weights, self.limit)
            return Decision(unit.index, best(found, by_id=True).stream, found)
        if main_stream.forced(unit, self.single):
            return Decision(unit.index, main_stream.MAIN)
        found = main_stream.scores(unit, layout, weights, self.limit, self.single)
        return Decision(unit.index, best(found, by_id=False).stream, found)


def _dense(streams: Sequence[int]) -> dict[int, int]:
    """Used physical streams renumbered 0..k-1 in ascending order (spec 6 step 6)."""
    return {old: new for new, old in enumerate(sorted(set(streams)))}


def _serial(dag: MiniDag, first: int, offsets: dict[int, int], reasons: dict[int, str]) -> int:
    """Serial labels get the ids after the physical streams; returns how many labels."""
    label_ids: dict[str, int] = {}
    for node in dag.nodes:
        if node.serial:
            offset = label_ids.setdefault(node.serial, first + len(label_ids))
            offsets[node.topo_id] = offset
            reasons[node.topo_id] = f"serial node of stream label {node.serial!r}"
    return len(label_ids)
