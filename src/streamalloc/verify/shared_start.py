"""Why a ge-sync plan fails the verifier where several activators start one stream.

GE leaves out an event into a label's stream when any one of the stream's activators follows
the producer (its insertion rule 5, and its elimination by activation), but the stream starts
at whichever activator runs first, so the consumer may run before the producer. ge mode
refuses that plan like any other the verifier rejects; this names the cause and the way out
instead of leaving the user with the bare dependency violations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamalloc.errors import GeSyncRace
from streamalloc.verify.report import VerifyReport


def shared_starts(document: Mapping[str, Any]) -> dict[int, list[str]]:
    """Streams of the plan that two or more activators start: stream -> its activators."""
    starters: dict[int, list[str]] = {}
    for activator, streams in document.get("stream_activations", {}).items():
        for stream in streams:
            starters.setdefault(stream, []).append(activator)
    return {s: names for s, names in sorted(starters.items()) if len(names) > 1}


def raise_for_ge_plan(report: VerifyReport, document: Mapping[str, Any]) -> None:
    """`report.raise_for_failure()`, but GeSyncRace with the cause where GE's sync left only
    dependencies unordered and the plan has a stream several activators start."""
    shared = shared_starts(document) if document.get("sync") == "ge" else {}
    if report.ok or not shared or set(report.counts) != {"dependency"}:
        report.raise_for_failure()
        return
    streams = "; ".join(f"stream {s} by {', '.join(names)}" for s, names in shared.items())
    raise GeSyncRace(
        f"GE's plan races: several activators start one stream ({streams}), which then starts "
        "at the first of them to run, but GE's sync leaves out an event into it when any one "
        f"of them follows the producer ({report.total} dependencies left unordered); "
        "`--sync minimal` keeps those events\n" + report.text().rstrip())
