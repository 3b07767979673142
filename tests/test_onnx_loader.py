"""The ONNX loader: real models (onnx's light_* zoo models, the shared transformer graphs) and
small hand-built models for control flow, outer-scope values, optional inputs, names and errors.

The mapping is checked on the models as written (`fold=False`); constant folding, on by default,
has its own tests (test_onnx_fold.py)."""

from __future__ import annotations

import random
import time
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from streamalloc.errors import GraphLoadError
from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.serialize import dump_yaml
from streamalloc.ir.tensor import TensorDesc

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"
TRANSFORMERS = Path(__file__).parent / "data" / "onnx"  # vendored copies: a fresh clone has them
MODELS = sorted(LIGHT.glob("light_*.onnx")) + [
    TRANSFORMERS / f"{name}.onnx" for name in ("bert_base", "gpt2_small", "t5_small", "llama_tiny")]
FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


@cache
def _load(path: Path) -> tuple[Graph, float]:
    start = time.perf_counter()
    graph = load_graph(path, fold=False)
    return graph, time.perf_counter() - start


def _model_id(path: Path) -> str:
    return path.stem


def test_all_models_present() -> None:
    assert [path.stem for path in MODELS] == [
        "light_bvlc_alexnet", "light_densenet121", "light_inception_v1", "light_inception_v2",
        "light_resnet50", "light_shufflenet", "light_squeezenet", "light_vgg19", "light_zfnet512",
        "bert_base", "gpt2_small", "t5_small", "llama_tiny"]
    assert all(path.exists() for path in MODELS)


# --- real models -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", MODELS, ids=_model_id)
def test_node_count_and_load_time(path: Path) -> None:
    graph, seconds = _load(path)
    model = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name for t in model.initializer}
    data = [v for v in model.input if v.name not in inits]
    assert graph.node_count() == len(model.node) + len(inits) + len(data) + 1
    assert not graph.subgraphs
    assert graph.name == (model.name or path.stem)
    assert seconds < 1.0, f"{path.name} took {seconds:.3f} s"


def _expected_names(model: onnx.GraphProto) -> list[str]:
    """The loader's naming rule for a root graph without clashes: the name, else op_index."""
    names = [node.name or f"{node.op_type}_{i}" for i, node in enumerate(model.node)]
    taken = {t.name for t in model.initializer} | {v.name for v in model.input}
    assert len(set(names)) == len(names) and not taken & set(names)  # no clash in these models
    return names


@pytest.mark.parametrize("path", MODELS, ids=_model_id)
def test_every_input_maps_to_its_producer(path: Path) -> None:
    graph, _ = _load(path)
    model = onnx.load(str(path), load_external_data=False).graph
    names = _expected_names(model)
    producer = {t.name: DataInput(t.name, 0) for t in model.initializer}
    producer.update((v.name, DataInput(v.name, 0)) for v in model.input if v.name not in producer)
    for name, node in zip(names, model.node, strict=True):
        producer.update((out, DataInput(name, port)) for port, out in enumerate(node.output))
    for name, node in zip(names, model.node, strict=True):
        ours = graph.node(name)
        assert ours.type == node.op_type
        assert ours.inputs == tuple(producer[v] for v in node.input)
        assert len(ours.outputs) == len(node.output)
    net_output = graph.node("Node_Output")
    assert net_output.type == "NetOutput"
    assert net_output.inputs == tuple(producer[v.name] for v in model.output)
    for t in model.initializer:
        const = graph.node(t.name)
        assert const.type == "Const"
        dtype = {TensorProto.FLOAT: "float32", TensorProto.INT64: "int64"}[t.data_type]
        assert const.outputs == (TensorDesc(tuple(t.dims), dtype),)


def test_spot_checked_edges_in_bert() -> None:
    graph, _ = _load(TRANSFORMERS / "bert_base.onnx")
    model = onnx.load(str(TRANSFORMERS / "bert_base.onnx")).graph
    by_name = {n.name: n for n in model.node}
    producer = {out: (n.name, port) for n in model.node for port, out in enumerate(n.output)}
    matmuls = [n for n in model.node if n.op_type == "MatMul"][:5]
    for node in matmuls:
        ours = graph.node(node.name)
        for slot, value in enumerate(node.input):
            src, port = producer[value]
            assert ours.inputs[slot] == DataInput(src, port)
            assert by_name[src].output[port] == value
    assert graph.node("input_ids").type == "Data"
    assert graph.node("input_ids").outputs == (TensorDesc((1, 128), "int64"),)
    root_out = graph.node("Node_Output")
    assert [graph.node(ref.src).outputs[ref.port] for ref in root_out.data_sources()] == [
        TensorDesc((1, 128, 768), "float32"), TensorDesc((1, 768), "float32")]


def test_resnet50_conv_shapes_are_inferred() -> None:
    graph, _ = _load(LIGHT / "light_resnet50.onnx")
    convs = [n for n in graph.root.nodes if n.type == "Conv"]
    assert len(convs) == 53
    for conv in convs:
        (out,) = conv.outputs
        assert out.dtype == "float32"
        assert out.shape is not None and len(out.shape) == 4 and min(out.shape) > 0
    first = graph.node("gpu_0/data_0")
    assert first.outputs == (TensorDesc((1, 3, 224, 224), "float32"),)
    stem = next(c for c in convs if c.inputs[0] == DataInput("gpu_0/data_0", 0))
    assert stem.outputs[0].shape == (1, 64, 112, 112)


def test_transformer_shapes_are_all_static() -> None:
    graph, _ = _load(TRANSFORMERS / "gpt2_small.onnx")
    ops = [n for n in graph.root.nodes if n.type != "NetOutput"]
    assert all(d.shape is not None and -1 not in d.shape and d.dtype for n in ops
               for d in n.outputs)


def test_engines_come_from_the_op_type() -> None:
    gpt2, _ = _load(TRANSFORMERS / "gpt2_small.onnx")
    resnet, _ = _load(LIGHT / "light_resnet50.onnx")
    engines = {n.type: n.engine for g in (gpt2, resnet) for n in g.root.nodes}
    for local in ("Constant", "Reshape", "Shape", "Data", "Const", "NetOutput"):
        assert engines[local] == "DNN_VM_GE_LOCAL", local
    for compute in ("Conv", "MatMul", "Gemm", "Softmax", "ConstantOfShape"):
        assert engines[compute] == "AIcoreEngine", compute
    assert engines["Where"] == "DNN_VM_AICPU_ASCEND"


def test_constant_keeps_its_tensor_value() -> None:
    graph, _ = _load(TRANSFORMERS / "llama_tiny.onnx")
    model = onnx.load(str(TRANSFORMERS / "llama_tiny.onnx")).graph
    proto = next(n for n in model.node if n.op_type == "Constant")
    value = graph.node(proto.name).attrs["value"]
    array = numpy_helper.to_array(proto.attribute[0].t)
    assert value.kind == "tensor"
    assert value.value.desc.shape == array.shape
    assert value.value.data == array.tobytes()


def _round_trip(graph: Graph, tmp_path: Path) -> Graph:
    path = tmp_path / f"{graph.name.replace('/', '_')}.yaml"
    path.write_text(dump_yaml(graph), encoding="utf-8")
    return load_graph(path)


@pytest.mark.parametrize("path", MODELS, ids=_model_id)
def test_yaml_round_trip(path: Path, tmp_path: Path) -> None:
    graph, _ = _load(path)
    assert _round_trip(graph, tmp_path) == graph


# --- hand-built models -------------------------------------------------------------------------

def _save(tmp_path: Path, graph: onnx.GraphProto, name: str = "model") -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _vi(name: str, dtype: int = FLOAT, shape: list[int | str] | None = None
        ) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, [2] if shape is None else shape)


def _branch(name: str, node: onnx.NodeProto, out: str) -> onnx.GraphProto:
    return helper.make_graph([node], name, [], [_vi(out)])


def _if_node(cond: str, out: str, name: str, then: onnx.GraphProto, other: onnx.GraphProto
             ) -> onnx.NodeProto:
    """An If with then_branch first (helper.make_node would sort the attributes by name)."""
    node = helper.make_node("If", [cond], [out], name=name)
    node.attribute.extend([helper.make_attribute("then_branch", then),
                           helper.make_attribute("else_branch", other)])
    return node


def _if_model(tmp_path: Path) -> Path:
    then = _branch("then", helper.make_node("Add", ["x", "y"], ["t"], name="t_add"), "t")
    other = _branch("else", helper.make_node("Mul", ["y", "z"], ["e"], name="e_mul"), "e")
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             _if_node("c", "r", "if1", then, other)]
    graph = helper.make_graph(nodes, "if_model", [_vi("c", BOOL, []), _vi("x"), _vi("z")],
                              [_vi("r")])
    return _save(tmp_path, graph, "if_model")


def test_if_outer_references_become_owner_inputs(tmp_path: Path) -> None:
    graph = load_graph(_if_model(tmp_path))
    owner = graph.node("if1")
    assert owner.subgraphs == (("then_branch", "if1/then_branch"),
                               ("else_branch", "if1/else_branch"))
    # cond first, then one shared slot per outer value, in order of first reference
    assert owner.inputs == (DataInput("c", 0), DataInput("x", 0), DataInput("relu", 0),
                            DataInput("z", 0))
    then, other = graph.graph("if1/then_branch"), graph.graph("if1/else_branch")
    assert then.parent == other.parent == "if1"
    then_data = {n.name: n.attr("_parent_node_index") for n in then.nodes if n.type == "Data"}
    else_data = {n.name: n.attr("_parent_node_index") for n in other.nodes if n.type == "Data"}
    assert then_data == {"if1/then_branch/x": 1, "if1/then_branch/y": 2}
    assert else_data == {"if1/else_branch/y": 2, "if1/else_branch/z": 3}
    assert graph.node("t_add").inputs == (DataInput("if1/then_branch/x", 0),
                                          DataInput("if1/then_branch/y", 0))
    assert graph.node("if1/then_branch/y").outputs == (TensorDesc((2,), "float32"),)
    assert graph.node("if1/else_branch/Node_Output").inputs == (DataInput("e_mul", 0),)
    assert graph.node("if1").engine == "DNN_VM_GE_LOCAL"
    assert graph.node_count() == 6 + 4 + 4  # root: c x z relu if1 out; 2 Data + op + out each
    assert _round_trip(graph, tmp_path) == graph


def _loop_model(tmp_path: Path, nested: bool = False) -> Path:
    body_nodes = [helper.make_node("Identity", ["c_in"], ["c_out"], name="cond_copy"),
                  helper.make_node("Add", ["v_in", "w"], ["v_next"], name="step")]
    body_out = "v_next"
    if nested:  # an If in the body reads a body value and a root value (two levels up)
        then = _branch("then", helper.make_node("Sub", ["v_next", "k"], ["s"], name="in_sub"), "s")
        other = _branch("else", helper.make_node("Neg", ["k"], ["n"], name="in_neg"), "n")
        body_nodes.append(_if_node("c_in", "v_if", "inner_if", then, other))
        body_out = "v_if"
    body = helper.make_graph(body_nodes, "body",
                             [_vi("i", INT64, []), _vi("c_in", BOOL, []), _vi("v_in")],
                             [_vi("c_out", BOOL, []), _vi(body_out)])
    loop = helper.make_node("Loop", ["M", "cond", "v0"], ["v_final"], name="loop", body=body)
    inputs = [_vi("M", INT64, []), _vi("cond", BOOL, []), _vi("v0"), _vi("w"), _vi("k")]
    graph = helper.make_graph([loop], "loop_model", inputs, [_vi("v_final")])
    return _save(tmp_path, graph, "nested" if nested else "loop")


def test_loop_carried_values_and_outer_reference(tmp_path: Path) -> None:
    graph = load_graph(_loop_model(tmp_path))
    loop = graph.node("loop")
    assert loop.subgraphs == (("body", "loop/body"),)
    assert loop.inputs == (DataInput("M", 0), DataInput("cond", 0), DataInput("v0", 0),
                           DataInput("w", 0))
    body = graph.graph("loop/body")
    data = {n.name: n.attr("_parent_node_index") for n in body.nodes if n.type == "Data"}
    assert data == {"i": 0, "c_in": 1, "v_in": 2, "loop/body/w": 3}
    assert graph.node("step").inputs == (DataInput("v_in", 0), DataInput("loop/body/w", 0))
    assert graph.node("loop/body/Node_Output").inputs == (DataInput("cond_copy", 0),
                                                          DataInput("step", 0))
    assert graph.node("v_in").outputs == (TensorDesc((2,), "float32"),)
    assert graph.node("k").type == "Data"  # unused root input still becomes a Data node
    assert _round_trip(graph, tmp_path) == graph


def test_nested_if_in_loop_threads_values_through_both_owners(tmp_path: Path) -> None:
    graph = load_graph(_loop_model(tmp_path, nested=True))
    assert list(graph.subgraphs) == ["loop/body", "inner_if/then_branch", "inner_if/else_branch"]
    # k lives in the root: the Loop carries it in on a new slot, the inner If from the body
    assert graph.node("loop").inputs[3:] == (DataInput("w", 0), DataInput("k", 0))
    assert graph.node("loop/body/k").attr("_parent_node_index") == 4
    inner = graph.node("inner_if")
    assert inner.graph == "loop/body"
    assert inner.inputs == (DataInput("c_in", 0), DataInput("step", 0),
                            DataInput("loop/body/k", 0))
    then = "inner_if/then_branch"
    assert graph.node("in_sub").inputs == (DataInput(f"{then}/v_next", 0),
                                           DataInput(f"{then}/k", 0))
    assert graph.node(f"{then}/k").attr("_parent_node_index") == 2
    assert graph.node("inner_if/else_branch/k").attr("_parent_node_index") == 2
    assert [g.name for g in graph.graphs() if g.parent == "inner_if"] == [
        then, "inner_if/else_branch"]
    assert _round_trip(graph, tmp_path) == graph


def test_empty_optional_input_is_an_unconnected_slot(tmp_path: Path) -> None:
    nodes = [helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip"),
             helper.make_node("Dropout", ["y"], ["d", ""], name="drop")]
    hi = numpy_helper.from_array(np.array(6.0, dtype=np.float32), "hi")
    graph = helper.make_graph(nodes, "opt", [_vi("x", FLOAT, ["batch", 4])],
                              [_vi("d", FLOAT, ["batch", 4])],
                              initializer=[hi])
    loaded = load_graph(_save(tmp_path, graph))
    assert loaded.node("clip").inputs == (DataInput("x", 0), None, DataInput("hi", 0))
    assert loaded.node("hi").outputs == (TensorDesc((), "float32"),)
    assert loaded.node("x").outputs == (TensorDesc((-1, 4), "float32"),)
    assert loaded.node("clip").outputs == (TensorDesc((-1, 4), "float32"),)
    assert len(loaded.node("drop").outputs) == 2  # one desc per output, unknown when unused
    assert _round_trip(loaded, tmp_path) == loaded


def test_unnamed_and_duplicate_names_get_unique_names(tmp_path: Path) -> None:
    then = _branch("then", helper.make_node("Relu", ["a"], ["t"]), "t")
    other = _branch("else", helper.make_node("Neg", ["a"], ["e"], name="dup"), "e")
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="dup"),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Relu", ["b"], ["c"], name="dup"),
             helper.make_node("Relu", ["c"], ["d"], name="x"),  # clashes with the input
             helper.make_node("If", ["cond"], ["f"], then_branch=then, else_branch=other),
             helper.make_node("Add", ["d", "f"], ["g"], name="Relu_1")]  # clashes with a derived
    graph = helper.make_graph(nodes, "", [_vi("x"), _vi("cond", BOOL, [])], [_vi("g")])
    path = _save(tmp_path, graph, "names")
    loaded = load_graph(path)
    assert loaded.name == "names"  # no ONNX graph name: the file stem
    types = {n.name: n.type for n in loaded.all_nodes()}
    assert {k: types[k] for k in ("dup", "Relu_1", "dup_1", "x_1", "If_4", "Relu_1_1")} == {
        "dup": "Relu", "Relu_1": "Add", "dup_1": "Relu", "x_1": "Relu", "If_4": "If",
        "Relu_1_1": "Relu"}
    assert types["x"] == "Data"
    assert types["dup_2"] == "Neg"  # the branch's "dup" is taken by the root's
    assert types["Relu_0"] == "Relu"  # unnamed then-branch node
    # GE's instance order, although helper.make_node wrote else_branch first
    assert [a.name for a in nodes[4].attribute] == ["else_branch", "then_branch"]
    assert loaded.node("If_4").subgraphs == (("then_branch", "If_4/then_branch"),
                                             ("else_branch", "If_4/else_branch"))
    assert loaded.node("Relu_1_1").inputs == (DataInput("dup", 0),)
    assert load_graph(path) == loaded  # deterministic
    assert _round_trip(loaded, tmp_path) == loaded


def test_attribute_kinds(tmp_path: Path) -> None:
    tensor = numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "t")
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.5], dtype=np.float32), "sv"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "si"), [4])
    node = helper.make_node(
        "Custom", ["x"], ["y"], name="custom", domain="test.custom",
        i=3, f=0.5, s="text", ints=[1, -2], floats=[0.25], strings=["a", "b"], t=tensor,
        ts=[tensor], sp=sparse, tp=helper.make_tensor_type_proto(FLOAT, [2]))
    node.attribute.extend([
        helper.make_attribute("raw", b"\xff\xfe"),
        helper.make_attribute("no_ints", [], attr_type=onnx.AttributeProto.INTS),
        helper.make_attribute("no_floats", [], attr_type=onnx.AttributeProto.FLOATS)])
    graph = helper.make_graph([node], "attrs", [_vi("x")], [_vi("y")])
    loaded = load_graph(_save(tmp_path, graph))
    attrs = loaded.node("custom").attrs
    value = TensorValue(TensorDesc((2, 3), "int64"), np.arange(6, dtype=np.int64).tobytes())
    assert {k: v.kind for k, v in attrs.items()} == {
        "f": "float", "floats": "list_float", "i": "int", "ints": "list_int",
        "no_floats": "list_float", "no_ints": "list_int", "raw": "bytes", "s": "string",
        "sp": "bytes", "strings": "list_string", "t": "tensor", "tp": "string",
        "ts": "list_tensor"}
    assert attrs["i"] == AttrValue("int", 3)
    assert attrs["f"] == AttrValue("float", 0.5)
    assert attrs["ints"] == AttrValue("list_int", (1, -2))
    assert attrs["strings"] == AttrValue("list_string", ("a", "b"))
    assert attrs["raw"] == AttrValue("bytes", b"\xff\xfe")
    assert attrs["t"].value == value and attrs["ts"].value == (value,)
    assert onnx.SparseTensorProto.FromString(attrs["sp"].value) == sparse
    assert "elem_type: 1" in attrs["tp"].value
    assert loaded.node("custom").engine == "AIcoreEngine"  # unknown op types: the default
    assert _round_trip(loaded, tmp_path) == loaded


@pytest.mark.parametrize(("onnx_type", "name"), [
    (TensorProto.FLOAT, "float32"), (TensorProto.FLOAT16, "float16"),
    (TensorProto.BFLOAT16, "bfloat16"), (TensorProto.DOUBLE, "float64"),
    (TensorProto.INT64, "int64"), (TensorProto.BOOL, "bool"), (TensorProto.UINT8, "uint8")])
def test_dtype_names(tmp_path: Path, onnx_type: int, name: str) -> None:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "dt",
                              [_vi("x", onnx_type, ["n", 3])], [_vi("y", onnx_type)])
    loaded = load_graph(_save(tmp_path, graph))
    assert loaded.node("x").outputs == (TensorDesc((-1, 3), name),)
    assert loaded.node("id").outputs[0].dtype == name


def test_undefined_value_is_reported(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["ghost"], ["y"], name="r")], "bad",
                              [_vi("x")], [_vi("y")])
    path = _save(tmp_path, graph)
    with pytest.raises(GraphLoadError, match="reads value 'ghost'") as info:
        load_graph(path)
    assert str(info.value).startswith(str(path))


# --- bad files ---------------------------------------------------------------------------------

def _bad_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.onnx"
    if kind == "truncated":
        data = (LIGHT / "light_resnet50.onnx").read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "random":
        path.write_bytes(random.Random(7).randbytes(4096))
    elif kind == "text":
        path.write_text("format: streamalloc.graph/v1\nnodes: []\n", encoding="utf-8")
    else:
        path.write_bytes(b"")
    return path


@pytest.mark.parametrize("kind", ["truncated", "random", "empty", "text"])
def test_bad_file_raises_graph_load_error(tmp_path: Path, kind: str) -> None:
    path = _bad_file(tmp_path, kind)
    with pytest.raises(GraphLoadError) as info:
        load_graph(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not ")
    assert "ONNX" in message and "Traceback" not in message
    assert info.value.__cause__ is None  # no chained protobuf/onnx traceback
    assert info.value.__context__ is None or info.value.__suppress_context__


def test_scan_body_inputs_follow_the_owner_inputs(tmp_path: Path) -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["acc_next"], name="acc_add"),
         helper.make_node("Mul", ["row", "scale"], ["scaled"], name="scale_mul")],
        "scan_body", [_vi("acc", FLOAT, [3]), _vi("row", FLOAT, [3])],
        [_vi("acc_next", FLOAT, [3]), _vi("scaled", FLOAT, [3])])
    scan = helper.make_node("Scan", ["init", "rows"], ["total", "all"], name="scan", body=body,
                            num_scan_inputs=1)
    graph = helper.make_graph([scan], "scan_model",
                              [_vi("init", FLOAT, [3]), _vi("rows", FLOAT, [4, 3]),
                               _vi("scale", FLOAT, [3])],
                              [_vi("total", FLOAT, [3]), _vi("all", FLOAT, [4, 3])])
    loaded = load_graph(_save(tmp_path, graph))
    assert loaded.node("scan").inputs == (DataInput("init", 0), DataInput("rows", 0),
                                          DataInput("scale", 0))
    assert loaded.node("scan").attrs["num_scan_inputs"] == AttrValue("int", 1)
    data = {n.name: n.attr("_parent_node_index") for n in loaded.graph("scan/body").nodes
            if n.type == "Data"}
    assert data == {"acc": 0, "row": 1, "scan/body/scale": 2}
    assert loaded.node("scan").outputs == (TensorDesc((3,), "float32"),
                                           TensorDesc((4, 3), "float32"))


def test_graphs_attribute_gives_one_subgraph_per_graph(tmp_path: Path) -> None:
    branches = [_branch(f"b{i}", helper.make_node("Relu", ["x"], [f"o{i}"], name=f"r{i}"),
                        f"o{i}") for i in range(2)]
    node = helper.make_node("Switch", ["x"], ["y"], name="sw", domain="test.custom")
    node.attribute.append(helper.make_attribute("branches", branches))
    graph = helper.make_graph([node], "graphs", [_vi("x")], [_vi("y")])
    loaded = load_graph(_save(tmp_path, graph))
    assert loaded.node("sw").subgraphs == (("branches/0", "sw/branches/0"),
                                           ("branches/1", "sw/branches/1"))
    assert loaded.node("sw").inputs == (DataInput("x", 0), DataInput("x", 0))  # x, then outer x
    assert loaded.node("r1").inputs == (DataInput("sw/branches/1/x", 0),)
    assert _round_trip(loaded, tmp_path) == loaded


def test_local_functions_that_expand_past_a_million_nodes_skip_shape_inference(
        tmp_path: Path) -> None:
    """Found by a fuzz run: 25 local functions, each calling the next twice, made ONNX's shape
    inference expand 2^25 calls (it never finished). Such a model loads without inferred
    shapes, each call one node."""
    from streamalloc.ir.loaders.onnx_model import INFER_MAX_INLINED, _inlined_nodes
    functions = [helper.make_function("local", "f24", ["x"], ["y"],
                                      [helper.make_node("Relu", ["x"], ["y"])],
                                      [helper.make_opsetid("", 17)])]
    for i in range(23, -1, -1):
        functions.append(helper.make_function(
            "local", f"f{i}", ["x"], ["y"],
            [helper.make_node(f"f{i + 1}", ["x"], ["t"], domain="local"),
             helper.make_node(f"f{i + 1}", ["t"], ["y"], domain="local")],
            [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]))
    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("f0", ["x"], ["y"], domain="local")], "deep",
                              [value("x", TensorProto.FLOAT, [4])],
                              [value("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, functions=functions,
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("local", 1)])
    assert _inlined_nodes(model) > INFER_MAX_INLINED
    path = tmp_path / "deep.onnx"
    onnx.save(model, str(path))
    loaded = load_graph(path)
    assert [n.type for n in loaded.all_nodes()] == ["Data", "f0", "NetOutput"]


def test_derived_names_take_the_smallest_free_suffix() -> None:
    """`_unique` keeps, per base, the suffix below which every name is taken: the same names
    as a scan from 0, in steps proportional to the names given (a fuzz model's 65k nested If
    bodies of one name once took 29 s to name)."""
    from streamalloc.ir.loaders.onnx_model import _unique
    taken, tried = {"a_2", "b"}, {}
    names = [_unique(base, taken, tried) for base in ["a", "a", "b", "a", "a_1", "b", "a"]]
    assert names == ["a", "a_1", "b_1", "a_3", "a_1_1", "b_2", "a_4"]
