"""Properties over random graphs and plans.

* every plan of the `make_plan` fixture (the ge-mode allocator once it lands) runs without
  deadlock or violation, and never faster than either lower bound;
* random graphs carry random block dims (1 to 64, capped at the engine's units), so wide tasks
  wait for units in every property below;
* the round-robin builder's plans too, on 1-5 streams, with events or notifies, with stream
  activation, and with few engine units (contention);
* removing the events of a plan with a cross-stream edge is always reported, never run as fine;
* a run is deterministic: the same report, byte for byte.
"""

from __future__ import annotations

from typing import Any

from emu.conftest import PlanMaker
from emu.plan_builder import round_robin_plan, without_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamalloc.ir import DataInput, Graph, GraphBuilder, TensorDesc
from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.synthetic import layered_graph
from streamalloc.runtime_emu import emulate, parse_cost_table, report_json
from streamalloc.runtime_emu.cost_table import CostTable, default_cost_table
from streamalloc.runtime_emu.results import EmulationResult

OPS = ["Relu", "Conv2D", "MatMul", "Add", "HcomAllReduce", "NonZero", "Reshape", "Cast"]
EPS = 1e-6


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    """Random DAGs: data sources, compute/collective/AI CPU/no-task ops, data+control edges."""
    n = draw(st.integers(1, 18))
    b = GraphBuilder("rand")
    names = ["x"]
    b.add_node("x", "Data", outputs=[TensorDesc((4, 64), "float16")])
    for i in range(n):
        name = f"n{i}"
        inputs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        controls = draw(st.lists(st.sampled_from(names[1:]), max_size=1)) if i > 1 else []
        controls = [c for c in controls if c not in inputs]
        cost = draw(st.one_of(st.none(), st.sampled_from([0.5, 1.0, 3.0, 10.0])))
        dim = draw(st.one_of(st.none(), st.sampled_from([1, 8, 17, 32, 64])))
        b.add_node(name, draw(st.sampled_from(OPS)), inputs=[DataInput(s) for s in inputs],
                   control_inputs=controls, cost_us=cost,
                   attrs=None if dim is None else {"block_dim": AttrValue("int", dim)},
                   outputs=[TensorDesc((4, 64), "float16")])
        names.append(name)
    return b.build()


def _table(units: int) -> CostTable:
    if units == 32:
        return default_cost_table()
    from importlib import resources
    text = resources.files("streamalloc.runtime_emu").joinpath("costs.yaml").read_text()
    return parse_cost_table(text.replace("units: 32, flops_per_s: 8.0e+12",
                                         f"units: {units}, flops_per_s: 8.0e+12", 1), "t")


def assert_sound(result: EmulationResult) -> None:
    """ok, nothing lost or left over, and no faster than the lower bounds."""
    assert result.status == "ok", (result.deadlock, result.violation_records()[:3])
    assert result.lost_records == 0 and result.unconsumed == ()
    assert result.makespan_us >= result.bounds.critical_path_us - EPS
    assert result.makespan_us >= result.bounds.work_over_units_us - EPS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs())
def test_every_plan_of_the_plan_maker_runs_clean(make_plan: PlanMaker, graph: Graph) -> None:
    assert_sound(emulate(graph, make_plan(graph)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), streams=st.integers(1, 5), notify=st.booleans(),
       activate=st.booleans(), units=st.sampled_from([1, 2, 32]))
def test_builder_plans_run_clean_and_respect_the_bounds(graph: Graph, streams: int,
                                                        notify: bool, activate: bool,
                                                        units: int) -> None:
    plan = round_robin_plan(graph, streams, notify=notify, activate=activate)
    result = emulate(graph, plan, costs=_table(units))
    assert_sound(result)
    waits = result.waits[1] if notify else result.waits[0]
    assert waits == sum(1 for n in plan["sync_nodes"] if n["type"].startswith("Recv"))


def _cross_stream_edge(result: EmulationResult) -> bool:
    p = result.program
    return any(p.streams[u] != p.streams[v] for v in p.topo for u in p.preds[v])


@settings(max_examples=100, deadline=None)
@given(graph=graphs(), streams=st.integers(2, 4))
def test_removing_the_events_is_always_reported(graph: Graph, streams: int) -> None:
    result = emulate(graph, without_sync(round_robin_plan(graph, streams)))
    if _cross_stream_edge(result):
        assert result.status == "violation"
    else:
        assert result.status == "ok"


@settings(max_examples=40, deadline=None)
@given(graph=graphs(), streams=st.integers(1, 4))
def test_one_stream_runs_the_sum_and_reports_are_deterministic(graph: Graph,
                                                               streams: int) -> None:
    single = emulate(graph, round_robin_plan(graph, 1))
    assert abs(single.makespan_us - sum(single.program.durations)) < EPS
    plan: dict[str, Any] = round_robin_plan(graph, streams)
    assert report_json(emulate(graph, plan)) == report_json(emulate(graph, plan))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), streams=st.integers(2, 6))
def test_synthetic_networks_run_clean(seed: int, streams: int) -> None:
    graph = layered_graph(400, seed=seed, label_every=5)
    assert_sound(emulate(graph, round_robin_plan(graph, streams, activate=True)))
