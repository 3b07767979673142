"""Property: plans on random graphs (labels, HCCL nodes, parallel groups, subgraphs, task
capacities small enough to force splits) all pass the independent verifier, and emulate without
deadlock or violation."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_heuristic_properties import build, models

from streamalloc.api import plan, with_options
from streamalloc.errors import LimitExceeded
from streamalloc.ir.synthetic import layered_graph
from streamalloc.json_text import _plain
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.result import PLAIN_SECTIONS
from streamalloc.verify import verify_plan

SETTINGS = settings(max_examples=25, derandomize=True, deadline=None, database=None)


def check(graph_options: dict[str, str], graph) -> int:  # type: ignore[no-untyped-def]
    graph = with_options(graph, graph_options)
    try:
        document = plan(graph).to_json()
    except LimitExceeded:
        return -1  # a single node over the capacity: refused with exit 4, never a bad plan
    report = verify_plan(graph, document)
    assert report.ok, report.violations[:3]
    assert all(_plain(document[key]) for key in PLAIN_SECTIONS)  # written unchecked
    assert emulate(graph, document).status == "ok"
    return int(document["physical_stream_count"]) - int(document["logical_stream_count"])


@pytest.mark.parametrize("mode", ["multi", "single"])
@SETTINGS
@given(data=st.data(), capacity=st.sampled_from(["300", "400", "1024"]))
def test_random_models_verify(mode: str, data: st.DataObject, capacity: str) -> None:
    graph = build(data.draw(models(mode)))
    check({"streamalloc.max_task_per_stream": capacity}, graph)


@settings(max_examples=10, derandomize=True, deadline=None, database=None)
@given(seed=st.integers(0, 10_000), hcom=st.booleans(),
       parallel=st.sampled_from(["", "AIcoreEngine:3", "AIcoreEngine:2,DNN_HCCL:2"]))
def test_split_plans_verify(seed: int, hcom: bool, parallel: str) -> None:
    graph = layered_graph(250, seed=seed, label_every=7, hccl_every=40)
    options = {"streamalloc.max_task_per_stream": "300",
               "ge.hcomParallel": "1" if hcom else "0"}
    if parallel:
        options["ge.streamMaxParallelNum"] = parallel
    splits = check(options, replace(graph, options=MappingProxyType({})))
    assert splits > 0  # the capacity forces splits
