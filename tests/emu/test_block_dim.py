"""Block dim: a kernel holds `block_dim` units of its engine for `work on one unit / block_dim`.

Hand-computed runs (default table: 32 AI cores, launch 2 us, min_core_us 2 us for AI Core):

* FIFO: n1 (10 us, 24 cores) on stream 0, w (4 us, 16 cores) on 1, n2 (1 us, 8 cores) on 2.
  n1 runs 0-12; w does not fit (8 free) and waits; n2 would fit but queues behind w (strict
  FIFO). At 12 all 32 are free: w runs 12-18 and n2 12-15. Makespan 18.
* no starvation: a1..a3 (4 us, 16 cores) on stream 0, w (2 us, 32 cores) on 1, b1..b3 (4 us,
  16 cores) on 2. a1 runs 0-6; w waits for 32, b1 queues behind it (half the cores idle: the
  price of strict FIFO); w runs 6-10; then b1 and a2 10-16, b2 and a3 16-22, b3 22-28.
  w starts at 6, not after every narrow task; makespan 28, work bound (6*16*6 + 32*4) / 32 = 22.
* two MatMuls of 1024 x 1024 x 1024 (fp16): 2 * 1024^3 FLOPs / 8e12 = 268.435456 us of work
  on one core (the 6 MiB moved take 167.77 us: compute bound); ceil(268.44 / 2) > 32, so 32
  cores for 268.435456 / 32 = 8.388608 us, plus 2 of launch: 10.388608 each, 20.777216 for
  both, on one stream or two.
* two Relus of 64 x 64 fp16: 16 KiB moved / 37.5 GB/s = 0.436907 us, one core each; on two
  streams they overlap: makespan 2.436907 (one task).
* bounds of x -> a (10 us, 32 cores), x -> b (4 us, 8), a, b -> c (6 us, 16) on one stream:
  task times 12, 6, 8; critical path a + c = 20; work (32 * 12 + 8 * 6 + 16 * 8) / 32 = 17.5;
  makespan 26.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from emu.conftest import chain_graph, ge_mode_plan, plan_dict

from streamalloc.ir import DataInput, GraphBuilder, TensorDesc
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.runtime_emu import emulate, parse_cost_table, report_json, trace_dict
from streamalloc.runtime_emu.cost_model import CostModel, derived_block_dim
from streamalloc.runtime_emu.cost_table import EngineParams, default_cost_table
from streamalloc.runtime_emu.results import EmulationResult

DUMP = Path(__file__).resolve().parents[1] / "data/ge_dumps/ge_proto_00046_afterUBMatch.txt"
SHIPPED = resources.files("streamalloc.runtime_emu").joinpath("costs.yaml").read_text("utf-8")


def span(result: EmulationResult, name: str) -> tuple[float, float]:
    """(start, end) of the task of node `name`."""
    tid = result.program.names.index(name)
    return result.start[tid], result.end[tid]


def test_a_wide_task_waits_for_enough_units_and_holds_back_later_ones() -> None:
    graph = chain_graph("fifo", {"n1": 10, "w": 4, "n2": 1}, [], {"n1": 24, "w": 16, "n2": 8})
    result = emulate(graph, plan_dict("fifo", {0: ["n1"], 1: ["w"], 2: ["n2"]}))
    assert result.status == "ok" and result.program.widths == (24, 16, 8)
    assert [span(result, n) for n in ("n1", "w", "n2")] == [(0.0, 12.0), (12.0, 18.0),
                                                            (12.0, 15.0)]
    assert result.makespan_us == 18.0


def test_narrow_tasks_of_other_streams_cannot_starve_a_wide_one() -> None:
    costs = {n: 4.0 for n in ("a1", "a2", "a3", "b1", "b2", "b3")}
    dims = dict.fromkeys(costs, 16)
    graph = chain_graph("starve", {**costs, "w": 2.0}, [], {**dims, "w": 32})
    plan = plan_dict("starve", {0: ["a1", "a2", "a3"], 1: ["w"], 2: ["b1", "b2", "b3"]})
    result = emulate(graph, plan)
    assert span(result, "w") == (6.0, 10.0)
    assert [span(result, n)[0] for n in ("a2", "b1", "a3", "b2", "b3")] == [
        10.0, 10.0, 16.0, 16.0, 22.0]
    assert (result.makespan_us, result.bounds.work_over_units_us) == (28.0, 22.0)


def _matmuls() -> Graph:
    b = GraphBuilder("mm")
    square = TensorDesc((1024, 1024), "float16")
    b.add_node("x", "Data", outputs=[square])
    b.add_node("w", "Const", outputs=[square])
    for name in ("mm1", "mm2"):
        b.add_node(name, "MatMul", inputs=[DataInput("x"), DataInput("w")], outputs=[square])
    return b.build()


def test_two_full_width_kernels_on_two_streams_serialize() -> None:
    graph = _matmuls()
    two = emulate(graph, plan_dict("mm", {0: ["mm1"], 1: ["mm2"]}))
    one = emulate(graph, plan_dict("mm", {0: ["mm1", "mm2"]}))
    assert two.program.widths == (32, 32)
    assert two.program.durations == pytest.approx((10.388608, 10.388608))
    assert two.makespan_us == pytest.approx(20.777216) == one.makespan_us


def test_narrow_kernels_on_two_streams_overlap() -> None:
    b = GraphBuilder("small")
    b.add_node("x", "Data", outputs=[TensorDesc((64, 64), "float16")])
    for name in ("r1", "r2"):
        b.add_node(name, "Relu", inputs=[DataInput("x")], outputs=[TensorDesc((64, 64),
                                                                              "float16")])
    result = emulate(b.build(), plan_dict("small", {0: ["r1"], 1: ["r2"]}))
    assert result.program.widths == (1, 1)
    assert result.makespan_us == pytest.approx(2 + 16384 / 3.75e10 * 1e6)
    assert span(result, "r1") == span(result, "r2")


@pytest.mark.parametrize(("dims", "makespan"), [((16, 16), 12.0), ((17, 16), 24.0),
                                                ((1, 31), 12.0), ((32, 1), 24.0)])
def test_kernels_overlap_exactly_when_their_block_dims_fit_together(
        dims: tuple[int, int], makespan: float) -> None:
    graph = chain_graph("pair", {"a": 10, "b": 10}, [], dict(zip("ab", dims, strict=True)))
    result = emulate(graph, plan_dict("pair", {0: ["a"], 1: ["b"]}))
    assert (result.status, result.makespan_us) == ("ok", makespan)


def _dump_with(tmp_path: Path, key: str, value: int) -> Path:
    """The GE dump with an integer attribute added to its node res2a_branch1."""
    text = DUMP.read_text()
    anchor = '    name: "res2a_branch1"\n    type: "Conv2D"\n'
    assert text.count(anchor) == 1
    attr = f'    attr {{\n      key: "{key}"\n      value {{ i: {value} }}\n    }}\n'
    path = tmp_path / DUMP.name
    path.write_text(text.replace(anchor, anchor + attr))
    return path


def _conv_task(graph: Graph) -> tuple[EmulationResult, int, float]:
    """A run of the ge-mode plan, the tid of res2a_branch1 and its one-core work."""
    result = emulate(graph, ge_mode_plan(graph))
    work = CostModel(graph, default_cost_table()).exec_us(graph.node("res2a_branch1"))
    return result, result.program.names.index("res2a_branch1"), work


@pytest.mark.parametrize("key", ["block_dim", "tvm_blockdim"])
def test_a_ge_dump_node_with_a_block_dim_attribute_uses_it(tmp_path: Path, key: str) -> None:
    graph = load_graph(_dump_with(tmp_path, key, 4))
    assert graph.node("res2a_branch1").int_attr(key) == 4
    result, tid, work = _conv_task(graph)
    assert result.status == "ok" and result.program.widths[tid] == 4
    assert result.program.durations[tid] == pytest.approx(2 + work / 4)
    slices = [e for e in trace_dict(result)["traceEvents"] if e.get("name") == "res2a_branch1"
              and e["ph"] == "X"]
    assert {k: v for k, v in slices[0]["args"].items() if k != "critical_chain"} == {
        "type": "Conv2D", "block_dim": 4}


def test_without_the_attribute_or_with_ges_unset_value_the_block_dim_is_derived(
        tmp_path: Path) -> None:
    for graph in (load_graph(DUMP), load_graph(_dump_with(tmp_path, "tvm_blockdim", -1))):
        result, tid, work = _conv_task(graph)
        # the shipped dumps carry no block dim (they are dumped before operator compilation)
        expected = min(32, -(-work // 2))
        assert result.program.widths[tid] == expected > 1
        assert result.program.durations[tid] == pytest.approx(2 + work / expected)


def test_lower_bounds_on_a_tiny_graph_by_hand() -> None:
    graph = chain_graph("lb", {"a": 10, "b": 4, "c": 6}, [("a", "c"), ("b", "c")],
                        {"a": 32, "b": 8, "c": 16})
    result = emulate(graph, plan_dict("lb", {0: ["a", "b", "c"]}))
    assert result.program.durations == (12.0, 6.0, 8.0)
    assert result.bounds.critical_path_us == 20.0
    assert result.bounds.work_over_units_us == 17.5
    assert result.bounds.bottleneck_engine == "AIcoreEngine"
    assert result.makespan_us == 26.0
    stats = result.engine_stats()["AIcoreEngine"]
    assert stats["busy_us"] == 560.0 and stats["utilization"] == 560.0 / (32 * 26)


def test_reports_with_wide_tasks_are_byte_identical() -> None:
    graph = chain_graph("fifo", {"n1": 10, "w": 4, "n2": 1}, [], {"n1": 24, "w": 16, "n2": 8})
    plan = plan_dict("fifo", {0: ["n1"], 1: ["w"], 2: ["n2"]})
    first = report_json(emulate(graph, plan))
    assert first == report_json(emulate(graph, plan))
    assert json.loads(first)["engines"]["AIcoreEngine"]["busy_us"] == 24 * 12 + 16 * 6 + 8 * 3


def _engine(units: int, min_core: float | None) -> EngineParams:
    return EngineParams(units=units, flops_per_s=1.0, bytes_per_s=1.0, fallback_us=1.0,
                        min_core_us=min_core)


@pytest.mark.parametrize(("work", "engine", "dim"), [
    (268.4, _engine(32, 2.0), 32),    # big: every core
    (7.0, _engine(32, 2.0), 4),       # ceil(3.5)
    (8.0, _engine(32, 2.0), 4),       # exactly 2 us each: no fifth core
    (1.1, _engine(32, 0.1), 11),      # 1.1 / 0.1 is 11.000000000000002 in floats
    (0.5, _engine(32, 2.0), 1),       # below the grain: one core
    (0.0, _engine(32, 2.0), 1),       # no work still takes a core
    (500.0, _engine(16, None), 1),    # no min_core_us: one unit, as AI CPU tasks
    (500.0, _engine(1, 2.0), 1),      # a one-unit engine behaves as before
])
def test_derived_block_dim(work: float, engine: EngineParams, dim: int) -> None:
    assert derived_block_dim(work, engine) == dim


def test_the_attribute_wins_over_the_op_entry_which_wins_over_derivation() -> None:
    text = SHIPPED.replace("ops:\n", "ops:\n  Relu: {formula: bytes, block_dim: 4}\n", 1)
    table = parse_cost_table(text, "t")
    assert table.formula("Relu").block_dim == 4 and table.formula("Add").block_dim is None
    # a and b have a given time (cost_us): only the width comes from the table or attribute;
    # c asks for more cores than the engine has; d is derived (1 MiB moved, 27.96 us of work)
    graph = chain_graph("g", {"a": 3, "b": 3, "c": 3}, [], {"b": 2, "c": 64})
    model = CostModel(graph, table)
    assert [model.kernel(graph.node(n)) for n in "abc"] == [(3.0, 4), (3.0, 2), (3.0, 32)]
    assert CostModel(graph, default_cost_table()).kernel(graph.node("a")) == (3.0, 1)
    b = GraphBuilder("h")
    b.add_node("x", "Data", outputs=[TensorDesc((512, 512), "float16")])
    for name, op in (("r", "Relu"), ("s", "Sigmoid")):
        b.add_node(name, op, inputs=[DataInput("x")], outputs=[TensorDesc((512, 512),
                                                                             "float16")])
    model = CostModel(b.build(), table)
    work = 2**20 / 3.75e10 * 1e6  # 27.96 us: ceil(13.98) = 14 cores when derived
    assert model.kernel(model.node("r")) == pytest.approx((work / 4, 4))
    assert model.kernel(model.node("s")) == pytest.approx((work / 14, 14))
