"""The searches emulate a plan without writing its document (`evaluator.emulated_form`): what
they emulate must be exactly what the emulator reads from the document, on plans with every
kind of generated task (split events, notifies, switch StreamActives, label activation,
attached streams; `split_graphs.split_graph`) and in ge and minimal sync."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from split_graphs import features, split_graph
from test_minimal_sync import SWITCH_QUIRK

from streamalloc.api import plan
from streamalloc.errors import LimitExceeded
from streamalloc.optimal.evaluator import emulated_form
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.plan import plan_from_dict

SETTINGS = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(rng=st.randoms(use_true_random=False), sync=st.sampled_from(["ge", "minimal"]))
def test_the_emulated_form_is_the_plan_document_as_the_emulator_reads_it(
        rng: random.Random, sync: str) -> None:
    graph = split_graph(rng)
    try:
        synced = plan(graph, mode="preset", sync=sync)
    except LimitExceeded:  # a node with its own events larger than a stream
        return
    made, read = emulated_form(synced), plan_from_dict(synced.to_json())
    assert made == read
    assert list(made.streams) == list(read.streams)  # the order the streams start in
    assert list(made.sync_nodes) == list(read.sync_nodes)
    assert emulate(graph, made).makespan_us == emulate(graph, read).makespan_us


def test_the_property_meets_every_kind_of_generated_task() -> None:
    seen: set[str] = set()
    for seed in range(60):
        seen |= features(split_graph(random.Random(seed)))
    assert seen >= {"control-flow", "label-activation", "rts-label", "attached", "notify"}


@pytest.mark.parametrize("sync", ["ge", "minimal"])
def test_the_emulated_form_keeps_a_switchs_stream_active(sync: str) -> None:
    """Label T covers two streams, so switch handling gives the switch a StreamActive of its
    own: a generated task with no event id (the document's, read back, None)."""
    synced = plan(SWITCH_QUIRK, mode="preset", sync=sync)
    assert "StreamActive" in {n.type for n in synced.sync_nodes}
    assert emulated_form(synced) == plan_from_dict(synced.to_json())
