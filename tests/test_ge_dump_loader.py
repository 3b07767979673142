"""GE dump loader: the four real ResNet-50 dumps, hand-built ModelDefs, every input kind, errors."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest
from google.protobuf import text_format

from streamalloc.errors import GraphLoadError
from streamalloc.ir.attrs import AttrValue, NamedAttrs, TensorValue
from streamalloc.ir.engines import default_engine_table
from streamalloc.ir.graph import DataInput, Graph
from streamalloc.ir.loaders import ge_dump, load_graph
from streamalloc.ir.loaders.ge_dump import engine_hint, load_ge_dump, subgraph_roles
from streamalloc.ir.proto import ge_ir_pb2
from streamalloc.ir.serialize import dump_yaml
from streamalloc.ir.tensor import TensorDesc

DUMPS = Path(__file__).parent / "data" / "ge_dumps"  # vendored copies of the real dumps
VT = ge_ir_pb2.AttrDef.ListValue.ListValueType


def dump_path(number: str) -> Path:
    (path,) = DUMPS.glob(f"ge_proto_{number}_*.txt")
    return path


@cache
def loaded(number: str) -> Graph:
    return load_graph(dump_path(number))


@cache
def dump_model(number: str) -> ge_ir_pb2.ModelDef:
    text = dump_path(number).read_text(encoding="utf-8")
    parsed = ge_dump._protoc_parse(text, ge_ir_pb2.ModelDef)
    assert isinstance(parsed, ge_ir_pb2.ModelDef)
    return parsed


def write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def data_edges(graph: Graph) -> int:
    return sum(len(list(n.data_sources())) for n in graph.all_nodes())


def control_edges(graph: Graph) -> int:
    return sum(len(n.control_inputs) for n in graph.all_nodes())


# ---- the four real dumps -------------------------------------------------------------------

@pytest.mark.parametrize(("number", "name", "ops", "edges"), [
    ("00015", "ResNet-50", 465, 587),
    ("00017", "ResNet-50", 710, 990),
    ("00026", "partition0_rank1_new_sub_graph1", 399, 414),
    ("00046", "partition0_rank3_new_sub_graph57", 234, 249),
])
def test_dump_loads_with_its_counts(number: str, name: str, ops: int, edges: int) -> None:
    graph = loaded(number)
    assert graph.name == name
    assert graph.node_count() == len(graph.root.nodes) == ops
    assert not graph.subgraphs
    assert data_edges(graph) == edges
    assert control_edges(graph) == 0
    assert dict(graph.root.attrs)["_session_graph_id"] == AttrValue("string", "-1_0")


@pytest.mark.parametrize("number", ["00017", "00046"])
def test_g_order_is_topological_though_the_file_is_not(number: str) -> None:
    graph = loaded(number)
    position = graph.root.index
    late = [(n.name, ref.src) for n in graph.root.nodes for ref in n.data_sources()
            if position[ref.src] > position[n.name]]
    assert late == []
    file_order = {op.name: i for i, op in enumerate(dump_model(number).graph[0].op)}
    forward = [(n.name, ref.src) for n in graph.root.nodes for ref in n.data_sources()
               if file_order[ref.src] > file_order[n.name]]
    assert forward  # the dump lists some consumers before their producers


def test_attribute_kinds() -> None:
    graph = loaded("00017")
    eltwise = next(n for n in graph.root.nodes if n.type == "Eltwise")
    assert eltwise.attrs["coeff"] == AttrValue("list_float", ())
    aipp = graph.node("data_0_huawei_aipp").attrs["aipp"]
    assert aipp.kind == "named_attrs"
    assert isinstance(aipp.value, NamedAttrs)
    assert len(aipp.value.attrs) == 46
    assert aipp.value.attrs["aipp_mode"].kind == "int"
    assert aipp.value.attrs["min_chn_0"].kind == "float"
    conv1 = graph.node("conv1")
    assert conv1.attrs["_datadump_original_op_names"] == AttrValue(
        "list_string", ("conv1", "bn_conv1", "scale_conv1"))
    assert conv1.attrs["strides"].kind == "list_int"
    epsilon = graph.node("res5c_branch2cbn5c_branch2c_filter_host").attrs["epsilon"]
    assert epsilon == AttrValue("float", 9.999999747378752e-06)  # float32 1e-5, as protobuf gives
    out = loaded("00026").node("conv1").outputs[0]
    assert out.attrs["shape_range"] == AttrValue("list_list_int", ())
    assert out.attrs["origin_shape"] == AttrValue("list_int", (1, 64, 112, 112))


def test_conv1_tensor_descs() -> None:
    conv1 = loaded("00017").node("conv1")
    assert [d.shape for d in conv1.input_descs[:2]] == [(1, 3, 224, 224), (64, 3, 7, 7)]
    assert conv1.outputs[0].shape == (1, 64, 112, 112)
    assert conv1.outputs[0].dtype == "float32"
    assert conv1.outputs[0].format == "NCHW"
    assert len(conv1.inputs) == 3
    assert len(conv1.input_descs) == 4
    reserved = conv1.input_descs[3]  # the unconnected optional offset_w slot
    assert (reserved.shape, reserved.dtype, reserved.format) == ((), None, "FORMAT_RESERVED")


def test_engines_from_dump_hints_and_the_table() -> None:
    graph = loaded("00026")
    assert graph.node("trans_Reshape_164").engine == "DNN_VM_AICPU_ASCEND"  # imply_type 3
    assert graph.node("conv1").engine == "AIcoreEngine"
    assert graph.node("PlaceHolder0").engine == "DNN_VM_GE_LOCAL"
    assert graph.node("End109").engine == "DNN_VM_GE_LOCAL"
    host = loaded("00017")
    const = next(n for n in host.root.nodes if n.type == "Const")
    assert const.engine == "DNN_VM_GE_LOCAL"
    host_types = {"ConvBnBiasHost", "ConvBnFilterHost", "ConvScaleBiasHost", "ConvScaleFilterHost"}
    engines = {n.engine for n in host.root.nodes if n.type in host_types}
    assert engines == {"DNN_VM_HOST_CPU"}


def test_engine_hint_order() -> None:
    table = default_engine_table()

    def hint(**attrs: object) -> str | None:
        return engine_hint({k: AttrValue("int" if isinstance(v, int) else "string", v)
                            for k, v in attrs.items()}, table)

    assert hint(_ge_attr_op_kernel_lib_name="DNN_VM_RTS", _lxfusion_engine_name="VectorEngine",
                _coretype="AIcoreEngine") == "DNN_VM_RTS"
    assert hint(_ge_attr_op_kernel_lib_name="no_such_lib", _coretype="AIcoreEngine",
                imply_type=3) == "AIcoreEngine"
    assert hint(_coretype="Mystery", imply_type=3) == "DNN_VM_AICPU_ASCEND"
    assert hint(imply_type=1) is None
    assert hint() is None


def test_stale_src_name_is_ignored() -> None:
    op = next(op for op in dump_model("00026").graph[0].op if op.name == "conv1")
    assert list(op.src_name)[1] == "PlaceHolder1"  # stale: a TransData was inserted since
    assert list(op.input)[1] == "trans_TransData_1:0"
    conv1 = loaded("00026").node("conv1")
    assert conv1.inputs[1] == DataInput("trans_TransData_1", 0)
    assert "PlaceHolder1" not in {ref.src for ref in conv1.data_sources()}


def test_protoc_and_text_format_give_equal_graphs() -> None:
    path = dump_path("00046")
    assert load_ge_dump(path, use_protoc=False) == load_ge_dump(path, use_protoc=True)


def test_the_fast_path_does_not_use_text_format(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("text_format.Parse called although protoc is available")

    expected = load_ge_dump(dump_path("00046"), use_protoc=False)
    monkeypatch.setattr(ge_dump.text_format, "Parse", refuse)
    model = load_ge_dump(dump_path("00046"))
    assert model == expected and len(model.root.nodes) == 234


def test_falls_back_to_text_format_when_protoc_cannot_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write(tmp_path, "while.txt", text_format.MessageToString(while_model()))
    expected = load_ge_dump(path, use_protoc=True)
    monkeypatch.setattr(ge_dump, "_PROTOC_MODULE", "streamalloc_no_such_module")
    assert load_ge_dump(path, use_protoc=True) == expected


@cache
def yaml_round_trip(number: str, tmp: Path) -> Graph:
    path = tmp / f"{number}.yaml"
    path.write_text(dump_yaml(loaded(number)), encoding="utf-8")
    return load_graph(path)


@pytest.mark.parametrize("number", ["00015", "00017", "00026", "00046"])
def test_yaml_round_trip_is_equal(number: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert yaml_round_trip(number, tmp_path_factory.getbasetemp()) == loaded(number)


def test_yaml_round_trip_keeps_the_link_order(tmp_path_factory: pytest.TempPathFactory) -> None:
    """GE links edges in dump order; 00015's G-order reorders branches, the link order stays."""
    back, graph = yaml_round_trip("00015", tmp_path_factory.getbasetemp()), loaded("00015")
    assert back.root.list_order == graph.root.list_order != tuple(n.name for n in graph.root.nodes)
    reordered = [k for k, v in graph.root.consumers.items()
                 if [c.node for c in v] != sorted((c.node for c in v), key=graph.root.index.get)]
    assert reordered
    assert all(back.root.consumers[k] == graph.root.consumers[k] for k in reordered)


def test_binary_modeldef_and_bare_graphdef_give_the_same_graph(tmp_path: Path) -> None:
    model = dump_model("00046")
    expected = loaded("00046")
    root = model.graph[0]
    files = {
        "model.pb": model.SerializeToString(),
        "graph.pb": root.SerializeToString(),
        "graph.txt": text_format.MessageToString(root),
    }
    assert files["model.pb"][0] == 0x3A
    assert files["graph.pb"][0] == 0x0A
    for name, content in files.items():
        assert load_graph(write(tmp_path, name, content)) == expected, name


# ---- hand-built models ---------------------------------------------------------------------

def add_op(graph: ge_ir_pb2.GraphDef, name: str, op_type: str, inputs: tuple[str, ...] = (),
           subgraphs: tuple[str, ...] = ()) -> ge_ir_pb2.OpDef:
    op = graph.op.add(name=name, type=op_type)
    op.input.extend(inputs)
    op.subgraph_name.extend(subgraphs)
    op.output_desc.add(dtype=ge_ir_pb2.DT_FLOAT, layout="ND").shape.dim.extend([2])
    return op


def while_model() -> ge_ir_pb2.ModelDef:
    model = ge_ir_pb2.ModelDef()
    model.attr["stream_num"].i = 0  # model attrs are dropped
    root = model.graph.add(name="main")
    add_op(root, "x", "Data", ("",))
    add_op(root, "a", "Const")
    add_op(root, "loop", "While", ("x:0", "a:-1"), ("loop_cond", "loop_body")).stream_id = 5
    add_op(root, "out", "NetOutput", ("loop:0",))
    cond = model.graph.add(name="loop_cond")
    add_op(cond, "cond_x", "Data").attr["_parent_node_index"].i = 0
    add_op(cond, "cond_less", "Less", ("cond_x:0",))
    add_op(cond, "cond_out", "NetOutput", ("cond_less:0",))
    body = model.graph.add(name="loop_body")
    body.attr["_role"].s = b"body"
    add_op(body, "body_x", "Data").attr["_parent_node_index"].i = 0
    add_op(body, "body_add", "Add", ("body_x:0", "body_x:0"))
    add_op(body, "body_out", "NetOutput", ("body_add:0",))
    return model


def test_while_owns_its_subgraphs_and_keeps_the_control_edge(tmp_path: Path) -> None:
    model = while_model()
    text = load_graph(write(tmp_path, "while.txt", text_format.MessageToString(model)))
    binary = load_graph(write(tmp_path, "while.pb", model.SerializeToString()))
    assert text == binary
    loop = text.node("loop")
    assert loop.subgraphs == (("cond", "loop_cond"), ("body", "loop_body"))
    assert loop.inputs == (DataInput("x", 0),)
    assert loop.control_inputs == ("a",)
    assert loop.stream_id == 5
    assert text.node("x").stream_id is None
    assert text.root.control_successors["a"] == ("loop",)
    assert list(text.subgraphs) == ["loop_cond", "loop_body"]
    assert text.graph("loop_body").parent == "loop"
    assert dict(text.graph("loop_body").attrs) == {"_role": AttrValue("string", "body")}
    assert text.node("body_add").inputs == (DataInput("body_x", 0), DataInput("body_x", 0))
    assert text.node("cond_x").attrs["_parent_node_index"] == AttrValue("int", 0)
    assert control_edges(text) == 1
    back = load_graph(write(tmp_path, "while.yaml", dump_yaml(text)))
    assert back == text


def test_subgraph_roles() -> None:
    assert subgraph_roles("If", 2) == ["then_branch", "else_branch"]
    assert subgraph_roles("PartitionedCall", 1) == ["f"]
    assert subgraph_roles("Case", 3) == ["branches0", "branches1", "branches2"]
    assert subgraph_roles("MyLoop", 2) == ["0", "1"]
    assert subgraph_roles("While", 3) == ["cond", "body", "2"]


def all_kinds_model() -> ge_ir_pb2.ModelDef:
    model = ge_ir_pb2.ModelDef()
    op = add_op(model.graph.add(name="kinds"), "k", "Const")
    attr = op.attr
    attr["s"].s = "héllo".encode()
    attr["s_raw"].s = b"\xff\xfe"
    attr["i"].i = -7
    attr["f"].f = 0.1
    attr["b"].b = False
    attr["bt"].bt = b"\x00\x01"
    attr["dt"].dt = 1
    attr["expr"].expression = b"s0 * 2"
    attr["td"].td.dtype = ge_ir_pb2.DT_FLOAT16
    attr["td"].td.layout = "NCHW"
    attr["t"].t.desc.dtype = ge_ir_pb2.DT_INT8
    attr["t"].t.data = b"abc"
    inner = attr["g"].g
    inner.name = "embedded"
    inner.op.add(name="e", type="Data")
    attr["lli"].list_list_int.list_list_i.add().list_i.extend([1, 2])
    attr["llf"].list_list_float.list_list_f.add().list_f.extend([0.5, 1.5])
    attr["empty_ints"].list.val_type = VT.VT_LIST_INT
    attr["none"].list.SetInParent()
    attr["untyped"].list.i.extend([4, 5])
    attr["raw_strings"].list.val_type = VT.VT_LIST_STRING
    attr["raw_strings"].list.s.extend([b"ok", b"\xff"])
    named = attr["lna"].list
    named.val_type = VT.VT_LIST_NAMED_ATTRS
    named.na.add(name="n").attr["k"].i = 1
    attr["ldt"].list.val_type = VT.VT_LIST_DATA_TYPE
    attr["ldt"].list.dt.extend([0, 1])
    attr["unset"].SetInParent()
    return model


def test_every_attribute_kind(tmp_path: Path) -> None:
    model = all_kinds_model()
    graph = load_graph(write(tmp_path, "kinds.pb", model.SerializeToString()))
    assert graph == load_graph(write(tmp_path, "kinds.txt", text_format.MessageToString(model)))
    attrs = graph.node("k").attrs
    expected = {
        "s": AttrValue("string", "héllo"), "s_raw": AttrValue("bytes", b"\xff\xfe"),
        "i": AttrValue("int", -7), "f": AttrValue("float", 0.10000000149011612),
        "b": AttrValue("bool", False), "bt": AttrValue("bytes", b"\x00\x01"),
        "dt": AttrValue("data_type", 1), "expr": AttrValue("expression", "s0 * 2"),
        "td": AttrValue("tensor_desc", TensorDesc(None, "float16", "NCHW")),
        "t": AttrValue("tensor", TensorValue(TensorDesc(None, "int8", None), b"abc")),
        "g": AttrValue("graph", model.graph[0].op[0].attr["g"].g.SerializeToString()),
        "lli": AttrValue("list_list_int", ((1, 2),)),
        "llf": AttrValue("list_list_float", ((0.5, 1.5),)),
        "empty_ints": AttrValue("list_int", ()), "none": AttrValue("list_none", ()),
        "untyped": AttrValue("list_int", (4, 5)),
        "raw_strings": AttrValue("list_bytes", (b"ok", b"\xff")),
        "lna": AttrValue("list_named_attrs", (NamedAttrs("n", {"k": AttrValue("int", 1)}),)),
        "ldt": AttrValue("list_data_type", (0, 1)),
    }
    assert dict(attrs) == expected  # "unset" (no oneof member) is dropped
    assert list(graph.subgraphs) == []  # the embedded graph is an attribute only
    assert load_graph(write(tmp_path, "kinds.yaml", dump_yaml(graph))) == graph


# ---- errors --------------------------------------------------------------------------------

def load_error(path: Path, **kwargs: bool) -> str:
    with pytest.raises(GraphLoadError) as info:
        load_ge_dump(path, **kwargs)
    message = str(info.value)
    assert message.startswith(str(path)), message
    return message


def test_truncated_binary(tmp_path: Path) -> None:
    data = dump_model("00046").SerializeToString()
    message = load_error(write(tmp_path, "cut.pb", data[: len(data) // 2]))
    assert "malformed GE dump" in message
    assert "truncated" in message


def test_truncated_text(tmp_path: Path) -> None:
    text = dump_path("00046").read_text(encoding="utf-8")
    path = write(tmp_path, "cut.txt", text[: len(text) // 2])
    message = load_error(path)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: malformed GE dump \(protobuf text\): ",
                    message), message
    assert "is it truncated?" in message


def test_random_bytes(tmp_path: Path) -> None:
    message = load_error(write(tmp_path, "noise.bin", random.Random(7).randbytes(4096)))
    assert "GE dump" in message


@pytest.mark.parametrize("content", [b"", b"  \n\n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    assert "empty file" in load_error(write(tmp_path, "empty.txt", content))


@pytest.mark.parametrize("use_protoc", [True, False])
def test_bad_field_name_names_the_line(tmp_path: Path, use_protoc: bool) -> None:
    text = 'graph {\n  name: "g"\n  op {\n    nmae: "x"\n    type: "Data"\n  }\n}\n'
    path = write(tmp_path, "bad.txt", text)
    message = load_error(path, use_protoc=use_protoc)
    assert message.startswith(f"{path}:4:")
    assert "malformed GE dump (protobuf text)" in message
    assert '"nmae"' in message


def test_text_that_is_not_protobuf(tmp_path: Path) -> None:
    assert "GE dump" in load_error(write(tmp_path, "notes.txt", "hello world\n"))


@pytest.mark.parametrize("text", ['name: "g"\n', 'name: "m"\ngraph {\n  name: "root"\n}\n'])
@pytest.mark.parametrize("use_protoc", [True, False])
def test_protobuf_without_operators(tmp_path: Path, text: str, use_protoc: bool) -> None:
    # A ModelDef whose graph is empty used to be blamed on GraphDef's parse ("no field graph").
    message = load_error(write(tmp_path, "bare.txt", text), use_protoc=use_protoc)
    assert "holds no graph with operators" in message


def test_binary_modeldef_without_operators(tmp_path: Path) -> None:
    model = ge_ir_pb2.ModelDef(name="m")
    model.graph.add(name="root")
    message = load_error(write(tmp_path, "bare.pb", model.SerializeToString()))
    assert "holds no graph with operators" in message


def test_malformed_input_entry_names_the_op(tmp_path: Path) -> None:
    model = while_model()
    model.graph[0].op[3].input[0] = "loop:first"
    message = load_error(write(tmp_path, "edge.pb", model.SerializeToString()))
    assert "graph[0].op[3]: op 'out' input 'loop:first'" in message


def test_dangling_input_is_reported_with_the_file(tmp_path: Path) -> None:
    model = while_model()
    model.graph[0].op[3].input[0] = "ghost:0"
    message = load_error(write(tmp_path, "dangling.pb", model.SerializeToString()))
    assert "no node named 'ghost'" in message
