"""User rules that cannot both hold, seen from their constraint forms alone, before allocating.

The user policies (`kinds.USER_KINDS`) state SameStream, DifferentStreams, DedicatedStream and
PinnedStream constraints (`constraints.FORMS`). Some pairs contradict each other on the nodes
they share whatever the allocator does:

- SameStream or DedicatedStream over a node of each side of a DifferentStreams;
- two PinnedStream with different streams on one node;
- PinnedStream putting a node of each side of a DifferentStreams on one stream;
- DedicatedStream against a SameStream, PinnedStream or another DedicatedStream that puts one of
  its nodes with a node outside it.

The check is pairwise over the constraints (rule A against rule B, A != B) and indexes them by
node, so it stays linear in the constrained nodes times the constraints per node. Constraints
bind only nodes that end with a stream; a node the allocator leaves without one would be free,
but a rule file that asks both of it is contradictory all the same.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import msgspec

from streamalloc.errors import RuleConflictError
from streamalloc.ir.graph import Graph
from streamalloc.rules.constraint_inputs import Inputs
from streamalloc.rules.constraints import (
    FORMS,
    Constraint,
    DedicatedStream,
    DifferentStreams,
    PinnedStream,
    SameStream,
)
from streamalloc.rules.kinds import USER_KINDS
from streamalloc.rules.model import RuleSet


class Conflict(msgspec.Struct, frozen=True):
    """Rules `first` and `second` cannot both hold: `why`, on the nodes named there."""

    first: str
    second: str
    why: str


def user_constraints(rules: RuleSet, graph: Graph) -> list[Constraint]:
    """The constraints of the enabled user-policy rules on `graph`, in rule order."""
    enabled = [r for r in rules.rules if r.enabled(graph.options)]
    if not any(r.kind in USER_KINDS for r in enabled):
        return []
    inputs = Inputs.of(rules, graph)
    found: list[Constraint] = []
    for rule in inputs.enabled:
        build = FORMS[rule.kind]
        if rule.kind in USER_KINDS and build is not None:
            found += build(rule, inputs)
    return found


def static_conflicts(constraints: list[Constraint]) -> list[Conflict]:
    """The pairs of rules whose constraints contradict each other, first found first."""
    together: dict[str, list[SameStream | DedicatedStream]] = defaultdict(list)
    pins: dict[str, list[PinnedStream]] = defaultdict(list)
    dedicated: dict[str, list[DedicatedStream]] = defaultdict(list)
    for c in constraints:
        if isinstance(c, SameStream | DedicatedStream):
            for node in c.nodes:
                together[node].append(c)
        if isinstance(c, DedicatedStream):
            for node in c.nodes:
                dedicated[node].append(c)
        if isinstance(c, PinnedStream):
            for node in c.nodes:
                pins[node].append(c)
    found: list[Conflict] = []
    seen: set[tuple[str, str]] = set()
    for conflict in _all(constraints, together, pins, dedicated):
        key = (conflict.first, conflict.second)
        if conflict.first != conflict.second and key not in seen \
                and key[::-1] not in seen:
            seen.add(key)
            found.append(conflict)
    return found


def _all(constraints: list[Constraint],
         together: dict[str, list[SameStream | DedicatedStream]],
         pins: dict[str, list[PinnedStream]],
         dedicated: dict[str, list[DedicatedStream]]) -> Iterator[Conflict]:
    for c in constraints:
        if isinstance(c, DifferentStreams):
            yield from _apart_but_together(c, together, pins)
        elif isinstance(c, PinnedStream):
            yield from _pinned_twice(c, pins)
        if isinstance(c, SameStream | PinnedStream | DedicatedStream):
            yield from _outside_dedicated(c, dedicated)


def _apart_but_together(c: DifferentStreams,
                        together: dict[str, list[SameStream | DedicatedStream]],
                        pins: dict[str, list[PinnedStream]]) -> Iterator[Conflict]:
    """A SameStream/DedicatedStream or a pin joining a node of each side of `c`."""
    second = set(c.second)
    checked: set[int] = set()
    for node in c.first:
        for group in together.get(node, ()):
            if id(group) in checked:
                continue
            checked.add(id(group))
            other = next((n for n in group.nodes if n in second), None)
            if other is not None:
                yield Conflict(c.rule, group.rule,
                               f"{node} and {other} must not share a stream, yet must share one")
    pinned: dict[int, str] = {}
    for node in c.second:
        for pin in pins.get(node, ()):
            pinned.setdefault(pin.stream, node)
    for node in c.first:
        for pin in pins.get(node, ()):
            if pin.stream in pinned:
                yield Conflict(c.rule, pin.rule,
                               f"{node} and {pinned[pin.stream]} must not share a stream, yet "
                               f"both are pinned to stream {pin.stream}")


def _pinned_twice(c: PinnedStream, pins: dict[str, list[PinnedStream]]) -> Iterator[Conflict]:
    for node in c.nodes:
        for other in pins.get(node, ()):
            if other.stream != c.stream:
                yield Conflict(c.rule, other.rule, f"{node} is pinned to stream {c.stream} and "
                                                   f"to stream {other.stream}")


def _outside_dedicated(c: SameStream | PinnedStream | DedicatedStream,
                       dedicated: dict[str, list[DedicatedStream]]) -> Iterator[Conflict]:
    """`c` puts a node of a dedicated stream together with a node outside it."""
    mine = set(c.nodes)
    checked: set[int] = {id(c)}
    for node in c.nodes:
        for own in dedicated.get(node, ()):
            if id(own) in checked:
                continue
            checked.add(id(own))
            members = set(own.nodes)
            outside = next((n for n in c.nodes if n not in members), None)
            if outside is None and isinstance(c, DedicatedStream):
                outside = next((n for n in own.nodes if n not in mine), None)
            if outside is None:
                continue
            if isinstance(c, DedicatedStream):
                why = (f"{node} must have a stream shared only with {_few(own.nodes)} and one "
                       f"shared only with {_few(c.nodes)}")
            else:
                what = f"pinned to stream {c.stream}" if isinstance(c, PinnedStream) else \
                    "on one stream"
                mates = tuple(n for n in own.nodes if n != node)
                why = (f"{node} must have a stream " + (f"shared only with {_few(mates)}"
                       if mates else "of its own")
                       + f", yet {node} and {outside} must be {what}")
            yield Conflict(own.rule, c.rule, why)
            return


def _few(nodes: tuple[str, ...]) -> str:
    return ", ".join(nodes[:3]) + (" ..." if len(nodes) > 3 else "")


def check_static(rules: RuleSet, graph: Graph) -> None:
    """RuleConflictError (exit 3) naming both rules, with their file:line, of the first pair
    of user rules that cannot both hold on `graph`."""
    conflicts = static_conflicts(user_constraints(rules, graph))
    if not conflicts:
        return
    first = conflicts[0]
    order = rules.run_order()
    a, b = sorted((rules.rule(first.first), rules.rule(first.second)),
                  key=lambda r: order[r.name])
    more = f" ({len(conflicts) - 1} more pair(s) of rules in conflict)" if len(conflicts) > 1 \
        else ""
    raise RuleConflictError(
        f"rules {a.name!r} ({a.kind}, {a.origin}) and {b.name!r} ({b.kind}, {b.origin}) cannot "
        f"both hold: {first.why}{more}; change the match of one of them or disable one")
