"""Synthetic training steps (streamalloc.ir.training, `streamalloc train-step`): exact structure
on a hand-built model; counts, weights, order, determinism and ge-mode plans on ResNet-50."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx
import pytest

from streamalloc import api
from streamalloc.cli import main
from streamalloc.errors import GraphLoadError, UsageError
from streamalloc.ir import DataInput, Graph, GraphBuilder, TensorDesc
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.serialize import dump_yaml
from streamalloc.ir.training import training_step
from streamalloc.verify import verify_plan

RESNET50 = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
BACKWARD = ("grad/", "wgrad/", "aicpu/", "allreduce/", "update/")


def _desc(*shape: int, dtype: str = "float16") -> list[TensorDesc]:
    return [TensorDesc(tuple(shape), dtype)]


def small_model(shared: bool = False) -> Graph:
    """x -> mm1(w1) -> add(b1) -> relu -> {mm2(w2), sig} -> NetOutput; optionally w1 tied."""
    b = GraphBuilder("mlp")
    b.add_node("x", "Data", outputs=_desc(2, 8))
    b.add_node("w1", "Const", outputs=_desc(8, 16))
    b.add_node("b1", "Const", outputs=_desc(16))
    b.add_node("w2", "Variable", outputs=_desc(16, 4))
    b.add_node("shape", "Const", outputs=_desc(2, dtype="int64"))
    b.add_node("mm1", "MatMul", inputs=[DataInput("x"), DataInput("w1")], outputs=_desc(2, 16))
    b.add_node("add", "Add", inputs=[DataInput("mm1"), DataInput("b1")], outputs=_desc(2, 16))
    b.add_node("relu", "Relu", inputs=[DataInput("add")], outputs=_desc(2, 16))
    b.add_node("mm2", "MatMul", inputs=[DataInput("relu"), DataInput("w2")], outputs=_desc(2, 4))
    b.add_node("sig", "Sigmoid", inputs=[DataInput("relu")], outputs=_desc(2, 16))
    last = "sig"
    if shared:  # reshape (shape input: int64, not a weight) and a second use of w1
        b.add_node("flat", "Reshape", inputs=[DataInput("sig"), DataInput("shape")],
                   outputs=_desc(4, 8))
        b.add_node("mm3", "MatMul", inputs=[DataInput("flat"), DataInput("w1")],
                   outputs=_desc(4, 16))
        last = "mm3"
    b.add_node("out", "NetOutput", inputs=[DataInput("mm2"), DataInput(last)])
    return b.build()


def _new_nodes(graph: Graph) -> dict[str, tuple[str, list[str]]]:
    return {n.name: (n.type, [str(i) for i in n.inputs]) for n in graph.root.nodes
            if n.name.startswith((*BACKWARD, "loss", "optimizer/", "out"))}


def test_small_model_exact_structure() -> None:
    step = training_step(small_model(), aicpu_ops=0)
    assert step.name == "mlp_train"
    assert [n.name for n in step.root.nodes] == [
        "x", "w1", "b1", "w2", "shape", "mm1", "add", "relu", "mm2", "sig",
        "loss", "optimizer/learning_rate",
        "grad/sig", "grad/mm2", "wgrad/mm2", "allreduce/w2", "update/w2",
        "grad/relu", "grad/add", "wgrad/add", "allreduce/b1", "update/b1",
        "grad/mm1", "wgrad/mm1", "allreduce/w1", "update/w1", "out"]
    lr = "optimizer/learning_rate:0"
    assert _new_nodes(step) == {
        "loss": ("ReduceMean", ["mm2:0", "sig:0"]),
        "optimizer/learning_rate": ("Const", []),
        "grad/sig": ("SigmoidGrad", ["sig:0", "loss:0"]),
        "grad/mm2": ("MatMul", ["mm2:0", "w2:0", "loss:0"]),
        "wgrad/mm2": ("MatMul", ["relu:0", "mm2:0", "loss:0"]),
        "allreduce/w2": ("HcomAllReduce", ["wgrad/mm2:0"]),
        "update/w2": ("ApplyGradientDescent", ["w2:0", lr, "allreduce/w2:0"]),
        "grad/relu": ("ReluGrad", ["relu:0", "grad/mm2:0", "grad/sig:0"]),
        "grad/add": ("AddGrad", ["add:0", "b1:0", "grad/relu:0"]),
        "wgrad/add": ("AddWeightGrad", ["add:0", "mm1:0", "grad/relu:0"]),
        "allreduce/b1": ("HcomAllReduce", ["wgrad/add:0"]),
        "update/b1": ("ApplyGradientDescent", ["b1:0", lr, "allreduce/b1:0"]),
        "grad/mm1": ("MatMul", ["mm1:0", "w1:0", "grad/add:0"]),
        "wgrad/mm1": ("MatMul", ["x:0", "mm1:0", "grad/add:0"]),
        "allreduce/w1": ("HcomAllReduce", ["wgrad/mm1:0"]),
        "update/w1": ("ApplyGradientDescent", ["w1:0", lr, "allreduce/w1:0"]),
        "out": ("NetOutput", ["mm2:0", "sig:0", "loss:0", "update/w2:0", "update/b1:0",
                              "update/w1:0"]),
    }
    node = step.root.node
    assert node("grad/mm1").outputs == tuple(_desc(2, 8))  # dX is shaped like x
    assert node("wgrad/mm1").outputs == tuple(_desc(8, 16))  # dW like w1
    assert node("wgrad/mm1").attr("transpose_x1") is True
    assert node("allreduce/w1").attrs["fusion"].kind == "int"
    assert node("allreduce/w1").attr("fusion") == 1
    assert node("update/w2").outputs == tuple(_desc(16, 4))
    assert node("loss").outputs == (TensorDesc((), "float16"),)
    engines = Counter(n.engine for n in step.root.nodes if n.name.startswith(BACKWARD))
    assert engines == {"AIcoreEngine": 11, "DNN_HCCL": 3}


def test_shared_weight_reduced_once_and_int_constants_are_not_weights() -> None:
    step = training_step(small_model(shared=True), aicpu_ops=0)
    node = step.root.node
    assert node("grad/flat").type == "Reshape"  # a view's gradient is a view
    assert [str(i) for i in node("grad/flat").inputs] == ["flat:0", "grad/mm3:0"]
    assert [str(i) for i in node("allreduce/w1").inputs] == ["wgrad/mm3:0", "wgrad/mm1:0"]
    updates = [n.name for n in step.root.nodes if n.type == "ApplyGradientDescent"]
    assert updates == ["update/w2", "update/b1", "update/w1"]  # no update of `shape`


def test_bucketed_allreduce() -> None:
    step = training_step(small_model(), allreduce="bucketed", bucket=2, aicpu_ops=0)
    node = step.root.node
    assert [str(i) for i in node("allreduce/bucket_0").inputs] == ["wgrad/mm2:0", "wgrad/add:0"]
    assert [str(i) for i in node("allreduce/bucket_1").inputs] == ["wgrad/mm1:0"]
    assert len(node("allreduce/bucket_0").outputs) == 2
    assert [str(i) for i in node("update/b1").inputs][2] == "allreduce/bucket_0:1"
    assert [str(i) for i in node("update/w1").inputs][2] == "allreduce/bucket_1:0"
    assert node("allreduce/bucket_1").attr("fusion") == 1


def test_aicpu_checks_sit_on_the_backward_chain() -> None:
    base = training_step(small_model(), aicpu_ops=0)
    step = training_step(small_model(), aicpu_ops=1, seed=3)
    checks = [n for n in step.root.nodes if n.name.startswith("aicpu/")]
    assert len(checks) == 1 and checks[0].engine == "DNN_VM_AICPU_ASCEND"
    grad = "grad/" + checks[0].name.removeprefix("aicpu/")
    assert [str(i) for i in checks[0].inputs] == [f"{grad}:0"]
    readers = [n.name for n in step.root.nodes if DataInput(checks[0].name) in n.inputs]
    assert readers and all(DataInput(grad) not in step.root.node(r).inputs for r in readers)
    assert step.node_count() == base.node_count() + 1
    # at most one check per grad node whose gradient flows on (4 of 5 here); types rotate
    many = training_step(small_model(), aicpu_ops=10)
    assert [n.type for n in many.root.nodes if n.name.startswith("aicpu/")] == \
        ["NonZero", "Unique", "Where", "NonZero"]
    assert "aicpu/mm1" not in many.root.index  # dX of mm1 flows nowhere
    seeds = {tuple(n.name for n in training_step(small_model(), aicpu_ops=2, seed=s)
                   .root.nodes if n.name.startswith("aicpu/")) for s in range(8)}
    assert len(seeds) > 1


def test_errors() -> None:
    with pytest.raises(UsageError):
        training_step(small_model(), allreduce="ring")
    with pytest.raises(UsageError):
        training_step(small_model(), bucket=0)
    b = GraphBuilder("nothing")
    b.add_node("x", "Data")
    b.add_node("s", "Shape", inputs=[DataInput("x")], outputs=_desc(2, dtype="int64"))
    b.add_node("out", "NetOutput", inputs=[DataInput("s")])
    with pytest.raises(GraphLoadError, match="nothing to train"):
        training_step(b.build())


@pytest.fixture(scope="module")
def resnet() -> Graph:
    return training_step(load_graph(RESNET50))


def test_resnet50_counts(resnet: Graph) -> None:
    prefixes = Counter(n.name.split("/")[0] for n in resnet.root.nodes
                       if n.name.startswith(BACKWARD))
    # 176 nodes with gradients: 53 Conv, 53 BatchNormalization, 49 Relu, 16 Sum, 5 others;
    # 161 weights: 53 conv filters, 53 x 2 batch norm scale/offset, Gemm weight and bias
    assert prefixes == {"grad": 176, "wgrad": 107, "allreduce": 161, "update": 161, "aicpu": 3}
    # 447 forward nodes: its 239 ConstantOfShape weights fold into Const weights at import
    assert resnet.node_count() == 447 + 176 + 107 + 161 + 161 + 3 + 2  # + loss, learning rate
    assert Counter(n.engine for n in resnet.all_nodes()) == {
        "AIcoreEngine": 619, "DNN_VM_GE_LOCAL": 274, "DNN_HCCL": 161, "DNN_VM_AICPU_ASCEND": 3}
    assert resnet.subgraphs == {} and resnet.node_order == "ge"


def test_resnet50_weights_reduced_and_updated_once(resnet: Graph) -> None:
    root = resnet.root
    updates = [n for n in root.nodes if n.type == "ApplyGradientDescent"]
    weights = Counter(n.inputs[0] for n in updates)
    assert len(weights) == 161 and set(weights.values()) == {1}
    for weight in weights:
        assert root.node(weight.src).type in ("Const", "ConstantOfShape")
        assert root.node(weight.src).outputs[0].dtype == "float32"
    for node in root.nodes:
        if node.type == "HcomAllReduce":
            assert node.attrs["fusion"].kind == "int" and node.attr("fusion") == 1
            consumers = root.consumers[node.name]
            assert len(consumers) == 1 and root.node(consumers[0].node).type == \
                "ApplyGradientDescent"
            assert all(i is not None and i.src.startswith("wgrad/") for i in node.inputs)
    for update in updates:
        assert root.node(update.inputs[2].src).type == "HcomAllReduce"  # type: ignore[union-attr]


def test_resnet50_backward_after_forward(resnet: Graph) -> None:
    index = resnet.root.index
    backward = [n.name for n in resnet.root.nodes if n.name.startswith(("grad/", "wgrad/"))]
    assert backward
    for name in backward:
        assert index[name] > index[name.split("/", 1)[1]]
    for node in resnet.root.nodes:  # G-order is topological: every input comes earlier
        assert all(index[i.src] < index[node.name] for i in node.data_sources())


def test_resnet50_deterministic_and_round_trips(resnet: Graph, tmp_path: Path) -> None:
    text = dump_yaml(resnet)
    assert dump_yaml(training_step(load_graph(RESNET50))) == text
    assert dump_yaml(training_step(load_graph(RESNET50), seed=1)) != text
    path = tmp_path / "step.yaml"
    path.write_text(text, encoding="utf-8")
    assert dump_yaml(load_graph(path)) == text


@pytest.mark.parametrize("options", [{}, PARALLEL], ids=["default", "parallel"])
def test_resnet50_plans_and_verifies(resnet: Graph, options: dict[str, str]) -> None:
    graph = resnet.with_options(options)
    plan = api.plan(graph)
    document = plan.to_json()
    assert verify_plan(graph, document).exit_code == 0
    # default: HCCL and AI Core (3 before constant folding at import, when the ConstantOfShape
    # weights were AI Core work: the Reshape n173 and its gradient took a stream of their own)
    assert document["logical_stream_count"] == (10 if options else 2)


def test_resnet50_hcom_parallel_moves_allreduce_successors(resnet: Graph) -> None:
    before = api.allocate(resnet)
    after = api.allocate(resnet.with_options({"ge.hcomParallel": "1"}))
    updates = [n.name for n in resnet.root.nodes if n.name.startswith("update/")]
    others = [n.name for n in resnet.root.nodes
              if n.name.startswith(("grad/", "wgrad/")) and n.engine == "AIcoreEngine"]
    assert {before.stream(u) for u in updates} <= {before.stream(o) for o in others}
    moved = {after.stream(u) for u in updates}
    assert moved.isdisjoint({after.stream(o) for o in others})
    assert all(after.nodes[u].rule == "allreduce-parallel" for u in updates)


def test_cli_train_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "mlp.yaml"
    model.write_text(dump_yaml(small_model()), encoding="utf-8")
    out = tmp_path / "step.yaml"
    assert main(["train-step", str(model), "-o", str(out), "--aicpu-ops", "0"]) == 0
    printed = capsys.readouterr()
    assert printed.out == (f"wrote {out}: graph mlp_train, 27 nodes: AIcoreEngine 17, "
                           "DNN_HCCL 3, DNN_VM_GE_LOCAL 7\n")
    assert printed.err == ""
    assert dump_yaml(load_graph(out)) == dump_yaml(training_step(small_model(), aicpu_ops=0))

    bucketed = tmp_path / "step.json"
    assert main(["train-step", str(model), "-o", str(bucketed), "--allreduce", "bucketed",
                 "--bucket", "2", "--aicpu-ops", "1", "--seed", "5"]) == 0
    assert "DNN_HCCL 2, DNN_VM_AICPU_ASCEND 1" in capsys.readouterr().out
    assert "allreduce/bucket_1" in load_graph(bucketed).root.index

    missing = tmp_path / "missing.yaml"
    assert main(["train-step", str(tmp_path / "nope.onnx"), "-o", str(missing)]) == 3
    assert "nope.onnx" in capsys.readouterr().err and not missing.exists()
    assert main(["train-step", str(model), "-o", str(missing), "--bucket", "0"]) == 2
    assert not missing.exists()


def test_cli_train_step_says_when_the_model_has_no_weights(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A partitioned subgraph of a GE dump receives its weights as PlaceHolders, which take a
    new value every step: its step has gradients but no weights, so no AllReduce, and the
    command says why."""
    b = GraphBuilder("part")
    b.add_node("x", "PlaceHolder", outputs=_desc(2, 8))
    b.add_node("w", "PlaceHolder", outputs=_desc(8, 16))
    b.add_node("mm", "MatMul", inputs=[DataInput("x"), DataInput("w")], outputs=_desc(2, 16))
    b.add_node("end", "End", inputs=[DataInput("mm")])
    model = tmp_path / "part.yaml"
    model.write_text(dump_yaml(b.build()), encoding="utf-8")
    out = tmp_path / "step.yaml"
    assert main(["train-step", str(model), "-o", str(out), "--aicpu-ops", "0"]) == 0
    step = load_graph(out)
    assert "grad/mm" in step.root.index
    assert not any(n.type == "HcomAllReduce" for n in step.root.nodes)
    assert capsys.readouterr().err == (  # one warning line, as README "Exit codes" promises
        f"streamalloc: warning: {model}: no weights (float constants that a node with a "
        "gradient reads), so the step has no AllReduce; the model's per-step inputs: "
        "2 PlaceHolder\n")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_write_graph_takes_a_path_string_and_reads_back(tmp_path: Path, suffix: str) -> None:
    model = small_model()
    target = str(tmp_path / f"model{suffix}")
    api.write_graph(model, target)
    assert dump_yaml(api.read_graph(target)) == dump_yaml(model)


def test_write_atomic_takes_a_path_string(tmp_path: Path) -> None:
    target = tmp_path / "note.txt"
    api.write_atomic(str(target), "text\n")
    assert target.read_text() == "text\n"
    assert [p.name for p in tmp_path.iterdir()] == ["note.txt"]  # no temporary file left
