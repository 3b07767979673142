"""The critical chain of an emulated run (`runtime_emu/critical_chain.py`).

* the plan of the formats' demo graph: the chain by hand (relu1, its Send, relu2's Recv, relu2,
  its Send, add's Recv, add), and its summary;
* two 32-core tasks on two streams: the second waits for the first's units, and the chain goes
  on at the task that freed them;
* the trace flags the chain's tasks, and the Gantt chart outlines them;
* property, over the random graphs and plans of `test_properties` (events or notifies, 1 to 5
  streams, engines of 1, 2 or 32 units): the chain's times add up to the makespan, each step
  starts when its cause ended (a stream's first task at 0, or when the stream is activated:
  a NOP first on a late-activated stream once broke that check), and without activation the
  chain has no gap.
"""

from __future__ import annotations

import itertools

import pytest
from emu.plan_builder import round_robin_plan
from emu.test_properties import _table, graphs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamalloc.api import plan
from streamalloc.ir import DataInput, Graph, GraphBuilder, TensorDesc
from streamalloc.ir.attrs import AttrValue
from streamalloc.ir.loaders.yaml_json import load_yaml_json
from streamalloc.runtime_emu import emulate, report_dict, trace_dict
from streamalloc.runtime_emu.critical_chain import (
    EVENT,
    STREAM,
    UNITS,
    chain_spans,
    chain_summary,
    critical_steps,
    last_task,
)
from streamalloc.runtime_emu.program import RECV, TASK
from streamalloc.runtime_emu.results import EmulationResult

EPS = 1e-6

DEMO = """\
format: streamalloc.graph/v1
name: demo
options: {ge.hcomParallel: "1"}
nodes:
  - {name: data, type: Data, outputs: [{shape: [1, 64, 56, 56], dtype: float16}]}
  - {name: relu1, type: Relu, inputs: [data], outputs: [{shape: [1, 64, 56, 56], dtype: float16}]}
  - {name: relu2, type: Relu, inputs: [relu1], attrs: {_stream_label: side},
     outputs: [{shape: [1, 64, 56, 56], dtype: float16}]}
  - {name: add, type: Add, inputs: [relu1, relu2],
     outputs: [{shape: [1, 64, 56, 56], dtype: float16}]}
  - {name: out, type: NetOutput, inputs: [add]}
"""


def _steps(result: EmulationResult) -> list[tuple[str, str]]:
    names = result.program.names
    return [(names[t], cause)
            for t, cause in critical_steps(result, last_task(result))]


def test_the_chain_of_the_demo_plan() -> None:
    graph = load_yaml_json("demo.yaml", DEMO)
    result = emulate(graph, plan(graph).to_json())
    assert result.status == "ok"
    assert _steps(result) == [("add", STREAM), ("demo_Recv_1", EVENT), ("demo_Send_1", STREAM),
                              ("relu2", STREAM), ("demo_Recv_0", EVENT),
                              ("demo_Send_0", STREAM), ("relu1", STREAM)]
    chain = chain_summary(result)
    time = {result.program.names[t]: result.end[t] - result.start[t]
            for t in range(result.program.task_count())}
    assert chain.graph_task_us == time["relu1"] + time["relu2"] + time["add"]
    assert chain.engines == {"AIcoreEngine": chain.graph_task_us}
    costs = result.table
    assert (chain.send_us, chain.recv_us) == (2 * costs.event_record_us, 2 * costs.event_wait_us)
    assert (chain.tasks, chain.gap_us, chain.event_hops, chain.unit_waits) == (7, 0.0, 2, 0)
    assert report_dict(result)["critical_chain"] == {
        "tasks": 7, "graph_task_us": round(chain.graph_task_us, 3),
        "engines": {"AIcoreEngine": round(chain.graph_task_us, 3)},
        "send_us": 2.0, "recv_us": 2.0, "gap_us": 0.0, "event_hops": 2, "unit_waits": 0}


def test_the_trace_flags_and_the_gantt_chart_outlines_the_chain() -> None:
    graph = load_yaml_json("demo.yaml", DEMO)
    result = emulate(graph, plan(graph).to_json())
    flagged = {e["name"] for e in trace_dict(result)["traceEvents"]
               if e.get("args", {}).get("critical_chain")}
    assert flagged == {name for name, _ in _steps(result)}
    spans = {result.program.names[t]: (begin, end) for t, begin, end in chain_spans(result)}
    recv = result.program.names.index("demo_Recv_1")
    assert spans["demo_Recv_1"] == (result.matched[recv][1], result.end[recv])  # from the record
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from streamalloc.runtime_emu.gantt import _chain_outline, _legend
    fig, ax = plt.subplots()
    assert _chain_outline(ax, result, {0: 0, 1: 1})
    assert len(ax.collections) == 2  # one outline per stream the chain runs on
    plt.close(fig)
    labels = [h.get_label() for h in _legend({}, set(), False, False, (), chain=True)]
    assert labels == ["critical chain"]


def _parallel_tasks(*tasks: tuple[str, float, int]) -> Graph:
    """(name, cost_us, block dim) tasks that all read one input."""
    b = GraphBuilder("wide")
    b.add_node("in", "Data", outputs=[TensorDesc((4, 64), "float16")])
    for name, cost, dim in tasks:
        b.add_node(name, "Relu", inputs=[DataInput("in")], cost_us=cost,
                   attrs={"block_dim": AttrValue("int", dim)},
                   outputs=[TensorDesc((4, 64), "float16")])
    return b.build()


def test_a_task_waiting_for_units_goes_on_at_the_task_that_freed_them() -> None:
    graph = _parallel_tasks(("a", 10.0, 32), ("b", 10.0, 32))
    result = emulate(graph, round_robin_plan(graph, 2))
    assert result.status == "ok"
    assert _steps(result) == [("b", UNITS), ("a", STREAM)]
    chain = chain_summary(result)
    assert (chain.tasks, chain.unit_waits, chain.event_hops, chain.gap_us) == (2, 1, 0, 0.0)
    assert abs(chain.graph_task_us - result.makespan_us) < EPS


def test_the_chain_follows_the_task_that_freed_the_units_not_one_still_running() -> None:
    # y (17 cores) and z (8) start at once; x (17) waits until y ends, and z runs on after
    graph = _parallel_tasks(("y", 4.0, 17), ("z", 10.0, 8), ("x", 20.0, 17))
    result = emulate(graph, round_robin_plan(graph, 3))
    assert _steps(result) == [("x", UNITS), ("y", STREAM)]
    assert abs(chain_summary(result).graph_task_us - result.makespan_us) < EPS


def assert_chain_explains_the_run(result: EmulationResult, *, activated: bool) -> None:
    """The chain from the last task back to 0: each step starts when its cause ended, and its
    times add up to the makespan."""
    program, start, end = result.program, result.start, result.end
    prev = {b: a for tids in program.stream_tids.values() for a, b in itertools.pairwise(tids)}
    stream_of = {t: sid for sid, tids in program.stream_tids.items() for t in tids}
    steps = critical_steps(result, last_task(result))
    assert end[steps[0][0]] == result.makespan_us
    for (tid, cause), (nxt, _) in zip(steps, [*steps[1:], (None, "")], strict=True):
        if cause == EVENT:
            assert program.kinds[tid] == RECV
            assert nxt == result.matched[tid][0]
            assert abs(result.matched[tid][1] - end[nxt]) < EPS  # woken by the record
        elif cause == UNITS:
            assert program.kinds[tid] == TASK
            if nxt is not None and nxt != prev.get(tid):
                assert abs(end[nxt] - start[tid]) < EPS  # the task that freed the units
            else:
                assert activated  # only a late activation leaves no task that freed them
        else:
            assert nxt == prev.get(tid)
            # a stream's first task starts at 0, or when the stream is activated
            began = end[nxt] if nxt is not None else \
                result.activated_at.get(stream_of[tid], (None, 0.0))[1]
            assert abs(start[tid] - began) < EPS
    chain = chain_summary(result)
    total = chain.graph_task_us + chain.send_us + chain.recv_us + chain.gap_us
    assert abs(total - result.makespan_us) < EPS * len(steps)
    assert chain.event_hops == sum(cause == EVENT for _, cause in steps)
    if not activated:
        assert chain.gap_us < EPS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), streams=st.integers(1, 5), notify=st.booleans(),
       activate=st.booleans(), units=st.sampled_from([1, 2, 32]))
def test_the_chain_adds_up_to_the_makespan(graph: Graph, streams: int, notify: bool,
                                           activate: bool, units: int) -> None:
    result = emulate(graph, round_robin_plan(graph, streams, notify=notify, activate=activate),
                     costs=_table(units))
    assert result.status == "ok"
    assert_chain_explains_the_run(result, activated=activate and streams > 1)
