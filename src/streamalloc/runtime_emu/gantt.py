"""A Gantt chart of a run (PNG via matplotlib, an optional dependency imported on use).

Rows are streams, labelled "stream N" on the y axis. Graph tasks are coloured by engine,
Send/Recv in grey (a Recv's bar spans its wait, hatched); a bar wide enough to hold text
carries the task's name, else its op type, else nothing. The run's critical chain
(`runtime_emu/critical_chain.py`) is outlined in black: the tasks, one after another, that
decided the makespan. The legend lists the engines and colours, the sync, chain and failure
marks, and the makespan and both lower bounds (vertical lines).

Many streams (`gantt_rows`): with at most `MAX_ROWS` streams every stream has its row, in
stream id order. With more, `MAX_ROWS - 1` streams get a row each, busiest first (busy time,
ties by stream id; streams blocked in a deadlock come first, whatever their busy time), and all
the others fold into one last row "other streams (k)": their task bars only (no Send/Recv, so
the row shows when they work), translucent and unlabelled. The
chart therefore never has more than `MAX_ROWS` rows; the trace (`--trace`) keeps every stream.

A failed run is drawn up to the failure: each stream blocked in a deadlock gets a red hatched
bar "waiting for event N" from the time it blocked to the right edge (the axis runs a little
past the makespan so that it shows), and each violation (the first `trace.MAX_MARKED`) a red
cross at its consumer's start.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from streamalloc.report.plotting import pyplot
from streamalloc.runtime_emu.critical_chain import chain_spans
from streamalloc.runtime_emu.program import RECV, SEND
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.runtime_emu.trace import MAX_MARKED, blocked_since, waiting_label

MAX_ROWS = 40
SYNC_COLOR = "#b0b0b0"
FAIL_COLOR = "#d62728"
CHAIN_WIDTH = 1.4  # the critical chain's outline
FONT_SIZE = 8.0
DPI = 100


@dataclass(frozen=True, slots=True)
class GanttRow:
    """One row of the chart: its y-axis label and the streams drawn in it."""

    label: str
    streams: tuple[int, ...]


def gantt_rows(result: EmulationResult, max_rows: int = MAX_ROWS) -> list[GanttRow]:
    """The rows of the chart, top to bottom: one per stream when they fit in `max_rows`, else
    the `max_rows - 1` busiest streams (blocked ones first) and one row folding the rest."""
    ids = result.program.stream_ids
    if len(ids) <= max_rows:
        return [GanttRow(f"stream {sid}", (sid,)) for sid in ids]
    blocked = {b.stream for b in result.deadlock}
    ranked = sorted(ids, key=lambda sid: (sid not in blocked, -result.busy_us(sid), sid))
    shown, rest = ranked[:max(0, max_rows - 1)], sorted(ranked[max(0, max_rows - 1):])
    return [*(GanttRow(f"stream {sid}", (sid,)) for sid in shown),
            GanttRow(f"other streams ({len(rest)})", tuple(rest))]


def bar_label(name: str, op_type: str, width_px: float,
              char_px: float = 0.6 * FONT_SIZE * DPI / 72) -> str | None:
    """The text a bar `width_px` wide can hold: the task's name, else its type, else None."""
    for text in (name, op_type):
        if text and (len(text) + 1) * char_px <= width_px:
            return text
    return None


def _category(result: EmulationResult, tid: int) -> str:
    kind = result.program.kinds[tid]
    return result.program.engines[tid] or ("wait" if kind == RECV else
                                            "sync" if kind == SEND else "nop")


def _bars(result: EmulationResult, row_of: dict[int, int], folded: set[int]
          ) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(row, category) -> [(start, duration)]; categories: engine names, "sync", "wait"."""
    program = result.program
    bars: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for tid in range(program.task_count()):
        begin, finish = result.start[tid], result.end[tid]
        category, row = _category(result, tid), row_of[program.streams[tid]]
        idle = category in ("wait", "sync", "nop")
        if finish == math.inf or (idle and (finish == begin or row in folded)):
            continue  # the folded row shows where its streams work, not where they wait
        bars[(row, category)].append((begin, finish - begin))
    return bars


def gantt_png(result: EmulationResult, *, width: float = 14.0,
              max_rows: int = MAX_ROWS) -> bytes:
    """Render the chart and return the PNG bytes (UsageError if matplotlib is missing)."""
    plt = pyplot("--gantt")
    program = result.program
    rows = gantt_rows(result, max_rows)
    row_of = {sid: i for i, row in enumerate(rows) for sid in row.streams}
    folded = {i for i, row in enumerate(rows) if len(row.streams) > 1}
    makespan = result.makespan_us
    right = (makespan or 1.0) * (1.12 if result.deadlock else 1.0)

    bars = _bars(result, row_of, folded)
    engines = sorted({c for (_, c) in bars if c not in ("sync", "wait", "nop")})
    palette = plt.get_cmap("tab10")
    colors = {e: palette(i % 10) for i, e in enumerate(engines)}

    fig, ax = plt.subplots(figsize=(width, 1.4 + 0.35 * max(1, len(rows))), dpi=DPI)
    for (row, category), spans in sorted(bars.items()):
        style: dict[str, Any] = {"facecolors": colors.get(category, SYNC_COLOR),
                                 "edgecolor": "white", "linewidth": 0.3,
                                 "alpha": 0.5 if row in folded else 1.0}
        if category == "wait":
            style["hatch"] = "///"
        ax.broken_barh(spans, (row - 0.4, 0.8), **style)
    chain = _chain_outline(ax, result, row_of)
    crosses = _failure_marks(ax, result, row_of, right)
    bounds = result.bounds  # (computed when read)
    lines: tuple[tuple[str, float, Any], ...] = (
        ("makespan", makespan, "-"),
        ("critical path", bounds.critical_path_us, "--"),
        ("work / units", bounds.work_over_units_us, ":"))
    for _, value, dash in lines:
        ax.axvline(value, color="black", linestyle=dash, linewidth=0.8)

    ax.set_xlim(0, right)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    ax.set_yticks(range(len(rows)), [row.label for row in rows], fontsize="small")
    ax.set_xlabel("time (us)")
    shown = "" if not folded else \
        f" ({len(rows) - 1} busiest of {len(program.stream_ids)} streams shown)"
    ax.set_title(f"{program.graph}: {result.status}, makespan {makespan:.1f} us{shown}")
    handles = _legend(colors, {c for (_, c) in bars}, bool(result.deadlock), bool(crosses),
                      lines, chain=chain)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    _label_bars(ax, result, row_of, folded, right)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return buffer.getvalue()


def _chain_outline(ax: Any, result: EmulationResult, row_of: dict[int, int]) -> bool:
    """Outline the critical chain's spans on their rows; whether there are any."""
    spans: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for tid, begin, finish in chain_spans(result):
        if finish > begin:
            spans[row_of[result.program.streams[tid]]].append((begin, finish - begin))
    for row, row_spans in sorted(spans.items()):
        ax.broken_barh(row_spans, (row - 0.4, 0.8), facecolors="none", edgecolor="black",
                       linewidth=CHAIN_WIDTH, zorder=2)
    return bool(spans)


def _failure_marks(ax: Any, result: EmulationResult, row_of: dict[int, int],
                   right: float) -> list[tuple[float, int]]:
    """Draw the blocked streams' waits and the violations' crosses; return the crosses."""
    for blocked, since in blocked_since(result):
        row = row_of[blocked.stream]
        ax.broken_barh([(since, right - since)], (row - 0.4, 0.8), facecolors="none",
                       edgecolor=FAIL_COLOR, hatch="xx", linewidth=0.8)
        ax.text(since, row, f" {waiting_label(blocked)}", va="center", ha="left",
                fontsize=FONT_SIZE, color=FAIL_COLOR, clip_on=True,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    crosses = [(v["consumer_start_us"], row_of[v["consumer_stream"]])
               for v in result.violation_records()[:MAX_MARKED]]
    if crosses:
        ax.scatter(*zip(*crosses, strict=True), marker="x", color=FAIL_COLOR, zorder=3)
    return crosses


def _legend(colors: dict[str, Any], present: set[str], deadlock: bool, crosses: bool,
            lines: tuple[tuple[str, float, Any], ...], *, chain: bool) -> list[Any]:
    """Legend handles: engines and their colours, then the marks drawn, then the lines."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(facecolor=c, label=e) for e, c in colors.items()]
    if "sync" in present:
        handles.append(Patch(facecolor=SYNC_COLOR, label="Send"))
    if "wait" in present:
        handles.append(Patch(facecolor=SYNC_COLOR, hatch="///", label="Recv (spans its wait)"))
    if chain:
        handles.append(Patch(facecolor="none", edgecolor="black", linewidth=CHAIN_WIDTH,
                             label="critical chain"))
    if deadlock:
        handles.append(Patch(facecolor="none", edgecolor=FAIL_COLOR, hatch="xx",
                             label="blocked (deadlock)"))
    if crosses:
        handles.append(Line2D([], [], marker="x", color=FAIL_COLOR, linestyle="none",
                              label="violation"))
    handles += [Line2D([], [], color="black", linestyle=dash, linewidth=0.8, label=label)
                for label, _, dash in lines]
    return handles


def _label_bars(ax: Any, result: EmulationResult, row_of: dict[int, int], folded: set[int],
                right: float) -> None:
    """Write names (or op types) on the engine-task bars wide enough to hold them."""
    program = result.program
    px_per_us = ax.get_window_extent().width / right
    for tid, engine in enumerate(program.engines):
        row = row_of[program.streams[tid]]
        finish = result.end[tid]
        if engine is None or row in folded or finish == math.inf:
            continue
        begin = result.start[tid]
        text = bar_label(program.names[tid], program.types[tid], (finish - begin) * px_per_us)
        if text is not None:
            ax.text((begin + finish) / 2, row, text, ha="center", va="center",
                    fontsize=FONT_SIZE, clip_on=True)
