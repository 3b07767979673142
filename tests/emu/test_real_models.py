"""Every real model (ONNX light models, transformers, GE dumps) emulates with status ok.

Plans come from the `make_plan` fixture: the ge-mode allocator once it lands, a round-robin
stand-in until then.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from emu.conftest import PlanMaker
from real_models import real_models

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, report_json

MODELS = real_models()


@cache
def graph_of(path: Path) -> Graph:
    return load_graph(path)


def test_all_17_real_models_are_there() -> None:
    # 9 ONNX light models, 4 transformers, 4 GE dumps (the names are pinned in
    # tests/test_real_models.py); the truncated test ids below must stay distinct.
    assert Counter(p.parent.name for p in MODELS) == {"light": 9, "onnx": 4, "ge_dumps": 4}
    assert len({p.name[:40] for p in MODELS}) == 17


@pytest.mark.parametrize("path", MODELS, ids=[p.name[:40] for p in MODELS])
def test_real_model_emulates_ok_above_its_lower_bounds(make_plan: PlanMaker, path: Path) -> None:
    graph = graph_of(path)
    plan = make_plan(graph)
    result = emulate(graph, plan)
    assert result.status == "ok", (result.deadlock[:2], result.violation_records()[:2])
    assert result.makespan_us >= result.bounds.critical_path_us
    assert result.makespan_us >= result.bounds.work_over_units_us
    assert report_json(result) == report_json(emulate(graph, plan))
