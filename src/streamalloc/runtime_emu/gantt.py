"""A Gantt chart of a run (PNG via matplotlib, an optional dependency imported on use).

One row per stream; graph tasks coloured by engine, Send/Recv in grey (a Recv's bar spans its
wait, hatched), the makespan and both lower bounds as vertical lines.
"""

from __future__ import annotations

import io
import math
from typing import Any

from streamalloc.report.plotting import pyplot
from streamalloc.runtime_emu.program import RECV, SEND
from streamalloc.runtime_emu.results import EmulationResult

SYNC_COLOR = "#b0b0b0"


def _bars(result: EmulationResult) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(stream, category) -> [(start, duration)], categories = engine names, "sync", "wait"."""
    program = result.program
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for tid, engine in enumerate(program.engines):
        begin, finish = result.start[tid], result.end[tid]
        if finish == math.inf or (finish == begin and engine is None):
            continue
        kind = program.kinds[tid]
        category = engine or ("wait" if kind == RECV else "sync" if kind == SEND else "nop")
        bars.setdefault((program.streams[tid], category), []).append((begin, finish - begin))
    return bars


def gantt_png(result: EmulationResult, *, width: float = 12.0) -> bytes:
    """Render the chart and return the PNG bytes (UsageError if matplotlib is missing)."""
    plt = pyplot("--gantt")
    program = result.program
    rows = {sid: i for i, sid in enumerate(program.stream_ids)}
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.4 * max(1, len(rows))))
    bars = _bars(result)
    engines = sorted({c for (_, c) in bars if c not in ("sync", "wait", "nop")})
    palette = plt.get_cmap("tab10")
    colors = {e: palette(i % 10) for i, e in enumerate(engines)}
    labelled: set[str] = set()
    for (sid, category), spans in sorted(bars.items()):
        style: dict[str, Any] = {"facecolors": colors.get(category, SYNC_COLOR),
                                 "edgecolor": "white", "linewidth": 0.3}
        if category == "wait":
            style["hatch"] = "///"
        if category not in labelled:
            style["label"] = category
            labelled.add(category)
        ax.broken_barh(spans, (rows[sid] - 0.4, 0.8), **style)
    for value, label, line in ((result.makespan_us, "makespan", "-"),
                               (result.bounds.critical_path_us, "critical path", "--"),
                               (result.bounds.work_over_units_us, "work / units", ":")):
        ax.axvline(value, color="black", linestyle=line, linewidth=0.8, label=label)
    ax.set_yticks(list(rows.values()), [f"stream {sid}" for sid in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_title(f"{program.graph}: {result.status}, makespan {result.makespan_us:.1f} us")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
