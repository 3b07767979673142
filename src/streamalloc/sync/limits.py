"""Device limits (graph options `streamalloc.*`, defaults GE's / the runtime's values)."""

from __future__ import annotations

import msgspec

from streamalloc.errors import OptionError
from streamalloc.facts import LIMIT_DEFAULTS as DEFAULTS
from streamalloc.ir.graph import Graph


class Limits(msgspec.Struct, frozen=True):
    """The limits a plan must respect."""

    max_streams: int
    max_events: int
    max_notifies: int
    max_task_per_stream: int
    max_task_per_huge_stream: int

    @property
    def model_streams(self) -> int:
        """The streams (physical + attached) one model may use: `max_streams` is the runtime's
        stream pool, whose slot 0 holds the caller's stream, and a request of n streams
        fails unless n < its slots (GE's V2 pool: 2024 slots, at most 2023 per model)."""
        return self.max_streams - 1


def limits_of(graph: Graph) -> Limits:
    """Limits from the graph's options; a value that is not a positive integer is exit 3."""
    values = {}
    for key, default in DEFAULTS.items():
        text = graph.option(key, str(default))
        if not text.isdigit() or int(text) < 1:
            raise OptionError(f"{graph.source}: option {key} is {text!r}; expected a positive "
                              f"integer (default {default})")
        values[key.removeprefix("streamalloc.")] = int(text)
    return Limits(**values)


def without_device_limits(graph: Graph) -> Graph:
    """The graph with its stream, event and notify limits lifted (task depths kept: they
    decide the split): to measure a plan that does not fit the device, such as a ge-mode
    plan over a limit the optimal mode must meet."""
    lifted = str(2**31 - 1)
    return graph.with_options({f"streamalloc.{key}": lifted
                               for key in ("max_streams", "max_events", "max_notifies")})
