"""Orders that run each stream's large tasks back to back, so that the physical split wastes
less.

GE's split fills a logical stream's physical streams in its task order and opens the next one,
with an event, where a task does not fit. A stream whose AllReduces (245 task units each, a
physical stream holds 997) alternate with the small tasks of the backward pass fills its
physical streams to 756-998 units: three or four AllReduces and the small tasks between them.
Run back to back, four AllReduces fill one. `grouped` moves each large task of a stream (a
tenth of a physical stream's units or more) later, to just before the next large task of its
stream, as far as its consumers allow; the plan's events then decide whether the new order is
kept (the ResNet-50 training step under the parallel options: 45 -> 43 events at the same
makespan).

>>> from types import MappingProxyType
>>> from streamalloc.optimal.order import Orders
>>> preds = MappingProxyType({"a": (), "s": (), "b": (), "y": ("a",)})
>>> orders = Orders(None, preds, ("a", "s", "b", "y"))  # type: ignore[arg-type]
>>> grouped(orders, orders.start, {"a": 0, "b": 0})  # a waits for b, past the small s
('s', 'a', 'b', 'y')
>>> grouped(orders, ("a", "s", "y", "b"), {"a": 0, "b": 0})  # not past its consumer y
('s', 'a', 'y', 'b')
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from streamalloc.optimal.order import Order, Orders

LARGE_SHARE = 0.1  # of a physical stream's task units: the tasks `grouped` runs back to back


def grouped(orders: Orders, order: Order, large: Mapping[str, int]) -> Order:
    """`order` with each of the `large` tasks (name -> its stream) moved later, to just before
    the next large task of its stream and before its first consumer, the last ones first so
    that runs form."""
    consumers: dict[str, list[str]] = {}
    for name, producers in orders.preds.items():
        for p in producers:
            consumers.setdefault(p, []).append(name)
    sequence = list(order)
    by_stream: dict[int, list[str]] = {}
    for name in sequence:
        if name in large:
            by_stream.setdefault(large[name], []).append(name)
    for members in by_stream.values():
        for task, following in reversed(list(itertools.pairwise(members))):
            at = sequence.index(task)  # (a scan, where a position map costs a pass per move)
            to = min([sequence.index(following, at),
                      *(sequence.index(c, at) for c in consumers.get(task, ()))])
            if to > at + 1:
                sequence.insert(to, task)
                del sequence[at]
    return tuple(sequence)
