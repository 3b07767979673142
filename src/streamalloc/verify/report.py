"""The verifier's result: violations (kind + message), counts, statistics, canonical text.

A violation kind starting with `limit-` is a device limit (exit 4, `LimitExceeded`); every
other kind means the plan is wrong (exit 5, `PlanVerifyError`). A wrong plan wins over a
limit when both occur. Only the first `cap` violations are kept; `counts` has them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import msgspec

from streamalloc.errors import LimitExceeded, PlanVerifyError

DEFAULT_CAP = 20
LIMIT_PREFIX = "limit-"


class Violation(msgspec.Struct, frozen=True):
    """One thing wrong with the plan. `kind` is a stable name such as `dependency`."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class VerifyStats(msgspec.Struct, frozen=True):
    """What was looked at: tasks, streams, sync ids in use, graph dependencies checked.

    `unchecked` counts dependencies that could not be decided because a deadlock blocks one
    of their tasks (the deadlock is reported instead).
    """

    tasks: int = 0
    streams: int = 0
    events: int = 0
    notifies: int = 0
    dependencies: int = 0
    unchecked: int = 0

    def __str__(self) -> str:
        text = (f"checked {plural(self.tasks, 'task')} on {plural(self.streams, 'stream')}, "
                f"{plural(self.events, 'event')}, {plural(self.notifies, 'notify', 'notifies')}, "
                f"{plural(self.dependencies, 'dependency', 'dependencies')}")
        return text + (f" ({self.unchecked} not decidable)" if self.unchecked else "")


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 event`, `2 events`.

    >>> plural(1, "notify", "notifies"), plural(0, "task")
    ('1 notify', '0 tasks')
    """
    return f"{n} {one if n == 1 else many or one + 's'}"


@dataclass(frozen=True)
class VerifyReport:
    """The verdict on one plan.

    >>> r = VerifyReport("g", "plan.json", (), MappingProxyType({}), VerifyStats(tasks=2))
    >>> r.ok, r.exit_code
    (True, 0)
    """

    graph: str
    source: str
    violations: tuple[Violation, ...]
    counts: Mapping[str, int]
    stats: VerifyStats

    @property
    def total(self) -> int:
        """All violations found, including those beyond the kept first ones."""
        return sum(self.counts.values())

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return self.total == 0

    @property
    def exit_code(self) -> int:
        """0 valid, 5 wrong plan, 4 only device limits exceeded (formats.md section 5)."""
        if self.ok:
            return 0
        wrong = any(not kind.startswith(LIMIT_PREFIX) for kind in self.counts)
        return PlanVerifyError.exit_code if wrong else LimitExceeded.exit_code

    def kinds(self) -> set[str]:
        """The kinds of violation found."""
        return set(self.counts)

    def text(self) -> str:
        """Canonical text: verdict line, one line per kept violation, statistics line."""
        where = f"{self.source}: plan for graph {self.graph!r}"
        if self.ok:
            return f"{where} is valid\n{self.stats}\n"
        shown = len(self.violations)
        more = f", the first {shown} shown" if shown < self.total else ""
        lines = [f"{where}: {plural(self.total, 'violation')}{more}"]
        lines += [f"  {v}" for v in self.violations]
        lines.append(f"{self.stats}; by kind: " + ", ".join(
            f"{kind} {n}" for kind, n in sorted(self.counts.items())))
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, object]:
        """`verify --json`: the verdict, the kept violations, counts by kind, statistics."""
        return {"graph": self.graph, "plan": self.source, "valid": self.ok,
                "exit_code": self.exit_code, "total": self.total,
                "violations": [{"kind": v.kind, "message": v.message} for v in self.violations],
                "counts": dict(self.counts),
                "stats": {f: getattr(self.stats, f) for f in VerifyStats.__struct_fields__}}

    def __reduce__(self) -> tuple[object, ...]:
        # pickled by `background.Background` (a verifier run in a child process); a mapping
        # proxy does not pickle, its dict does
        return _report, (self.graph, self.source, self.violations, dict(self.counts), self.stats)

    def raise_for_failure(self, preamble: str = "") -> None:
        """Raise PlanVerifyError (or LimitExceeded when only limits fail) with the text, after
        `preamble` (what the caller says of the plan)."""
        if self.exit_code == PlanVerifyError.exit_code:
            raise PlanVerifyError(preamble + self.text().rstrip())
        if self.exit_code == LimitExceeded.exit_code:
            raise LimitExceeded(preamble + self.text().rstrip())


def _report(graph: str, source: str, violations: tuple[Violation, ...], counts: dict[str, int],
            stats: VerifyStats) -> VerifyReport:
    return VerifyReport(graph, source, violations, MappingProxyType(counts), stats)


class ViolationLog:
    """Collects violations in the order found, keeping the first `cap` and counting all."""

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        self.cap = cap
        self.kept: list[Violation] = []
        self.counts: Counter[str] = Counter()

    def add(self, kind: str, message: str) -> None:
        """Record one violation."""
        self.counts[kind] += 1
        if len(self.kept) < self.cap:
            self.kept.append(Violation(kind, message))

    def report(self, graph: str, source: str, stats: VerifyStats) -> VerifyReport:
        """Freeze the log into a report."""
        counts = MappingProxyType(dict(sorted(self.counts.items())))
        return VerifyReport(graph, source, tuple(self.kept), counts, stats)
