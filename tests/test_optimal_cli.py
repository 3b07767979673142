"""`allocate --mode optimal` and `compare` from the command line: files, exit codes, JSON."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from streamalloc import api
from streamalloc.cli import main
from streamalloc.commands import compare as compare_module
from streamalloc.commands.compare import best_known, input_names, pareto_front
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, event_bound, event_forest
from streamalloc.report.allocation_report import solver_summary
from streamalloc.report.compare_report import compare_table, frontier_figure, frontier_plot
from streamalloc.runtime_emu import emulate, report_dict

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml")


def test_optimal_plan_has_a_solver_block_and_verifies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    assert main(["allocate", EXAMPLE, "--mode", "optimal", "--time-limit", "1",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "solver: " in text and "(ge-mode baseline) ->" in text
    plan = json.loads(out.read_text(encoding="utf-8"))
    solver = plan["solver"]
    assert plan["mode"] == "optimal" and plan["sync"] == "minimal"
    assert set(solver) >= {"status", "objective", "bound", "gap", "events_final",
                           "deterministic_time", "nimble_min_events"}
    assert solver["events_final"] == plan["event_count"] + plan["notify_count"]
    assert solver["events_final"] <= solver["baseline_events"]
    assert "wall" not in json.dumps(solver)  # wall time is printed, never written
    assert f"solver: {solver['status']} (phase {solver['phase']})" in text
    assert main(["verify", EXAMPLE, str(out)]) == 0


def test_optimal_plans_are_byte_identical(tmp_path: Path) -> None:
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in files:
        assert main(["allocate", EXAMPLE, "--mode", "optimal", "--time-limit", "1",
                     "--workers", "2", "-o", str(path)]) == 0
    assert files[0].read_bytes() == files[1].read_bytes()


def test_full_concurrency_reports_nimbles_minimum(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    assert main(["allocate", EXAMPLE, "--mode", "optimal", "--rules", "free", "--concurrency",
                 "full", "--set", "streamalloc.unlimited_stream_depth=true",
                 "-o", str(out)]) == 0
    plan = json.loads(out.read_text(encoding="utf-8"))
    assert plan["solver"]["nimble_min_events"] == plan["event_count"]
    assert plan["rules"]["name"] == "free"
    assert main(["verify", EXAMPLE, str(out)]) == 0  # the shipped set `free` is found by name


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", EXAMPLE, "--rules", "free"]) == 3
    assert "it is for --mode optimal" in capsys.readouterr().err
    assert main(["allocate", EXAMPLE, "--mode", "optimal", "--print-after", "all"]) == 2
    assert main(["compare", EXAMPLE, "--modes", "ge,best"]) == 2
    assert "valid modes are ge, ge-minimal, optimal" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--mode", "optimal", "--event-budget", "-1"],
     "--event-budget -1: expected a finite number >= 0"),
    (["--mode", "optimal", "--time-limit", "-1"], "--time-limit -1: expected a finite number >= 0"),
    (["--mode", "optimal", "--time-limit", "inf"],
     "--time-limit inf: expected a finite number >= 0"),
    (["--mode", "optimal", "--workers", "0"], "--workers 0: expected a finite number >= 1"),
    (["--mode", "optimal", "--makespan-slack", "-5"],
     "--makespan-slack -5: expected a finite number >= 0"),
    (["--mode", "optimal", "--event-budget", "3"], "add --objective makespan"),
    (["--event-budget", "3"], "--event-budget: only --mode optimal reads it; add --mode optimal"),
    (["--mode", "preset", "--objective", "makespan", "--seed", "1"],
     "--objective, --seed: only --mode optimal reads them; add --mode optimal (this is --mode "
     "preset)"),
])
def test_optimal_settings_out_of_range_or_without_the_mode(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 before anything runs (a negative budget ran the search for 11 s, then kept the
    baseline; a negative time limit reached CP-SAT as MODEL_INVALID; ge mode ignored them)."""
    assert main(["allocate", EXAMPLE, *args]) == 2
    assert message in capsys.readouterr().err


def test_compare_without_the_optimal_mode_refuses_its_flags(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a docs walk-through: `compare --modes ge --time-limit 1` ignored the flag,
    where allocate and explain refuse it; `--cost` stays, every mode is emulated under it."""
    assert main(["compare", EXAMPLE, "--modes", "ge,ge-minimal", "--time-limit", "1",
                 "--seed", "2"]) == 2
    assert "--time-limit, --seed: only the optimal mode reads them; add optimal to --modes " \
        "(this is --modes ge,ge-minimal)" in capsys.readouterr().err
    costs = Path(__file__).resolve().parents[1] / "src" / "streamalloc" / "runtime_emu" \
        / "costs.yaml"
    assert main(["compare", EXAMPLE, "--modes", "ge", "--cost", str(costs)]) == 0


def test_compare_inputs_are_unique_per_file(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a fuzz run: two files of one name in two directories (or a.yaml and a.json)
    gave two graphs one `input`, and --plot one panel."""
    text = Path(EXAMPLE).read_text(encoding="utf-8")
    files = [tmp_path / "x" / "g.yaml", tmp_path / "y" / "g.yaml", tmp_path / "y" / "g.json"]
    for file in files:
        file.parent.mkdir(exist_ok=True)
        file.write_text(text if file.suffix == ".yaml" else json.dumps(yaml.safe_load(text)),
                        encoding="utf-8")
    assert main(["compare", *map(str, files), str(files[0]), "--modes", "ge", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["input"] for r in rows] == ["x/g.yaml", "y/g.yaml", "y/g.json", "x/g.yaml"]
    assert input_names(["x/a.yaml", "y/a.yaml", "b.onnx"]) == ["x/a", "y/a", "b"]


def test_compare_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", EXAMPLE, "--json", "--time-limit", "1"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["format"] == "streamalloc.compare/v1"
    rows = {r["mode"]: r for r in document["rows"]}
    assert set(rows) == {"ge", "ge-minimal", "optimal"}
    assert rows["ge-minimal"]["events"] <= rows["ge"]["events"]
    assert rows["optimal"]["events"] <= rows["ge"]["events"]
    assert rows["optimal"]["makespan_us"] <= rows["ge"]["makespan_us"]
    assert all(r["makespan_us"] >= r["critical_path_us"] for r in rows.values())
    # one bound per graph, between the emulator's bounds and every plan (measured 263.8 us:
    # above the 199.2 of work over units, under the 345.9 of the optimal plan)
    bounds = {r["makespan_bound_us"] for r in rows.values()}
    assert len(bounds) == 1
    bound = bounds.pop()
    assert all(max(r["critical_path_us"], r["work_over_units_us"]) < bound <= r["makespan_us"]
               for r in rows.values())
    # the sync on the critical chain, as `emulate` reports it for each mode's plan
    graph = load_graph(EXAMPLE)
    for mode, sync in (("ge", "ge"), ("ge-minimal", "minimal")):
        chain = report_dict(emulate(graph, api.plan(graph, sync=sync).to_json()))[
            "critical_chain"]
        assert rows[mode]["chain_sync_us"] == chain["send_us"] + chain["recv_us"] > 0
    assert rows["optimal"]["events"] == rows["optimal"]["chain_sync_us"] == 0


def test_compare_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "cmp.png"
    assert main(["compare", EXAMPLE, "--modes", "ge,optimal", "--time-limit", "0.5",
                 "--plot", str(plot)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = capsys.readouterr().out.split("optimal frontier:\n")[1].splitlines()
    assert table[0].split() == ["input", "objective", "slack_%", "event_budget", "events",
                                "makespan_us", "status", "pareto", "found_by"]
    # the fastest plan (2 events, measured 294.8 us) and the slack-0 one (0 events) are two
    # apart: one budget between them
    assert [line.split()[1:4] for line in table[2:]] == [
        ["events", "0", "-"], ["events", "5", "-"], ["events", "10", "-"], ["events", "25", "-"],
        ["events", "50", "-"], ["makespan", "-", "1"], ["makespan", "-", "-"]]
    # the run whose plan a point shows, by its settings (a position read as a slack)
    found_by = [re.split(r"\s(?:yes|no)\s+", line)[1] for line in table[2:]]
    assert all(re.fullmatch(r"-|events, slack \d+%|makespan(, budget \d+)?", f)
               for f in found_by), found_by


def test_compare_jobs_run_a_graphs_runs_at_once_with_the_same_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """--jobs 2: the graphs' modes and frontier points run in two forked processes (each run
    with two search workers, which then search one after the other: a pool's process starts
    none of its own), both graphs at once or, past the nodes read ahead, one after the other;
    every row and point is the one --jobs 1 gives, but for its wall time."""
    documents = []
    layers = str(Path(EXAMPLE).with_name("transformer_layers.yaml"))
    for jobs, ahead in (("1", None), ("2", None), ("2", 1)):
        if ahead is not None:
            monkeypatch.setattr(compare_module, "READ_AHEAD_NODES", ahead)
        assert main(["compare", EXAMPLE, layers, "--json", "--time-limit", "0.3", "--workers",
                     "2", "--plot", str(tmp_path / f"{jobs}.png"), "--jobs", jobs]) == 0
        document = json.loads(capsys.readouterr().out)
        for entry in (*document["rows"], *document["frontier"]):
            assert entry.pop("wall_s") >= 0
        documents.append(document)
    assert {e["input"] for e in documents[0]["frontier"]} == {"train_step", "transformer_layers"}
    assert len(documents[0]["frontier"]) >= 12
    assert documents[0] == documents[1] == documents[2]
    assert main(["compare", EXAMPLE, "--jobs", "0"]) == 2
    assert "--jobs 0: expected a number of processes >= 1" in capsys.readouterr().err


def test_compare_jobs_run_again_what_a_dead_process_ran(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose process dies (the OOM killer, say) runs again in the command's process:
    the same rows (a pool of processes waited for it forever)."""
    layers = str(Path(EXAMPLE).with_name("transformer_layers.yaml"))

    def document() -> dict[str, Any]:
        assert main(["compare", EXAMPLE, layers, "--json", "--modes", "ge,ge-minimal",
                     "--jobs", "2"]) == 0
        its = json.loads(capsys.readouterr().out)
        for row in its["rows"]:
            assert row.pop("wall_s") >= 0
        return its

    alive = document()
    parent, job_rows = os.getpid(), compare_module._job_rows

    def dies_in_a_child(job: compare_module.Job, *args: Any) -> Any:
        if os.getpid() != parent and job[0] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return job_rows(job, *args)

    monkeypatch.setattr(compare_module, "_job_rows", dies_in_a_child)
    assert len(alive["rows"]) == 4 and document() == alive


def test_each_frontier_point_shows_the_best_plan_within_its_limits() -> None:
    """A run at a larger slack may end worse than one at a smaller slack; the point then
    shows the smaller slack's plan, which is within its limit too. A makespan point takes the
    fastest plan within its budget."""
    def entry(objective: str, slack: float | None, budget: int | None, events: int | None,
              makespan: float | None) -> dict[str, object]:
        return {"objective": objective, "slack": slack, "event_budget": budget,
                "events": events, "makespan_us": makespan,
                "status": "FEASIBLE" if events is not None else "NO_PLAN", "gap": None,
                "reason": "", "events_bound": 41, "wall_s": 1.0}

    points = [entry("events", 0.0, None, 43, 7077.7), entry("events", 5.0, None, 43, 8176.9),
              entry("events", 10.0, None, None, None), entry("events", 25.0, None, 42, 12261.8),
              entry("makespan", None, 97, 88, 9183.5), entry("makespan", None, 40, None, None),
              entry("makespan", None, None, 258, 4165.9)]
    shown = best_known(points)
    assert [(p["events"], p["makespan_us"], p["carried_from"]) for p in shown] == [
        (43, 7077.7, None), (43, 7077.7, 0), (43, 7077.7, 0), (42, 12261.8, None),
        (43, 7077.7, 0), (None, None, None), (258, 4165.9, None)]
    assert shown[2]["status"] == "FEASIBLE" and shown[2]["wall_s"] == 1.0


def test_the_frontier_table_names_the_run_a_point_shows_by_its_settings() -> None:
    """Found by a docs walk-through: `from` printed the position 0, which read as slack 0."""
    def point(objective: str, slack: float | None, budget: int | None,
              carried: int | None) -> dict[str, object]:
        return {"input": "g", "objective": objective, "slack": slack, "event_budget": budget,
                "events": 4, "makespan_us": 9.0, "status": "FEASIBLE", "pareto": True,
                "carried_from": carried}
    frontier = [point("events", 0.0, None, None), point("events", 5.0, None, 0),
                point("makespan", None, 7, None), point("makespan", None, None, 2)]
    table = compare_table({"rows": [], "frontier": frontier}).split("optimal frontier:\n")[1]
    assert [line.split("yes")[-1].strip() for line in table.splitlines()[2:]] == [
        "-", "events, slack 0%", "-", "makespan, budget 7"]


def test_the_frontier_marks_the_points_another_beats_in_both() -> None:
    """`pareto` says which points no other beats (the plot joins those); a point without a
    plan is on no front."""
    points = [(134, 34525.1), (170, 36391.4), (168, 37673.7), (76, 39703.8), (76, 39703.8),
              (487, 14257.9), (None, None)]
    front = pareto_front(points)
    assert front == [True, False, False, True, True, True, False]
    document = {"rows": [{"input": "g", "mode": "optimal", "makespan_us": 34525.1,
                          "events": 134, "makespan_bound_us": 12325.8}],
                "frontier": [{"input": "g", "objective": "events" if k < 5 else "makespan",
                              "slack": None, "events": e, "makespan_us": m,
                              "status": "FEASIBLE", "pareto": front[k]}
                             for k, (e, m) in enumerate(points)]}
    assert frontier_plot(document)[:8] == b"\x89PNG\r\n\x1a\n"


def test_modes_at_one_point_all_stay_visible() -> None:
    """ge, ge-minimal and optimal often share a point (GE dump 00026: one plan in all three
    modes), as do optimal and the fastest plan: the markers nest, each larger one a hollow
    ring around the next, so none hides another (drawn alike, only the last was seen)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    rows = [{"input": "g", "mode": mode, "makespan_us": 300.0, "events": 4,
             "makespan_bound_us": 250.0} for mode in ("ge", "ge-minimal", "optimal")]
    frontier = [{"input": "g", "objective": "makespan", "slack": None, "events": 4,
                 "makespan_us": 300.0, "status": "FEASIBLE", "pareto": True}]
    fig = frontier_figure({"rows": rows, "frontier": frontier})
    try:
        ax = fig.axes[0]
        marks = sorted(((float(c.get_sizes()[0]), c) for c in ax.collections
                        if (c.get_offsets() == [[300.0, 4.0]]).all()), key=lambda m: m[0])
        labels = [c.get_label() for _, c in marks]
        assert labels == ["optimal", "ge-minimal", "ge",
                          "optimal, fastest (--objective makespan)"]
        sizes = [size for size, _ in marks]
        assert sizes == sorted(set(sizes))  # strictly nested
        for _, ring in marks[1:]:  # every marker around the smallest is see-through
            assert all(to_rgba(face)[3] == 0 for face in ring.get_facecolors())
        assert to_rgba(marks[0][1].get_facecolors()[0])[3] == 1  # the centre is filled
    finally:
        plt.close(fig)


@pytest.mark.parametrize("graphs", [1, 4])
def test_the_legend_sits_right_below_the_panels(graphs: int) -> None:
    """The figure grows by the legend's own height: the legend overlaps no panel's axis
    labels, and no band of blank space lies between them (the room once kept for the most
    entries a legend can have left 0.65 in of it under one panel)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    rows = [{"input": f"g{k}", "mode": mode, "makespan_us": 300.0 + 10 * m, "events": 4 + m,
             "makespan_bound_us": 250.0}
            for k in range(graphs) for m, mode in enumerate(("ge", "ge-minimal", "optimal"))]
    frontier = [{"input": f"g{k}", "objective": "makespan", "slack": None, "events": 9,
                 "makespan_us": 280.0, "status": "FEASIBLE", "pareto": True}
                for k in range(graphs)]
    fig = frontier_figure({"rows": rows, "frontier": frontier})
    try:
        renderer = fig.canvas.get_renderer()
        legend = fig.legends[0].get_window_extent(renderer)
        lowest = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes if ax.axison)
        gap_inches = (lowest - legend.y1) / fig.dpi
        assert 0 <= gap_inches <= 0.25, gap_inches
        assert legend.y0 >= 0
    finally:
        plt.close(fig)


def test_compare_plot_under_full_concurrency_has_no_frontier(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Full concurrency ignores the makespan slack: no frontier to run or draw."""
    plot = tmp_path / "cmp.png"
    assert main(["compare", EXAMPLE, "--modes", "ge,optimal", "--concurrency", "full",
                 "--rules", "free", "--time-limit", "0.5", "--plot", str(plot), "--json"]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    document = json.loads(capsys.readouterr().out)
    assert document["frontier"] == [] and len(document["rows"]) == 2


@pytest.mark.parametrize("events", [0, 7])
def test_compare_plot_counts_events_in_whole_numbers(events: int) -> None:
    """Where every mode has the same events (a FALLBACK under full concurrency), the events
    axis used to read 6.7, 6.8, ... 7.3; its ticks are whole counts, none below 0."""
    from streamalloc.report.compare_report import frontier_figure
    row = {"input": "g", "makespan_us": 346.4, "events": events, "makespan_bound_us": 263.8}
    fig = frontier_figure({"rows": [{**row, "mode": m} for m in ("ge", "optimal")]})
    try:
        ax = fig.axes[0]
        low, high = ax.get_ylim()
        ticks = [t for t in ax.get_yticks() if low <= t <= high]
        assert len(ticks) >= 2 and all(t == int(t) >= 0 for t in ticks), ticks
        assert low <= events <= high
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)


@pytest.mark.parametrize("args", [["--concurrency", "full", "--rules", "free"], []])
def test_optimal_plans_do_not_depend_on_the_hash_seed(tmp_path: Path, args: list[str]) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"plan{seed}.json"
        subprocess.run([sys.executable, "-m", "streamalloc", "allocate", EXAMPLE, "--mode",
                        "optimal", "--time-limit", "1", *args, "-o", str(out)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_the_help_states_the_defaults_optimal_options_holds(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The flags have no argparse defaults (ge mode must tell a given one apart), so their
    help states OptimalOptions' defaults in words: they must agree."""
    with pytest.raises(SystemExit):
        main(["allocate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = OptimalOptions()
    assert f"(CP-SAT seconds); default {defaults.time_limit:g}" in text
    assert f"solver random seed; default {defaults.seed}" in text
    assert f"one process each; default {defaults.workers}" in text
    assert f"(1 + P/100); default {defaults.makespan_slack:g}" in text
    assert defaults.objective == "events" and defaults.concurrency == "ge"
    assert "fewest events (then fewest streams; the default)" in text
    assert "ge (the default): emulated makespan" in text


def test_explain_says_when_the_plan_is_ge_modes_streams(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """The transformer layers' ge-mode streams reach the events bound: the phase says the
    optimal mode kept them."""
    layers = str(Path(EXAMPLE).parent / "transformer_layers.yaml")
    assert main(["explain", layers, "layer0/grad", "--mode", "optimal"]) == 0
    assert "; status OPTIMAL, phase hint)" in capsys.readouterr().out


def test_explain_in_optimal_mode_names_the_solver_the_constraints_and_the_neighbours(
        capsys: pytest.CaptureFixture[str]) -> None:
    """It used to say "no rule touched it: it keeps its initial stream", and took none of the
    optimal mode's flags."""
    assert main(["explain", EXAMPLE, "relu1", "--mode", "optimal", "--time-limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "stream 0, decided by solver" in out and "initial stream" not in out
    assert "the solver placed it (--objective events, --concurrency ge; status OPTIMAL, phase " \
        in out
    assert "assign-by-dependency  AIcoreEngine nodes open at most 1 stream(s)" in out
    assert "producers: conv1 (stream 0)" in out and "consumers: add (stream 0)" in out
    assert main(["explain", EXAMPLE, "allreduce1", "--mode", "optimal", "--objective",
                 "makespan", "--time-limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "--objective makespan" in out and "no constraint of the rule set names it" in out
    assert main(["explain", EXAMPLE, "relu1", "--objective", "makespan"]) == 2
    assert "only --mode optimal reads it" in capsys.readouterr().err


def test_explain_of_a_fallback_shows_ge_modes_rules(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    """Where the optimal mode keeps ge mode's plan, GE's passes placed the node: explain shows
    them and why the plan was kept. It used to say "the solver placed it ... no pass of the
    rule set ran" beside "decided by assign-by-dependency"."""
    assert main(["explain", EXAMPLE, "conv1", "--mode", "optimal", "--concurrency", "full"]) == 0
    out = capsys.readouterr().out
    assert "decided by assign-by-dependency\nthe optimal mode kept ge mode's plan (--objective " \
        "events, --concurrency full; status FALLBACK: no plan under --concurrency full" in out
    assert "the solver placed it" not in out
    assert "assign-by-dependency  subgraph train_step/sg0       2  reuses the stream of " \
        "train_step/sg1" in out


def test_explain_in_optimal_mode_says_why_a_node_has_no_stream(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A data-like source gets no stream in either mode; it used to read "the solver placed it
    ... any stream would do"."""
    assert main(["explain", EXAMPLE, "w1", "--mode", "optimal", "--time-limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "stream -1" in out and "the solver placed it" not in out
    assert ("as ge mode does: data-like source (in no engine subgraph)" in out
            and "any stream would do" not in out)


def test_every_constraint_form_reads_in_words() -> None:
    from streamalloc.report.allocation_report import constraint_text
    from streamalloc.rules import constraints as c
    forms = {
        c.SameStream("r", ("a", "b", "c")): "on one stream with b, c",
        c.DifferentStreams("r", ("a",), ("x", "y")): "on no stream of x, y",
        c.DedicatedStream("r", ("a",)): "on a stream of its own, with no other node",
        c.PinnedStream("r", ("a",), 3): "on logical stream 3",
        c.DisjointGroups("r", (("a",), ("b",), ("c",))): "the other 2 group(s)",
        c.StreamCap("r", "g", "DNN_HCCL", ("a",), 2): "DNN_HCCL nodes open at most 2 stream(s)",
        c.AttachedStreams("r", ("a",)): "none of the main streams",
    }
    assert {type(form) for form in forms} == set(c.Constraint.__args__)  # type: ignore[attr-defined]
    for form, words in forms.items():
        assert words in constraint_text(form, "a")


def test_the_summary_says_how_close_the_events_are_to_their_bound(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The transformer layers need 2 events under GE's rules (CP-SAT proves it for its model);
    without the one-event check and the forest check the events bound proves only 1: the
    summary says both; one stream that reaches its bound is called minimal."""
    monkeypatch.setattr(event_bound, "ONE_EVENT_NODES", 0)
    monkeypatch.setattr(event_forest, "MAX_NODES", 0)
    layers = str(Path(EXAMPLE).parent / "transformer_layers.yaml")
    assert main(["allocate", layers, "--mode", "optimal", "--time-limit", "1"]) == 0
    text = capsys.readouterr().out
    assert "-> 2 (a plan within the limits needs 1 or more)" in text and "model gap 0" in text
    assert main(["allocate", layers, "--mode", "optimal", "--time-limit", "1",
                 "--makespan-slack", "50"]) == 0
    text = capsys.readouterr().out
    assert "-> 0 (no plan within the limits needs fewer)" in text \
        and "solver: OPTIMAL (phase one-stream);" in text


@pytest.mark.parametrize(("floor", "final", "said"), [
    (0, 55, "-> 55; emulated"), (0, 0, "-> 0 (no plan within the limits needs fewer);"),
    (None, 4, "-> 4; emulated"), (3, 5, "-> 5 (a plan within the limits needs 3 or more);")])
def test_the_summary_leaves_out_a_bound_of_zero_below_the_plan(
        floor: int | None, final: int, said: str) -> None:
    """Found by a docs walk-through: the makespan objective's 55 events read "(a plan within
    the limits needs 0 or more)", which says nothing."""
    block = {"status": "FEASIBLE", "baseline_events": 60, "events_final": final,
             "events_bound": floor, "baseline_makespan_us": 9.0, "makespan_us": 8.0,
             "deterministic_time": 1.0}
    assert said in solver_summary(block, 1.0)
