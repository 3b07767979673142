"""The progress line of long runs: shown on a terminal after the delay, never on a file."""

from __future__ import annotations

import functools
import io
import sys
import time
from pathlib import Path

import pytest

from streamalloc.background import can_start_processes
from streamalloc.commands import compare as compare_module
from streamalloc.commands.compare import CompareSettings
from streamalloc.optimal import OptimalOptions
from streamalloc.outputs import Progress

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "graphs" / "train_step.yaml"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_run_on_a_terminal_shows_progress_and_clears_it() -> None:
    stream = Terminal()
    with Progress("allocate", stream, after=0.05, every=0.02):
        time.sleep(0.3)
    text = stream.getvalue()
    assert "\rstreamalloc allocate: 0 s" in text
    assert text.endswith("\r\x1b[K")  # the line is cleared at the end


def test_a_short_run_or_a_file_shows_nothing() -> None:
    quick = Terminal()
    with Progress("allocate", quick, after=5.0):
        pass
    assert quick.getvalue() == ""
    file = io.StringIO()
    with Progress("allocate", file, after=0.0, every=0.01):
        time.sleep(0.05)
    assert file.getvalue() == ""


def test_compare_shows_which_graph_and_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress line of `compare` names the graph (k of n) and the mode or frontier point
    running, also for one graph (its optimal runs are the long ones)."""
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(compare_module, "Progress",
                        functools.partial(Progress, after=0.0, every=0.001))
    settings = CompareSettings(("ge", "optimal"), None, {}, OptimalOptions(time_limit=0.3),
                               frontier=True)
    compare_module.compare([str(EXAMPLE)], settings)
    text = stream.getvalue()
    assert "compare 1/1 train_step: optimal" in text
    assert "compare 1/1 train_step: frontier, makespan objective" in text
    assert text.endswith("\r\x1b[K")


def test_compare_with_jobs_counts_its_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --jobs the progress line counts the jobs done, running and waiting (the frontier's
    budgets join the queue when the plans they follow from have run)."""
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(compare_module, "Progress",
                        functools.partial(Progress, after=0.0, every=0.001))
    settings = CompareSettings(("ge", "optimal"), None, {}, OptimalOptions(time_limit=0.3),
                               frontier=True, jobs=2)
    compare_module.compare([str(EXAMPLE)], settings)
    text = stream.getvalue()
    if can_start_processes():
        assert "compare: 0 jobs done, 2 running, 5 waiting" in text  # of 7: rows, 6 points
    assert text.endswith("\r\x1b[K")
