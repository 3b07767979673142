"""The data and control edges of a whole model as integer arrays over T-order node indices."""

from __future__ import annotations

import msgspec
import numpy as np

from streamalloc.ir.graph import Graph

KIND_NAMES = ("data", "control", "subgraph entry", "subgraph exit")
DATA, CONTROL = 0, 1


class Edges(msgspec.Struct, frozen=True):
    """Parallel arrays: producer, consumer (T-order node indices) and kind of each edge."""

    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray

    def where(self, keep: np.ndarray) -> Edges:
        """The edges `keep` selects (a boolean mask), in the same order."""
        return Edges(self.src[keep], self.dst[keep], self.kind[keep])


def graph_edges(graph: Graph) -> Edges:
    """Every edge, in T-order of the consumer; a consumer's data edges in slot order come
    first, then its control edges in list order (the order GE reads a node's inputs). Nodes
    by T-order index."""
    producers = graph.t_producers()
    src, dst = producers.data_edges()
    data = Edges(src, dst, np.full(len(src), DATA, np.int8))
    if not len(producers.control):
        return data
    src, dst = producers.control_edges()
    control = Edges(src, dst, np.full(len(src), CONTROL, np.int8))
    src, dst, kind = (np.concatenate(pair) for pair in (
        (data.src, control.src), (data.dst, control.dst), (data.kind, control.kind)))
    by_consumer = np.argsort(dst, kind="stable")
    return Edges(src[by_consumer], dst[by_consumer], kind[by_consumer])
