"""The events objective's plans tried before CP-SAT (`optimal.aside_first`): written at once
where they reach the events bound, and otherwise leaving the search's plan as it was."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

import streamalloc.optimal.search as search_module
from streamalloc import api
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.training import training_step
from streamalloc.optimal import OptimalOptions
from streamalloc.optimal.evaluate import Measured
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.order import Order
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

ROOT = Path(__file__).resolve().parents[1]

LIGHT = Path(__import__("onnx").__file__).parent / "backend" / "test" / "data" / "light"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def _no_aside_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "aside_first", lambda *_, **__: None)


def test_a_training_step_at_its_bound_needs_no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2-layer transformer step: its AllReduces beside the compute, in an order that
    batches their waits, need 5 events, the bound; written without CP-SAT. The search finds
    no fewer."""
    sys.path.insert(0, str(ROOT))
    from bench.stacks import transformer_training_step
    graph = transformer_training_step(2).with_options(PARALLEL)
    rules = api.default_rule_set(graph)
    plan, report = api.optimal_plan(graph, None, OptimalOptions(time_limit=2.0))
    assert (report.status, report.phase, report.deterministic_time) == \
        ("OPTIMAL", "one-stream+engine+waits", 0.0)
    assert plan.event_count + plan.notify_count == report.events_bound == 5
    assert verify_plan(graph, plan.to_json(), rules=rules).exit_code == 0
    assert emulate(graph, plan.to_json(), costs=default_cost_table()).status == "ok"
    _no_aside_first(monkeypatch)
    searched, again = api.optimal_plan(graph, None, OptimalOptions(time_limit=2.0))
    assert searched.event_count + searched.notify_count == 5
    assert again.deterministic_time > 0.0


def test_below_the_bound_the_search_writes_the_same_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The SqueezeNet step needs 15 events against a bound of 14: the plans tried first do
    not reach it, and their runs, kept for the choice after the search, leave its plan byte
    for byte as the search alone writes it."""
    graph = training_step(load_graph(LIGHT / "light_squeezenet.onnx")).with_options(PARALLEL)
    options = OptimalOptions(time_limit=2.0)
    first, report = api.optimal_plan(graph, None, options)
    assert report.events_bound is not None \
        and first.event_count + first.notify_count > report.events_bound
    _no_aside_first(monkeypatch)
    alone, _ = api.optimal_plan(graph, None, options)
    assert first.to_json() == alone.to_json()


def test_the_choice_after_the_search_runs_no_plan_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The SqueezeNet step, whose plans at the bounds miss the bound: the choice after the
    search meets their assignments again, in the same orders that batch waits and with
    their large tasks grouped, and takes their runs instead of running them once more."""
    graph = training_step(load_graph(LIGHT / "light_squeezenet.onnx")).with_options(PARALLEL)
    runs: Counter[tuple[tuple[int, ...], object]] = Counter()
    outcome = Evaluator.outcome

    def counted(self: Evaluator, streams: Sequence[int], order: Order | None = None
                ) -> Measured | None:
        labels: dict[int, int] = {}
        runs[tuple(labels.setdefault(s, len(labels)) for s in streams), order] += 1
        return outcome(self, streams, order)

    monkeypatch.setattr(Evaluator, "outcome", counted)
    plan, report = api.optimal_plan(graph, None, OptimalOptions(time_limit=2.0))
    assert report.phase == "one-stream+engine+waits+grouped"
    assert report.deterministic_time > 0.0  # the search and the choice after it ran
    assert len(runs) > 100 and max(runs.values()) == 1
    assert verify_plan(graph, plan.to_json(), rules=api.default_rule_set(graph)).exit_code == 0
