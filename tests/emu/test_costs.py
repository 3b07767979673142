"""The cost table (YAML, package data, --cost) and the op formulas."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from emu.conftest import EXAMPLES

from streamalloc.commands.emulate import emulate_command
from streamalloc.errors import InputError
from streamalloc.ir import DataInput, GraphBuilder, TensorDesc
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu import load_cost_table, parse_cost_table
from streamalloc.runtime_emu.cost_model import CostModel, channels
from streamalloc.runtime_emu.cost_table import default_cost_table

SHIPPED = resources.files("streamalloc.runtime_emu").joinpath("costs.yaml").read_text("utf-8")


def line_of(text: str) -> int:
    """The 1-based line of the shipped table that starts with `text` (after indentation)."""
    lines = SHIPPED.splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.lstrip().startswith(text))


def test_the_shipped_table_describes_an_ascend_910() -> None:
    table = default_cost_table()
    assert table.engine("AIcoreEngine").units == 32
    # AI Core kernels spread over the cores; AI CPU, HCCL and runtime tasks take one unit
    assert table.engine("AIcoreEngine").min_core_us == 2.0
    assert table.engine("DNN_VM_AICPU_ASCEND").min_core_us is None
    assert table.engine("DNN_HCCL").min_core_us is None
    assert table.default_engine.min_core_us is None
    assert table.engine("DNN_HCCL").units == 3
    assert table.engine("DNN_VM_AICPU_ASCEND").units == 16
    assert table.engine("SomeCustomEngine") == table.default_engine
    assert table.formula("Conv2D").formula == "conv" and table.formula("Relu").formula == "bytes"
    assert table.memory["HBM"] == 32 * 2**30


def _graph(op: str, inputs: list[TensorDesc], out: TensorDesc, **attrs: object) -> Graph:
    from streamalloc.ir.attrs import AttrValue
    b = GraphBuilder("g")
    for i, desc in enumerate(inputs):
        b.add_node(f"in{i}", "Data", outputs=[desc])
    b.add_node("op", op, inputs=[DataInput(f"in{i}") for i in range(len(inputs))],
               outputs=[out], attrs={k: AttrValue("int", v) for k, v in attrs.items()})
    return b.build()


def _model(graph: Graph) -> CostModel:
    return CostModel(graph, default_cost_table())


def test_conv_flops_follow_the_textbook_formula() -> None:
    g = _graph("Conv2D", [TensorDesc((1, 3, 224, 224), "float16"),
                          TensorDesc((64, 3, 7, 7), "float16")],
               TensorDesc((1, 64, 112, 112), "float16"))
    model = _model(g)
    assert model.conv_flops(model.node("op")) == 2 * 1 * 64 * 112 * 112 * 3 * 7 * 7


def test_conv_flops_in_ge_layouts() -> None:
    # NC1HWC0 output (C = 4 x 16) and a FRACTAL_Z filter: filter elements / Cout per output
    g = _graph("Conv2D", [TensorDesc((1, 1, 224, 224, 16), "float16"),
                          TensorDesc((49, 4, 16, 16), "float16", "FRACTAL_Z")],
               TensorDesc((1, 4, 112, 112, 16), "float16", "NC1HWC0"))
    model = _model(g)
    assert model.conv_flops(model.node("op")) == 2 * (4 * 112 * 112 * 16) * (49 * 4 * 16 * 16) / 64
    assert channels(TensorDesc((1, 7, 7, 32), "float16", "NHWC")) == 32


def test_matmul_flops_are_2mnk_and_honour_transposes() -> None:
    plain = _graph("MatMul", [TensorDesc((8, 32), "float16"), TensorDesc((32, 16), "float16")],
                   TensorDesc((8, 16), "float16"))
    model = _model(plain)
    assert model.matmul_flops(model.node("op")) == 2 * 8 * 16 * 32
    gemm = _graph("Gemm", [TensorDesc((32, 8), "float32"), TensorDesc((16, 32), "float32")],
                  TensorDesc((8, 16), "float32"), transA=1, transB=1)
    model = _model(gemm)
    assert model.matmul_flops(model.node("op")) == 2 * 8 * 16 * 32
    batch = _graph("BatchMatMul", [TensorDesc((4, 8, 32), "float16"),
                                   TensorDesc((4, 32, 16), "float16")],
                   TensorDesc((4, 8, 16), "float16"))
    model = _model(batch)
    assert model.matmul_flops(model.node("op")) == 2 * 4 * 8 * 16 * 32


def test_execution_time_is_a_roofline() -> None:
    # a big square matmul is compute bound, an elementwise op memory bound (per AI core)
    n = 4096
    mm = _graph("MatMul", [TensorDesc((n, n), "float16")] * 2, TensorDesc((n, n), "float16"))
    model = _model(mm)
    assert model.exec_us(model.node("op")) == pytest.approx(2 * n**3 / 8e12 * 1e6)
    relu = _graph("Relu", [TensorDesc((1024, 1024), "float32")],
                  TensorDesc((1024, 1024), "float32"))
    model = _model(relu)
    assert model.exec_us(model.node("op")) == pytest.approx(8 * 2**20 / 3.75e10 * 1e6)


def test_collectives_cost_bytes_over_link_bandwidth_plus_latency() -> None:
    g = _graph("HcomAllReduce", [TensorDesc((1024, 1024), "float32")],
               TensorDesc((1024, 1024), "float32"))
    model = _model(g)
    assert model.exec_us(model.node("op")) == pytest.approx(10 + 2 * 4 * 2**20 / 3e10 * 1e6)


def test_unknown_shapes_fall_back_and_cost_us_overrides() -> None:
    b = GraphBuilder("g")
    b.add_node("x", "Data")
    b.add_node("conv", "Conv2D", inputs=[DataInput("x")])
    b.add_node("aicpu", "NonZero", inputs=[DataInput("x")])
    b.add_node("given", "Conv2D", inputs=[DataInput("x")], cost_us=7.5)
    model = _model(b.build())
    assert [model.exec_us(model.node(n)) for n in ("conv", "aicpu", "given")] == [10.0, 20.0, 7.5]


def test_input_descs_of_the_node_win_over_the_producer_outputs() -> None:
    b = GraphBuilder("g")
    b.add_node("x", "Data", outputs=[TensorDesc((10,), "float32")])
    b.add_node("r", "Relu", inputs=[DataInput("x")], input_descs=[TensorDesc((20,), "float32")],
               outputs=[TensorDesc((20,), "float32")])
    model = _model(b.build())
    assert model.bytes_moved(model.node("r")) == 160.0


@pytest.mark.parametrize(("old", "new", "message"), [
    ("format: streamalloc.costs/v1", "format: costs/v0",
     f":{line_of('format:')}: format: expected"),
    ("launch_us: 2.0", "launch_us: fast",
     f":{line_of('launch_us:')}: device.launch_us: expected a number >= 0"),
    ("units: 32, flops_per_s: 8.0e+12", "units: 0, flops_per_s: 8.0e+12",
     "engines.AIcoreEngine.units: expected an integer >= 1"),
    ("flops_per_s: 8.0e+12", "flops_per_s: 8.0e12",
     "(YAML reads 8.0e12 as text: write 8.0e+12)"),
    ("bytes_per_s: 3.75e+10, fallback_us: 10.0}", "bytes_per_s: 0, fallback_us: 10.0}",
     "bytes_per_s: expected a number > 0"),
    ("fallback_us: 50.0}", "fallback_us: 50.0, speed: 1}", "engines.DNN_HCCL.speed: expected one"),
    ("{units: 1, flops_per_s: 0, bytes_per_s: 1.0e+11, fallback_us: 5.0}", "{units: 1}",
     "engines.DSAEngine: expected the keys units"),
    ("Conv: conv", "Conv: winograd", "ops.Conv.formula: expected one of conv, matmul"),
    ("factor: 2.0, latency_us", "scale: 2.0, latency_us",
     "ops.HcomAllReduce.scale: expected a parameter of collective (factor, latency_us)"),
    ("default_formula: bytes", "default_formula: {formula: bytes, us: 1}",
     "a parameter of bytes (no parameters)"),
    ("format: streamalloc.costs/v1", "format: streamalloc.costs/v1\nextra: 1",
     "extra: expected one of the keys format"),
    ("min_core_us: 2.0}", "min_core_us: 0}",
     "engines.AIcoreEngine.min_core_us: expected a number > 0"),
    ("fallback_us: 50.0}", "fallback_us: 50.0, min_core: 1}",
     "engines.DNN_HCCL.min_core: expected one of the keys units, flops_per_s, bytes_per_s, "
     "fallback_us, min_core_us"),
    ("Conv: conv", "Conv: {formula: conv, block_dim: 0}",
     "ops.Conv.block_dim: expected an integer >= 1"),
    ("Conv: conv", "Conv: {formula: conv, block_dim: 2.5}",
     "ops.Conv.block_dim: expected an integer >= 1"),
])
def test_bad_cost_tables_name_file_line_and_field(tmp_path: Path, old: str, new: str,
                                                  message: str) -> None:
    assert old in SHIPPED
    path = tmp_path / "costs.yaml"
    path.write_text(SHIPPED.replace(old, new, 1))
    with pytest.raises(InputError) as err:
        load_cost_table(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_structural_cost_table_errors() -> None:
    with pytest.raises(InputError, match=r"^t\.yaml:2:1: malformed YAML: did not find expected "
                                         "node content$"):
        parse_cost_table("a: [", "t.yaml")
    with pytest.raises(InputError, match="default_engine: expected the parameters"):
        parse_cost_table("format: streamalloc.costs/v1\n", "t.yaml")
    with pytest.raises(InputError, match="cannot read the cost table"):
        load_cost_table("/nonexistent/costs.yaml")


def test_cost_option_swaps_the_table(tmp_path: Path) -> None:
    path = tmp_path / "costs.yaml"
    path.write_text(SHIPPED.replace("launch_us: 2.0", "launch_us: 0.0"))
    text, code = emulate_command(EXAMPLES / "fork_join.yaml", EXAMPLES / "fork_join.plan.json",
                                 json_out=False, trace=None, gantt=None, cost=str(path))
    assert code == 0 and "makespan 36.0 us" in text  # 42 minus the launches of a, b and d
    whole = EXAMPLES / "whole_device_costs.yaml"
    text, code = emulate_command(EXAMPLES / "fork_join.yaml", EXAMPLES / "fork_join.plan.json",
                                 json_out=False, trace=None, gantt=None, cost=str(whole))
    assert code == 0 and "AIcoreEngine      1" in text
