"""Adjacency tables derived from a node list: each node's producers as flat integer arrays
(`Producers`) and each producer's data consumers in link order (`linked_consumers`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

if TYPE_CHECKING:  # graph.py imports this module: Node is for annotations only
    from streamalloc.ir.graph import Node


class Consumer(NamedTuple):
    """One data edge seen from its producer: `node` reads output `port` on input `slot`."""

    port: int
    node: str
    slot: int


class Producers(NamedTuple):
    """The producers of a list of nodes as flat integer arrays: `data` holds each node's data
    input slots in turn (the producer's index, -1 for an unconnected slot), `data_counts` each
    node's number of slots; `control` and `control_counts` the same for control inputs."""

    data: np.ndarray
    data_counts: np.ndarray
    control: np.ndarray
    control_counts: np.ndarray

    def data_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(producer, consumer) of every connected data input, consumers in turn, slot order."""
        consumer = np.repeat(np.arange(len(self.data_counts), dtype=np.int64), self.data_counts)
        connected = self.data >= 0
        return self.data[connected], consumer[connected]

    def control_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(producer, consumer) of every control input, consumers in turn, list order."""
        return self.control, np.repeat(np.arange(len(self.control_counts), dtype=np.int64),
                                       self.control_counts)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(producer, consumer) of every connected data input, then of every control input."""
        (data, data_dst), (control, control_dst) = self.data_edges(), self.control_edges()
        return np.concatenate([data, control]), np.concatenate([data_dst, control_dst])


def producers_by_position(nodes: Sequence[Node], index: Mapping[str, int]) -> Producers:
    """`Producers` of `nodes`, each producer by its index in `index`."""
    get = index.get
    return make_producers(nodes, [-1 if ref is None else get(ref.src, -1)
                                  for node in nodes for ref in node.inputs],
                          [get(src, -1) for node in nodes for src in node.control_inputs])


def make_producers(nodes: Sequence[Node], data: list[int], control: list[int]) -> Producers:
    """`Producers` of `nodes` from the producer index of every data slot and control input,
    node by node."""
    return Producers(np.array(data, np.int64), _counts(nodes, _INPUTS),
                     np.array(control, np.int64), _counts(nodes, _CONTROLS))


def _counts(nodes: Sequence[Node], field: Callable[[Node], tuple[object, ...]]) -> np.ndarray:
    return np.fromiter(map(len, map(field, nodes)), np.int64, len(nodes))


_INPUTS, _CONTROLS = attrgetter("inputs"), attrgetter("control_inputs")
_new_tuple = tuple.__new__  # a named tuple without its Python-level __new__: once per edge
_PORT = itemgetter(0)  # Consumer.port


def linked_consumers(nodes: Iterable[Node]) -> dict[str, tuple[Consumer, ...]]:
    """Each producer's consumers among `nodes` (in link order: the order of the node list),
    by output port, then link order."""
    # a producer's consumers: a tuple while it has one (most producers), a list from the second
    consumers: dict[str, tuple[Consumer, ...] | list[Consumer]] = {}
    for node in nodes:
        name = node.name
        for slot, ref in enumerate(node.inputs):
            if ref is not None:
                src = ref.src
                consumer = _new_tuple(Consumer, (ref.port, name, slot))
                linked = consumers.get(src)
                if linked is None:
                    consumers[src] = (consumer,)
                elif isinstance(linked, tuple):
                    consumers[src] = [*linked, consumer]
                else:
                    linked.append(consumer)
    for src, linked in consumers.items():  # a single consumer is final as it is
        if isinstance(linked, list):
            consumers[src] = tuple(sorted(linked, key=_PORT))  # stable: link order per port
    return cast("dict[str, tuple[Consumer, ...]]", consumers)

