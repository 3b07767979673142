"""The data and control edges of a whole model as integer arrays over T-order node indices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from streamalloc.ir.graph import Node

KIND_NAMES = ("data", "control", "subgraph entry", "subgraph exit")
DATA, CONTROL = 0, 1


@dataclass(frozen=True)
class Edges:
    """Parallel arrays: producer, consumer (T-order node indices) and kind of each edge."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    def where(self, keep: np.ndarray) -> Edges:
        """The edges `keep` selects (a boolean mask), in the same order."""
        return Edges(self.src[keep], self.dst[keep], self.kind[keep])


def graph_edges(order: Sequence[Node], index: Mapping[str, int]) -> Edges:
    """Every edge, in T-order of the consumer; a consumer's data edges in slot order come
    first, then its control edges in list order (the order GE reads a node's inputs)."""
    data = _edges([-1 if i is None else index[i.src] for n in order for i in n.inputs],
                  [len(n.inputs) for n in order], DATA)
    if not any(n.control_inputs for n in order):
        return data
    control = _edges([index[name] for n in order for name in n.control_inputs],
                     [len(n.control_inputs) for n in order], CONTROL)
    src, dst, kind = (np.concatenate(pair) for pair in (
        (data.src, control.src), (data.dst, control.dst), (data.kind, control.kind)))
    by_consumer = np.argsort(dst, kind="stable")
    return Edges(src[by_consumer], dst[by_consumer], kind[by_consumer])


def _edges(producers: list[int], counts: list[int], kind: int) -> Edges:
    """Edges from the producers of every node in turn (`counts` per node; -1 marks an
    unconnected input slot)."""
    src = np.array(producers, dtype=np.int64)
    dst = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    connected = src >= 0
    return Edges(src[connected], dst[connected], np.full(int(connected.sum()), kind, np.int8))
