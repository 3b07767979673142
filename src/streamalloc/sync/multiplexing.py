"""`_event_multiplexing` (spec 4.3): user-declared event sharing, only above 65500 events.

Entries `SendTo;<peer>;<k>` / `RecvFrom;<peer>;<k>` make every pair declaring the same k share
one id; then ids are renumbered continuously. GE walks the parsed entries in hash order, which
can change the order of ids in a list (not the count); we walk nodes in T-order and entries in
list order.
"""

from __future__ import annotations

import re

from streamalloc.errors import InputError
from streamalloc.sync.context import SyncModel
from streamalloc.sync.model import SyncMaps
from streamalloc.sync.numbering import renumber

EVENT_REUSE_THRESHOLD = 65500  # kEventReuseThreshold
ATTR = "_event_multiplexing"
_LEADING_INT = re.compile(r"^\d+")
_MAX_INT32 = 2**31 - 1

Entry = tuple[str, str, str, int]  # (node, keyword, peer, k)


def multiplex_events(model: SyncModel, maps: SyncMaps,
                     threshold: int = EVENT_REUSE_THRESHOLD) -> None:
    """Apply the declared sharing when the event count is over `threshold`."""
    if maps.counter <= threshold:
        return
    entries = _parse(model)
    if not entries:
        return
    for keyword in ("SendTo", "RecvFrom"):
        for node, kind, peer, k in entries:
            if kind == keyword:
                _share(model, maps, (node, peer) if kind == "SendTo" else (peer, node), k)
    maps.counter = renumber(maps)


def _parse(model: SyncModel) -> list[Entry]:
    entries: list[Entry] = []
    for node in model.attributed:
        value = node.attr(ATTR, ())
        for item in value if isinstance(value, tuple) else ():
            entries.append(_entry(model, node.name, str(item)))
    return entries


def _entry(model: SyncModel, name: str, item: str) -> Entry:
    fields = item.split(";")
    number = _LEADING_INT.match(fields[2]) if len(fields) == 3 else None
    if number is None or fields[0] not in ("SendTo", "RecvFrom") or \
            int(number.group()) > _MAX_INT32:
        raise InputError(f"{model.graph.source}: node {name!r} attribute {ATTR} entry {item!r}: "
                         "expected 'SendTo;<peer>;<id>' or 'RecvFrom;<peer>;<id>' with a "
                         "non-negative 32-bit id")
    if fields[1] not in model.ids:
        raise InputError(f"{model.graph.source}: node {name!r} attribute {ATTR} names unknown "
                         f"peer {fields[1]!r}")
    return name, fields[0], fields[1], int(number.group())


def _share(model: SyncModel, maps: SyncMaps, ends: tuple[str, str], k: int) -> None:
    sender, receiver = ends
    sends = maps.send.get(sender, [])
    common = [x for x in maps.recv.get(receiver, []) if x in sends]
    if not common:
        return
    old, new = common[0], k + maps.counter  # GE warns when several ids are common
    maps.send[sender] = [*(x for x in sends if x != old), new]
    maps.recv[receiver] = [*(x for x in maps.recv[receiver] if x != old), new]
