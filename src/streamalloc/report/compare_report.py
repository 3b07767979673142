"""The comparison of allocation modes as a table, and as a picture: events against emulated
makespan per graph and mode, with the optimal mode's frontier (the events objective over
makespan slacks, and the makespan objective at its fast end).

PNG via matplotlib, an optional dependency imported on use.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from streamalloc.report.plotting import pyplot
from streamalloc.report.table import format_table

COMPARE_FORMAT = "streamalloc.compare/v1"
COLUMNS = ("input", "mode", "logical_streams", "physical_streams", "events", "notifies",
           "makespan_us", "chain_sync_us", "critical_path_us", "work_over_units_us",
           "makespan_bound_us",
           "nimble_min_events", "status", "gap", "events_bound", "wall_s")
MARKERS = {"ge": "o", "ge-minimal": "s", "optimal": "*"}
COLORS = {"ge": "tab:blue", "ge-minimal": "tab:orange", "optimal": "tab:green"}  # whatever
# --modes runs
# Modes often share a point (ge-minimal keeps ge's events wherever GE's elimination is already
# minimal; optimal keeps ge's plan where nothing beats it), so each mode's marker nests in the
# next: hollow rings of decreasing size around optimal's filled star, and the fastest plan's
# hollow diamond around them all. Drawn alike, the last one hid the others.
SIZES = {"ge": 230, "ge-minimal": 110, "optimal": 70}
HOLLOW = {"ge", "ge-minimal"}
FASTEST_SIZE = 330
LEGEND_PAD_INCHES = 0.1  # between the panels' axis labels and the legend below them


def compare_table(document: Mapping[str, Any]) -> str:
    """One row per graph and mode, why a row's plan is not the mode's own (a fallback, a plan
    over a device limit, none within them), then the frontier rows if any."""
    rows = [[cell(row.get(c)) for c in COLUMNS] for row in document["rows"]]
    text = format_table(list(COLUMNS), rows) + "\n" + why_lines(document["rows"])
    frontier = document.get("frontier")
    if frontier:
        columns = ["input", "objective", "slack_%", "event_budget", "events", "makespan_us",
                   "status", "pareto", "found_by"]
        text += "\noptimal frontier:\n" + format_table(
            columns, [[r["input"], r["objective"], _percent(r["slack"]), cell(r["event_budget"]),
                       cell(r["events"]), cell(r["makespan_us"]), r["status"],
                       "yes" if r["pareto"] else "no", _found_by(r, frontier)]
                      for r in frontier]) + "\n"
    return text


def _found_by(entry: Mapping[str, Any], frontier: Sequence[Mapping[str, Any]]) -> str:
    """The run whose plan a frontier point shows, by its settings: "-" for its own run. The
    JSON's `carried_from` is a position, which read as a slack in the table."""
    index = entry.get("carried_from")
    if index is None:
        return "-"
    run = frontier[index]
    if run["objective"] == "events":
        return f"events, slack {_percent(run['slack'])}%"
    budget = run["event_budget"]
    return "makespan" + ("" if budget is None else f", budget {budget}")


def why_lines(rows: Iterable[Mapping[str, Any]],
              label: Callable[[Mapping[str, Any]], str] = lambda row: "") -> str:
    """The lines under a table of compare rows that say why a row's plan is not its mode's own
    (`label`: what names the row before its input and mode); empty when none has a reason."""
    reasons = [f"  {label(row)}{row['input']} {row['mode']} ({row['status']}): {row['reason']}"
               for row in rows if row.get("reason")]
    return "\nwhy:\n" + "\n".join(reasons) + "\n" if reasons else ""


def _percent(slack: float | None) -> str:
    return "-" if slack is None else f"{slack:g}"


def cell(value: Any) -> str:
    """A table cell: - for none, floats to 3 significant digits (1 decimal from 10 up)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


def frontier_plot(document: Mapping[str, Any]) -> bytes:
    """PNG of `frontier_figure`."""
    plt = pyplot("--plot")
    fig = frontier_figure(document)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def frontier_figure(document: Mapping[str, Any]) -> Any:
    """Per graph a panel of events (y) against emulated makespan (x) per mode, the optimal
    frontier (the line joins its Pareto points; a point another beats in both is drawn
    hollow), and the makespan bound of every plan; one legend below the panels (inside one it
    hid points, GE's in a corner)."""
    plt = pyplot("--plot")
    graphs = list(dict.fromkeys(row["input"] for row in document["rows"]))
    cols = min(3, len(graphs)) or 1
    rows = math.ceil(len(graphs) / cols) or 1
    columns = 2 if cols == 1 else 3  # legend columns that fit the figure's width
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    frontier: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for point in document.get("frontier", ()):
        frontier[point["input"]].append(point)
    for k, name in enumerate(graphs):
        _panel(axes[k // cols][k % cols], name, [r for r in document["rows"] if r["input"] == name],
               frontier[name])
    for k in range(len(graphs), rows * cols):
        axes[k // cols][k % cols].axis("off")
    legend: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    drawn = fig.legend(list(legend.values()), list(legend), loc="lower center", fontsize=8,
                       ncol=min(columns, len(legend)) or 1, frameon=False, markerscale=0.6)
    # the figure grows by the legend's own height (its lines, as many as its entries take)
    legend_inches = drawn.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi \
        + LEGEND_PAD_INCHES
    fig.set_figheight(4 * rows + legend_inches)
    fig.tight_layout(rect=(0.0, legend_inches / fig.get_figheight(), 1.0, 1.0))
    return fig


def _panel(ax: Any, name: str, rows: list[Mapping[str, Any]],
           frontier: list[Mapping[str, Any]]) -> None:
    """One graph's panel: its rows (modes), bound and frontier."""
    for row in (r for r in rows if r["makespan_us"] is not None):  # NO_PLAN: nothing to draw
        mode = row["mode"]
        hollow = mode in HOLLOW
        ax.scatter(row["makespan_us"], row["events"], marker=MARKERS[mode], s=SIZES[mode],
                   facecolors="none" if hollow else COLORS[mode], edgecolors=COLORS[mode],
                   linewidths=2 if hollow else 1, label=mode, zorder=3 if hollow else 4)
    bound = rows[0].get("makespan_bound_us")
    if bound is not None:
        ax.axvline(bound, linestyle=":", color="black", label="no plan runs faster")
    points = sorted((p for p in frontier if p["makespan_us"] is not None),
                    key=lambda p: (p["makespan_us"], -p["events"]))
    front = [p for p in points if p["pareto"]]
    if front:
        ax.plot([p["makespan_us"] for p in front], [p["events"] for p in front], "--",
                marker=".", color="grey", label="optimal frontier")
    dominated = [p for p in points if not p["pareto"]]
    if dominated:
        ax.scatter([p["makespan_us"] for p in dominated], [p["events"] for p in dominated],
                   marker="o", s=30, facecolors="none", edgecolors="grey",
                   label="a run behind the frontier")
    fastest = min((p for p in points if p["objective"] == "makespan"),
                  key=lambda p: p["makespan_us"], default=None)
    if fastest is not None:
        ax.scatter(fastest["makespan_us"], fastest["events"], marker="D", s=FASTEST_SIZE,
                   facecolors="none", edgecolors="tab:red", linewidths=1.5,
                   label="optimal, fastest (--objective makespan)", zorder=3)
    if all(r["makespan_us"] is None for r in rows) and not points:
        ax.text(0.5, 0.5, "no plan in any mode\n(the rows' reasons say why)", ha="center",
                va="center", transform=ax.transAxes, fontsize=9)
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("emulated makespan (us)")
    ax.set_ylabel("events")
    ax.yaxis.get_major_locator().set_params(integer=True)  # events are counts
    low, high = ax.get_ylim()
    if high - low < 2:  # one count in view: the locator falls back to fractions (6.7, 6.8,
        # ... around every mode's 7 events)
        low = max((low + high) / 2 - 1, -0.5)
        ax.set_ylim(low, low + 2)
