"""The options GE's variable manager reads not from its arguments but from the thread's
context (graph options first, then session, then global): evaluate mode (spec 11), the 1 GiB
huge-page policy (spec 7)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from streamalloc.memory.codes import (
    EVALUATE_MODE,
    HUGE_PAGE_FIRST,
    HUGE_PAGE_ONLY,
    HUGE_PAGE_OPTION,
)


@dataclass
class GeContext:
    """Global, session and graph options GE's memory code consults."""

    global_options: dict[str, str] = field(default_factory=dict)
    session_options: dict[str, str] = field(default_factory=dict)
    graph_options: dict[str, str] = field(default_factory=dict)

    def option(self, key: str, default: str = "") -> str:
        """The option as GE's context answers: graph, then session, then global options."""
        for options in (self.graph_options, self.session_options, self.global_options):
            if key in options:
                return options[key]
        return default

    def set_graph_options(self, options: Mapping[str, str]) -> None:
        """Replace the graph options (GE's SetGraphOption)."""
        self.graph_options = dict(options)

    def evaluate_mode(self) -> bool:
        """Evaluate mode: the "for check" limits are unbounded (spec 11)."""
        return self.option(EVALUATE_MODE) == "1"

    def huge_page_policy(self) -> str:
        """"1" (1 GiB only), "2" (1 GiB first) or "" (normal pages), from the huge-page option."""
        value = self.option(HUGE_PAGE_OPTION)
        return value if value in (HUGE_PAGE_ONLY, HUGE_PAGE_FIRST) else ""
