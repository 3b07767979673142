"""Why a ge-sync plan fails the verifier where several activators start one stream.

GE leaves out an event into a label's stream when any one of the stream's activators follows
the producer (its insertion rule 5, and its elimination by activation), but the stream starts
at whichever activator runs first, so the consumer may run before the producer. ge mode
refuses that plan like any other the verifier rejects; this names the cause and the way out
instead of leaving the user with the bare dependency violations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamalloc.errors import GeSyncRace
from streamalloc.verify.report import VerifyReport


def shared_starts(activations: Mapping[str, Sequence[int]]) -> dict[int, list[str]]:
    """Streams that two or more activators start (`activations`: the plan's
    `stream_activations`): stream -> its activators."""
    starters: dict[int, list[str]] = {}
    for activator, streams in activations.items():
        for stream in streams:
            starters.setdefault(stream, []).append(activator)
    return {s: names for s, names in sorted(starters.items()) if len(names) > 1}


def race_cause(report: VerifyReport, activations: Mapping[str, Sequence[int]],
               sync: str | None) -> str | None:
    """The line naming GE's race where a ge-sync plan left only dependencies unordered and
    has a stream several activators start; None otherwise."""
    shared = shared_starts(activations) if sync == "ge" else {}
    if report.ok or not shared or set(report.counts) != {"dependency"}:
        return None
    streams = "; ".join(f"stream {s} by {', '.join(names)}" for s, names in shared.items())
    return (f"GE's plan races: several activators start one stream ({streams}), which then "
            "starts at the first of them to run, but GE's sync leaves out an event into it "
            f"when any one of them follows the producer ({report.total} dependencies left "
            "unordered); `--sync minimal` keeps those events")


def raise_for_ge_plan(report: VerifyReport, document: Mapping[str, Any]) -> None:
    """`report.raise_for_failure()`, but GeSyncRace, its cause first, for GE's race."""
    cause = race_cause(report, document.get("stream_activations", {}), document.get("sync"))
    if cause is None:
        report.raise_for_failure()
        return
    raise GeSyncRace(cause + "\n" + report.text().rstrip())
