"""Constant folding at ONNX import (ir/loaders/onnx_fold.py): exact small models, the 13 bundled
ONNX models (weights in `vars`, loaded by `emulate`, no folded op left as a task) and
`import --no-fold`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from real_models import real_models

from streamalloc.cli import main
from streamalloc.commands.emulate import ge_plan
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.loaders.onnx_fold import FOLDABLE_OPS, RANDOM_OPS
from streamalloc.ir.tensor import TensorDesc
from streamalloc.memory import PlanLoader, variable_plan
from streamalloc.runtime_emu import emulate

ONNX_MODELS = [p for p in real_models() if p.suffix == ".onnx"]
FLOAT, FLOAT16, INT64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
CONSTANT_TYPES = ("Const", "Constant")


def _save(tmp_path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], inits: list[TensorProto], *,
          value_info: tuple[onnx.ValueInfoProto, ...] = ()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits, value_info=list(value_info))
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _shape(name: str, dims: list[int]) -> TensorProto:
    return numpy_helper.from_array(np.array(dims, dtype=np.int64), name=name)


def _fill(value: float, dtype: int = FLOAT) -> TensorProto:
    return helper.make_tensor("value", dtype, [1], [value])


def _weight_model(tmp_path: Path) -> Path:
    """x [2, 3] float16 + ConstantOfShape(s = [2, 3], value 0.5 float16) -> y."""
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["w"], name="fill",
                              value=_fill(0.5, FLOAT16)),
             helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return _save(tmp_path, nodes, [helper.make_tensor_value_info("x", FLOAT16, [2, 3])],
                 [helper.make_tensor_value_info("y", FLOAT16, [2, 3])], [_shape("s", [2, 3])])


def _types(graph: Graph) -> list[str]:
    return [n.type for n in graph.all_nodes()]


def test_constant_of_shape_becomes_a_const_weight(tmp_path: Path) -> None:
    graph = load_graph(_weight_model(tmp_path))
    assert _types(graph) == ["Data", "Const", "Add", "NetOutput"]
    weight = graph.node("w")  # named after its tensor, like an initializer; `s` is gone
    assert weight.outputs == (TensorDesc((2, 3), "float16"),)
    assert weight.engine == "DNN_VM_GE_LOCAL" and not weight.inputs and "value" not in weight.attrs
    assert graph.node("add").inputs == (DataInput("x", 0), DataInput("w", 0))
    plan = variable_plan(graph)
    (var,) = plan.variables.values()
    # 12 bytes; GE's compiler rounds to 64 (+32 padding, 32-aligned), a block is align512 + 1024
    assert (var.name, var.kind, var.desc.size) == ("w", "Const", 64)
    assert (var.size, plan.total_size["HBM"]) == (512 + 1024, 1536)


def test_fold_false_keeps_the_model_as_written(tmp_path: Path) -> None:
    graph = load_graph(_weight_model(tmp_path), fold=False)
    assert _types(graph) == ["Data", "Const", "ConstantOfShape", "Add", "NetOutput"]
    assert graph.node("fill").engine == "AIcoreEngine"
    assert graph.node("fill").outputs == (TensorDesc((2, 3), "float16"),)
    assert [v.name for v in variable_plan(graph).variables.values()] == ["s"]


def test_chains_fold_and_their_inputs_go(tmp_path: Path) -> None:
    # Shape(x) of a static x -> Concat with a Constant -> ConstantOfShape -> Unsqueeze -> Mul(x).
    nodes = [helper.make_node("Shape", ["x"], ["sx"], name="shape"),
             helper.make_node("Constant", [], ["one"], name="one",
                              value=numpy_helper.from_array(np.array([1], dtype=np.int64))),
             helper.make_node("Concat", ["one", "sx"], ["dims"], name="cat", axis=0),
             helper.make_node("ConstantOfShape", ["dims"], ["w"], name="fill", value=_fill(1.0)),
             helper.make_node("Squeeze", ["w", "axes"], ["w2"], name="squeeze"),
             helper.make_node("Mul", ["x", "w2"], ["y"], name="mul")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", FLOAT, [4, 8])],
                 [helper.make_tensor_value_info("y", FLOAT, [4, 8])], [_shape("axes", [0])])
    graph = load_graph(path)
    assert _types(graph) == ["Data", "Const", "Mul", "NetOutput"]
    assert graph.node("w2").outputs == (TensorDesc((4, 8), "float32"),)
    assert graph.node("mul").inputs == (DataInput("x", 0), DataInput("w2", 0))


def test_values_read_by_a_kept_node_stay(tmp_path: Path) -> None:
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["w"], name="fill", value=_fill(2.0)),
             helper.make_node("Reshape", ["x", "s"], ["xr"], name="reshape"),
             helper.make_node("Add", ["xr", "w"], ["y"], name="add")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", FLOAT, [6])],
                 [helper.make_tensor_value_info("y", FLOAT, [2, 3])], [_shape("s", [2, 3])])
    graph = load_graph(path)
    assert sorted(n.name for n in graph.all_nodes() if n.type == "Const") == ["s", "w"]
    assert graph.node("reshape").inputs == (DataInput("x", 0), DataInput("s", 0))


def test_random_ops_and_unknown_shapes_stay(tmp_path: Path) -> None:
    nodes = [helper.make_node("RandomNormal", [], ["r"], name="random", shape=[2, 3]),
             helper.make_node("RandomUniformLike", ["c"], ["u"], name="random_like"),
             helper.make_node("Shape", ["d"], ["sd"], name="shape_of_dynamic"),
             helper.make_node("ConstantOfShape", ["sd"], ["z"], name="fill_dynamic"),
             helper.make_node("Add", ["r", "u"], ["y"], name="add")]
    inits = [numpy_helper.from_array(np.zeros((2, 3), dtype=np.float32), name="c")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("d", FLOAT, ["n", 3])],
                 [helper.make_tensor_value_info("y", FLOAT, [2, 3]),
                  helper.make_tensor_value_info("z", FLOAT, None)], inits)
    graph = load_graph(path)
    assert _types(graph) == _types(load_graph(path, fold=False))
    assert {"RandomNormal", "RandomUniformLike", "Shape", "ConstantOfShape"} <= set(_types(graph))
    assert not FOLDABLE_OPS & RANDOM_OPS


def test_multi_output_and_subgraph_nodes_fold(tmp_path: Path) -> None:
    branch = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["bs"], ["bw"], name="body_fill", value=_fill(1.0)),
         helper.make_node("Add", ["a", "bw"], ["bo"], name="body_add")],
        "then", [], [helper.make_tensor_value_info("bo", FLOAT, [2])], [_shape("bs", [2])])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["eo"], name="else_id")],
                              "else", [], [helper.make_tensor_value_info("eo", FLOAT, [2])])
    nodes = [helper.make_node("Split", ["c"], ["c0", "c1"], name="split", axis=0),
             helper.make_node("Sub", ["x", "c0"], ["a0"], name="sub"),
             helper.make_node("Add", ["a0", "c1"], ["a"], name="add"),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=branch,
                              else_branch=other)]
    inits = [numpy_helper.from_array(np.ones(4, dtype=np.float32), name="c")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", FLOAT, [2]),
                                   helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                 [helper.make_tensor_value_info("y", FLOAT, [2])], inits)
    graph = load_graph(path)
    assert graph.node("c0").type == graph.node("c1").type == "Const"
    assert graph.node("c0").outputs == (TensorDesc((2,), "float32"),)
    assert "c" not in {n.name for n in graph.all_nodes()}
    assert graph.node("bw").type == "Const" and graph.node("bw").graph == "if/then_branch"
    assert "ConstantOfShape" not in _types(graph)


def test_an_outer_value_read_two_bodies_down_stays_when_the_outer_graph_folds(
        tmp_path: Path) -> None:
    """`s` feeds a fold of the root and is read two bodies down, so it stays; what each body
    reads is gathered once as it folds (a walk of every body per enclosing graph took nesting
    depth x size)."""
    deepest = helper.make_graph([helper.make_node("Identity", ["s"], ["d_o"], name="d_id")],
                                "deep", [], [helper.make_tensor_value_info("d_o", INT64, [1])])
    middle = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["ms"], ["mw"], name="mid_fill", value=_fill(1.0)),
         helper.make_node("Add", ["k", "mw"], ["mo"], name="mid_add"),
         helper.make_node("If", ["cond"], ["my"], name="mid_if", then_branch=deepest,
                          else_branch=deepest)],
        "mid", [], [helper.make_tensor_value_info("my", INT64, [1]),
                    helper.make_tensor_value_info("mo", FLOAT, [1])], [_shape("ms", [1])])
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["w"], name="fill", value=_fill(2.0)),
             helper.make_node("Add", ["x", "w"], ["a"], name="add"),
             helper.make_node("If", ["cond"], ["y", "z"], name="if", then_branch=middle,
                              else_branch=middle)]
    inits = [_shape("s", [1]), numpy_helper.from_array(np.ones(1, dtype=np.float32), name="k")]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", FLOAT, [1]),
                                   helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                 [helper.make_tensor_value_info("a", FLOAT, [1]),
                  helper.make_tensor_value_info("y", INT64, [1]),
                  helper.make_tensor_value_info("z", FLOAT, [1])], inits)
    graph = load_graph(path)
    names = {n.name for n in graph.all_nodes()}
    assert {"s", "k"} <= names  # read by bodies below the folds
    assert "ms" not in names  # read by the middle body's fold only
    assert graph.node("w").type == graph.node("mw").type == "Const"
    assert "ConstantOfShape" not in _types(graph)


@cache
def _folded(path: Path) -> Graph:
    return load_graph(path)


def _foldable_left(graph: Graph) -> list[str]:
    """Nodes a fold would take: a foldable op type reading constants only."""
    kind = {n.name: n.type for n in graph.all_nodes()}
    return [n.name for n in graph.all_nodes() if n.type in FOLDABLE_OPS and n.inputs
            and all(r is not None and kind[r.src] in CONSTANT_TYPES for r in n.inputs)]


def test_all_13_onnx_models_are_there() -> None:
    assert len(ONNX_MODELS) == 13


@pytest.mark.parametrize("path", ONNX_MODELS, ids=[p.stem for p in ONNX_MODELS])
def test_real_model_weights_are_loaded_variables(path: Path) -> None:
    graph = _folded(path)
    assert "ConstantOfShape" not in _types(graph) and not _foldable_left(graph)
    plan = variable_plan(graph)
    variables = PlanLoader(plan, device_id=0)
    result = emulate(graph, ge_plan(graph), variables=variables)
    assert result.status == "ok"
    assert result.variables is not None
    assert result.variables["loader"]["allocated_bytes"] == plan.total_size
    assert result.variables["extent"]["HBM"] == plan.total_size["HBM"]
    assert "ConstantOfShape" not in result.program.types
    as_written = variable_plan(load_graph(path, fold=False)).total_size["HBM"]
    assert plan.total_size["HBM"] > 10 * as_written  # the weights are in the plan now


def test_bert_weights_are_hundreds_of_megabytes() -> None:
    bert = next(p for p in ONNX_MODELS if p.stem == "bert_base")
    plan = variable_plan(_folded(bert))
    assert plan.graph == "main_graph" and "embeddings.word_embeddings.weight" in plan.variables
    # 109,482,240 float32 elements of weights (tests/data/onnx/README.md), except that the
    # position table [512, 768] folds with the Gather of its constant position ids into the
    # [1, 128, 768] rows the model reads
    weights = (109_482_240 - 512 * 768 + 128 * 768) * 4
    rows = plan.variables["/embeddings/position_embeddings/Gather_output_0"]
    assert rows.kind == "Const" and rows.desc.size >= 128 * 768 * 4
    assert "embeddings.position_embeddings.weight" not in plan.variables
    assert weights < plan.total_size["HBM"] < weights * 1.001


def test_import_no_fold_keeps_the_graph_as_written(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    model = ONNX_MODELS[0]  # light_bvlc_alexnet: 16 ConstantOfShape weights
    kept, folded = tmp_path / "kept.yaml", tmp_path / "folded.yaml"
    assert main(["import", str(model), "-o", str(kept), "--no-fold"]) == 0
    assert main(["import", str(model), "-o", str(folded)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {kept}: graph bvlc_alexnet, 59 nodes, 0 subgraphs",
        f"wrote {folded}: graph bvlc_alexnet, 43 nodes, 0 subgraphs"]
    assert _types(load_graph(kept)).count("ConstantOfShape") == 16
    assert _types(load_graph(folded)).count("ConstantOfShape") == 0
    def edges(graph: Graph) -> list[tuple[str, str, tuple[DataInput | None, ...]]]:
        return [(n.name, n.type, n.inputs) for n in graph.all_nodes()]
    assert edges(load_graph(kept)) == edges(load_graph(model, fold=False))
    assert edges(load_graph(folded)) == edges(load_graph(model))
