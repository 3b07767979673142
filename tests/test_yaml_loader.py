"""Our YAML/JSON graph format (formats.md section 1): loading, typed attrs, errors, round trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamalloc.errors import GraphLoadError, OptionError
from streamalloc.ir.attrs import ATTR_KINDS, AttrValue, NamedAttrs, freeze_attrs
from streamalloc.ir.engines import Engine, default_engine_table
from streamalloc.ir.graph import DataInput, Graph, PartitionEntry
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
from streamalloc.ir.loaders.yaml_json import load_yaml_json
from streamalloc.ir.printer import print_graph
from streamalloc.ir.serialize import dump_json, dump_yaml
from streamalloc.ir.tensor import TensorDesc

HEAD = "format: streamalloc.graph/v1\nname: g\n"

# formats.md section 1, completed so every name it mentions exists (relu2, allreduce, the
# loop subgraphs) and with a node on the custom engine's op type.
FULL = """\
format: streamalloc.graph/v1
name: demo
dynamic_shape: false
options:
  ge.enableSingleStream: "false"
  ge.hcomParallel: "1"
  ge.event: "notify"
  ac_parallel_enable: "1"
  streamalloc.max_task_per_stream: 1024
  streamalloc.max_task_per_huge_stream: 8192
  streamalloc.max_streams: 2024
  streamalloc.max_notifies: 1024
  streamalloc.max_events: 65535
engines:
  - {name: MyAccel, independent: true, attach: false, skip_assign_stream: false,
     scheduler_id: TS_1, compute_cost: 2, default_task_count: 1}
op_engines: {MyCollective: MyAccel}
nodes:
  - name: data
    type: Data
  - name: relu1
    type: Relu
    engine: AIcoreEngine
    inputs: ["data:0"]
    control_inputs: []
    attrs:
      _user_stream_label: "111"
      _stream_label: "a"
      _parallel_group: "g1"
    outputs:
      - {shape: [1, 64, 56, 56], dtype: float16, format: NC1HWC0}
    stream_id: 0
    task_count: 3
    cost_us: 12.5
  - name: relu2
    type: Relu
    inputs: ["relu1"]
    control_inputs: [data]
  - name: allreduce
    type: HcomAllReduce
    inputs: ["relu2"]
  - name: coll
    type: MyCollective
    inputs: ["allreduce"]
  - name: loop
    type: While
    inputs: ["relu1"]
    subgraphs: {cond: loop_cond, body: loop_body}
subgraphs:
  loop_cond:
    nodes:
      - {name: cond_in, type: Data}
      - {name: cond_less, type: Less, inputs: [cond_in]}
  loop_body:
    nodes:
      - {name: body_in, type: Data}
      - {name: body_add, type: Add, inputs: [body_in, "body_in:0"], cost_us: 3}
partition:
  - {id: sg1, engine: AIcoreEngine, stream_label: "", nodes: [relu1, relu2]}
  - {id: sg2, engine: DNN_HCCL, stream_label: "", nodes: [allreduce]}
"""

TYPED = HEAD + """\
nodes:
  - name: a
    type: Data
    attrs:
      lf: {type: list_float, value: []}
      raw: {type: bytes, value: aGVsbG8=}
      na: {type: named_attrs, value: {name: aipp, attrs: {mode: 1, tags: [x, y]}}}
      td: {type: tensor_desc, value: {shape: [2, 3], dtype: float32, format: ND}}
      lli: {type: list_list_int, value: [[1, 2], [3]]}
      dt: {type: data_type, value: 1}
      fl: {type: float, value: 2}
      ex: {type: expression, value: "s0 * 2"}
      i: 3
      f: 2.5
      b: true
      s: "7"
      li: [1, 2]
      lfm: [1, 2.5]
      ls: [p, q]
      lb: [true, false]
      none: []
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write `text` to tmp_path/name and return the path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str, name: str = "g.yaml") -> Graph:
    """Load `text` written to a file called `name`."""
    return load_graph(write(tmp_path, name, text))


def load_error(tmp_path: Path, text: str, name: str = "g.yaml") -> tuple[str, str]:
    """The GraphLoadError message for `text` and the path it should name."""
    path = write(tmp_path, name, text)
    with pytest.raises(GraphLoadError) as err:
        load_graph(path)
    return str(err.value), str(path)


# ---------------------------------------------------------------------------------------------
# The full example
# ---------------------------------------------------------------------------------------------

def test_full_example_header_options_engines(tmp_path: Path) -> None:
    path = write(tmp_path, "demo.yaml", FULL)
    graph = load_graph(path)
    assert graph.name == "demo"
    assert graph.dynamic_shape is False
    assert graph.source == str(path)
    assert dict(graph.options) == {
        "ge.enableSingleStream": "false", "ge.hcomParallel": "1", "ge.event": "notify",
        "ac_parallel_enable": "1",
        "streamalloc.max_task_per_stream": "1024",
        "streamalloc.max_task_per_huge_stream": "8192",
        "streamalloc.max_streams": "2024", "streamalloc.max_notifies": "1024",
        "streamalloc.max_events": "65535",
    }
    assert all(isinstance(v, str) for v in graph.options.values())
    assert graph.option("streamalloc.max_events") == "65535"
    assert graph.engines.get("MyAccel") == Engine(
        "MyAccel", independent=True, attach=False, skip_assign_stream=False,
        scheduler_id="TS_1", compute_cost=2, default_task_count=1)
    assert graph.engines.op_engines["MyCollective"] == "MyAccel"
    # the shipped table is extended, not replaced
    default = default_engine_table()
    assert set(graph.engines.engines) == set(default.engines) | {"MyAccel"}
    assert graph.engines.op_engines["HcomAllReduce"] == "DNN_HCCL"
    assert graph.engines.changes_from(default) == (
        [graph.engines.engines["MyAccel"]], {"MyCollective": "MyAccel"})


def test_full_example_nodes(tmp_path: Path) -> None:
    graph = load_text(tmp_path, FULL, "demo.yaml")
    assert [x.name for x in graph.root.nodes] == [
        "data", "relu1", "relu2", "allreduce", "coll", "loop"]
    relu1 = graph.node("relu1")
    assert relu1.type == "Relu" and relu1.engine == "AIcoreEngine" and relu1.graph == "demo"
    assert relu1.inputs == (DataInput("data", 0),)
    assert relu1.control_inputs == ()
    assert dict(relu1.attrs) == {
        "_parallel_group": AttrValue("string", "g1"), "_stream_label": AttrValue("string", "a"),
        "_user_stream_label": AttrValue("string", "111")}
    assert list(relu1.attrs) == ["_parallel_group", "_stream_label", "_user_stream_label"]
    assert relu1.attr("_user_stream_label") == "111"
    assert relu1.outputs == (TensorDesc((1, 64, 56, 56), "float16", "NC1HWC0"),)
    assert (relu1.stream_id, relu1.task_count, relu1.cost_us) == (0, 3, 12.5)
    relu2 = graph.node("relu2")
    assert relu2.inputs == (DataInput("relu1", 0),) and relu2.control_inputs == ("data",)
    assert (relu2.stream_id, relu2.task_count, relu2.cost_us) == (None, None, None)
    assert relu2.attrs == {} and relu2.outputs == ()
    assert graph.node("allreduce").engine == "DNN_HCCL"
    assert graph.node("coll").engine == "MyAccel"
    assert graph.node("data").engine == "DNN_VM_GE_LOCAL"


def test_full_example_subgraphs_and_partition(tmp_path: Path) -> None:
    graph = load_text(tmp_path, FULL, "demo.yaml")
    loop = graph.node("loop")
    assert loop.subgraphs == (("cond", "loop_cond"), ("body", "loop_body"))
    assert list(graph.subgraphs) == ["loop_cond", "loop_body"]
    assert graph.subgraphs["loop_cond"].parent == "loop"
    assert [x.name for x in graph.subgraphs["loop_body"].nodes] == ["body_in", "body_add"]
    body_add = graph.node("body_add")
    assert body_add.graph == "loop_body"
    assert body_add.inputs == (DataInput("body_in", 0), DataInput("body_in", 0))
    assert body_add.cost_us == 3.0 and isinstance(body_add.cost_us, float)
    assert graph.r_order() == ["loop_body", "loop_cond"]
    assert graph.partition == (
        PartitionEntry("sg1", "AIcoreEngine", "", ("relu1", "relu2")),
        PartitionEntry("sg2", "DNN_HCCL", "", ("allreduce",)))
    assert graph.node_count() == 10


def test_name_defaults_to_file_stem_and_options_are_text(tmp_path: Path) -> None:
    text = ("format: streamalloc.graph/v1\ndynamic_shape: true\n"
            "options: {a: true, b: false, c: 1.5, d: 7}\nnodes:\n  - {name: x, type: Data}\n")
    graph = load_text(tmp_path, text, "my_model.yml")
    assert graph.name == "my_model" and graph.root.name == "my_model"
    assert graph.dynamic_shape is True
    assert dict(graph.options) == {"a": "true", "b": "false", "c": "1.5", "d": "7"}
    assert graph.partition is None


def test_unconnected_input_slot_and_graph_attrs(tmp_path: Path) -> None:
    text = HEAD + """\
attrs: {ge.autoMultistreamParallelMode: cv}
nodes:
  - {name: a, type: Data}
  - name: b
    type: Add
    inputs: ["", "a"]
    input_descs: [{}, {shape: [4], dtype: int32}]
"""
    graph = load_text(tmp_path, text)
    assert graph.node("b").inputs == (None, DataInput("a", 0))
    assert graph.node("b").input_descs == (TensorDesc(), TensorDesc((4,), "int32"))
    assert dict(graph.root.attrs) == {"ge.autoMultistreamParallelMode": AttrValue("string", "cv")}


def test_json_file_loads_like_yaml(tmp_path: Path) -> None:
    from_yaml = load_text(tmp_path, FULL, "demo.yaml")
    document = json.loads(dump_json(from_yaml))
    from_json = load_text(tmp_path, json.dumps(document, indent=2), "demo.json")
    assert from_json == from_yaml


# ---------------------------------------------------------------------------------------------
# Typed attributes
# ---------------------------------------------------------------------------------------------

def test_typed_attributes(tmp_path: Path) -> None:
    attrs = load_text(tmp_path, TYPED).node("a").attrs
    assert attrs["lf"] == AttrValue("list_float", ())
    assert attrs["raw"] == AttrValue("bytes", b"hello")
    assert attrs["na"] == AttrValue("named_attrs", NamedAttrs("aipp", freeze_attrs(
        {"mode": AttrValue("int", 1), "tags": AttrValue("list_string", ("x", "y"))})))
    assert attrs["td"] == AttrValue("tensor_desc", TensorDesc((2, 3), "float32", "ND"))
    assert attrs["lli"] == AttrValue("list_list_int", ((1, 2), (3,)))
    assert attrs["dt"] == AttrValue("data_type", 1)
    assert attrs["fl"] == AttrValue("float", 2.0) and isinstance(attrs["fl"].value, float)
    assert attrs["ex"] == AttrValue("expression", "s0 * 2")


def test_plain_attributes_are_typed_from_the_value(tmp_path: Path) -> None:
    attrs = load_text(tmp_path, TYPED).node("a").attrs
    assert {k: (attrs[k].kind, attrs[k].value) for k in
            ("i", "f", "b", "s", "li", "lfm", "ls", "lb", "none")} == {
        "i": ("int", 3), "f": ("float", 2.5), "b": ("bool", True), "s": ("string", "7"),
        "li": ("list_int", (1, 2)), "lfm": ("list_float", (1.0, 2.5)),
        "ls": ("list_string", ("p", "q")), "lb": ("list_bool", (True, False)),
        "none": ("list_none", ())}
    assert list(attrs) == sorted(attrs)


def attr_error(tmp_path: Path, value: str) -> tuple[str, str]:
    """Load a node `a` whose attribute `x` (line 7) is `value`."""
    return load_error(tmp_path, HEAD + f"nodes:\n  - name: a\n    type: Data\n    attrs:\n"
                                       f"      x: {value}\n")


def test_unknown_attribute_type_lists_valid_kinds(tmp_path: Path) -> None:
    msg, path = attr_error(tmp_path, "{type: list_flot, value: []}")
    assert msg.startswith(f"{path}:7: node 'a' field 'attrs.x.type': found 'list_flot'; valid: ")
    assert msg.endswith(", ".join(ATTR_KINDS))


@pytest.mark.parametrize(("value", "expected"), [
    ("{type: int, value: three}", "attribute of type int needs a int value, found 'three'"),
    ("{type: bool, value: 1}", "attribute of type bool needs a bool value, found 1"),
    ("{type: float, value: true}", "attribute of type float needs a float value, found True"),
    ("{type: list_int, value: 3}", "attribute of type list_int needs a list, found 3"),
    ("{type: list_int, value: [1, x]}", "attribute of type int needs a int value, found 'x'"),
    ("{type: list_list_int, value: [[1], [2.5]]}",
     "attribute of type int needs a int value, found 2.5"),
    ("{type: list_none, value: [1]}", "attribute of type list_none must be empty, found [1]"),
    ("{type: bytes, value: '!!!'}", "invalid base64 text '!!!'"),
    ("{type: named_attrs, value: {nam: x}}",
     "named_attrs needs a mapping with 'name' and 'attrs', found {'nam': 'x'}"),
])
def test_wrong_value_for_attribute_type(tmp_path: Path, value: str, expected: str) -> None:
    msg, path = attr_error(tmp_path, value)
    assert msg == f"{path}:7: node 'a' attribute 'x': {expected}"


@pytest.mark.parametrize("value", ["[1, two]", "[true, 1]", "[1, [2]]", "[a, 1.5]"])
def test_mixed_type_list(tmp_path: Path, value: str) -> None:
    msg, path = attr_error(tmp_path, value)
    assert msg.startswith(f"{path}:7: node 'a' attribute 'x': a list attribute must hold values "
                          "of one scalar type, found [")


def test_typed_attribute_needs_type_and_value(tmp_path: Path) -> None:
    msg, path = attr_error(tmp_path, "{type: int}")
    assert msg == (f"{path}:7: node 'a' field 'attrs.x': 'value' is a required property; "
                   "valid keys: type, value")


def test_subgraph_node_attribute_error_names_line(tmp_path: Path) -> None:
    text = HEAD + """\
nodes:
  - {name: w, type: PartitionedCall, subgraphs: {f: f}}
subgraphs:
  f:
    nodes:
      - name: inner
        type: Data
        attrs: {x: {type: data_type, value: float16}}
"""
    msg, path = load_error(tmp_path, text)
    assert msg == (f"{path}:10: node 'inner' attribute 'x': attribute of type data_type needs a "
                   "data_type value, found 'float16'")


# ---------------------------------------------------------------------------------------------
# Errors with file:line
# ---------------------------------------------------------------------------------------------

def test_malformed_yaml(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - name: a\n     type: Data\n")
    assert msg == f"{path}:5:10: malformed YAML: mapping values are not allowed in this context"


def test_malformed_yaml_flow_list(tmp_path: Path) -> None:
    text = HEAD + "nodes: [\n  {name: a, type: Data}\n  {name: b}\n]\n"
    msg, path = load_error(tmp_path, text)
    assert msg == f"{path}:5:3: malformed YAML: did not find expected ',' or ']'"


def test_malformed_json(tmp_path: Path) -> None:
    text = ('{"format": "streamalloc.graph/v1",\n "nodes": [\n'
            '  {"name": "a", "type": "Data"},,\n]}\n')
    msg, path = load_error(tmp_path, text, "g.json")
    assert msg == f"{path}:3:33: malformed JSON: Expecting value"


def test_duplicate_json_key(tmp_path: Path) -> None:
    """json.loads would keep the node's last type; a graph file means one of them."""
    text = ('{"format": "streamalloc.graph/v1", "name": "g",\n "nodes": [\n'
            '  {"name": "a", "type": "Data"},\n'
            '  {"name": "b", "type": "Relu", "inputs": ["a"], "type": "Add"}]}\n')
    msg, path = load_error(tmp_path, text, "g.json")
    assert msg == f"{path}:4:50: malformed JSON: key 'type' repeats the key of line 4"


def test_json_is_not_parsed_as_yaml(tmp_path: Path) -> None:
    # YAML would accept this (unquoted keys, a comment); a .json file must be strict JSON
    msg, path = load_error(tmp_path, "{format: streamalloc.graph/v1, nodes: []}\n", "g.json")
    assert msg.startswith(f"{path}:1:2: malformed JSON: Expecting property name")


@pytest.mark.parametrize(("text", "found"), [("hello\n", "str"), ("", "NoneType"),
                                             ("42\n", "int")])
def test_top_level_scalar_is_not_a_mapping(tmp_path: Path, text: str, found: str) -> None:
    msg, path = load_error(tmp_path, text)
    assert msg == f"{path}: expected a mapping with 'format' and 'nodes', found {found}"


def test_top_level_json_list_is_not_a_mapping(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, "[1, 2]\n", "g.json")
    assert msg == f"{path}:1: expected a mapping with 'format' and 'nodes', found a list"


def test_top_level_yaml_list_is_not_a_mapping(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, "- a\n- b\n")
    assert msg == f"{path}:1: expected a mapping with 'format' and 'nodes', found a list"


def test_wrong_format_value(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, "format: streamalloc.graph/v2\n"
                                     "nodes:\n  - {name: a, type: Data}\n")
    assert msg == (f"{path}:1: field 'format': expected 'streamalloc.graph/v1', "
                   "found 'streamalloc.graph/v2'")


def test_missing_format(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, "name: g\nnodes:\n  - {name: a, type: Data}\n")
    assert msg.startswith(f"{path}:1: the document: 'format' is a required property; valid "
                          "keys: attrs, dynamic_shape, engines, format, name,")


def test_unknown_top_level_key(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Data}\nnodez: []\n")
    keys = sorted(GRAPH_SCHEMA["properties"])
    assert {"format", "name", "nodes", "subgraphs", "partition", "options"} <= set(keys)
    assert msg == f"{path}:1: the document: unknown key 'nodez'; valid keys: {', '.join(keys)}"


def test_unknown_node_key_lists_valid_keys(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - name: a\n    type: Data\n"
                                            "    colour: red\n")
    keys = sorted(GRAPH_SCHEMA["$defs"]["node"]["properties"])
    assert {"name", "type", "engine", "inputs", "control_inputs", "attrs", "outputs",
            "stream_id", "task_count", "cost_us", "subgraphs"} <= set(keys)
    assert msg == f"{path}:4: node 'a': unknown key 'colour'; valid keys: {', '.join(keys)}"


def test_unknown_key_in_subgraph_node(tmp_path: Path) -> None:
    text = HEAD + """\
nodes:
  - {name: w, type: PartitionedCall, subgraphs: {f: f}}
subgraphs:
  f:
    nodes:
      - {name: b, type: Data}
      - name: c
        type: Relu
        colour: 1
"""
    msg, path = load_error(tmp_path, text)
    assert msg.startswith(f"{path}:9: node 'c': unknown key 'colour'; valid keys: attrs, ")


def test_unknown_engine_row_key(tmp_path: Path) -> None:
    text = HEAD + "engines:\n  - {name: X, fast: true}\nnodes:\n  - {name: a, type: Data}\n"
    msg, path = load_error(tmp_path, text)
    assert msg == (f"{path}:4: field 'engines.0': unknown key 'fast'; valid keys: attach, "
                   "compute_cost, default_task_count, independent, name, scheduler_id, "
                   "skip_assign_stream")


def test_wrong_type(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - name: a\n    type: Data\n"
                                            "    task_count: three\n")
    assert msg == f"{path}:6: node 'a' field 'task_count': expected integer, found \"three\""


def test_wrong_type_for_inputs(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Data}\n"
                                            "  - name: b\n    type: Relu\n    inputs: a\n")
    assert msg == f"{path}:7: node 'b' field 'inputs': expected array, found \"a\""


def test_missing_name(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Data}\n"
                                            "  - type: Relu\n    inputs: [a]\n")
    assert msg.startswith(f"{path}:5: ")
    assert "'name' is a required property; valid keys: " in msg


def test_missing_name_does_not_print_none(tmp_path: Path) -> None:
    msg, _ = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Data}\n"
                                         "  - type: Relu\n    inputs: [a]\n")
    assert "None" not in msg


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - name: a\n    type: Data\n    name: b\n")
    assert msg == f"{path}:6: malformed YAML: key 'name' repeats the key of line 4"


def test_duplicate_top_level_key(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes: []\nname: h\n")
    assert msg == f"{path}:4: malformed YAML: key 'name' repeats the key of line 2"


def test_duplicate_node_across_root_and_subgraph(tmp_path: Path) -> None:
    text = HEAD + """\
nodes:
  - {name: a, type: Data}
  - {name: w, type: While, inputs: [a], subgraphs: {body: s}}
subgraphs:
  s:
    nodes:
      - {name: a, type: Data}
"""
    msg, path = load_error(tmp_path, text)
    assert msg == (f"{path}:9: duplicate node name 'a' (first defined at {path}:4); "
                   "node names must be unique across all graphs")


def test_dangling_input_names_line(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Data}\n"
                                            "  - {name: b, type: Relu, inputs: [zzz]}\n")
    assert msg == f"{path}:5: node 'b' input 0 (zzz:0) in graph 'g': no node named 'zzz'"


def test_unknown_engine_names_line(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - name: a\n    type: Data\n"
                                            "    engine: Nope\n")
    assert msg.startswith(f"{path}:4: node 'a' field 'engine': unknown engine 'Nope'; known: "
                          "AIcoreEngine, DNN_HCCL, ")
    assert msg.endswith("(add it under 'engines')")


def test_custom_engine_is_known(tmp_path: Path) -> None:
    text = HEAD + "engines:\n  - {name: Nope}\nnodes:\n  - {name: a, type: Data, engine: Nope}\n"
    graph = load_text(tmp_path, text)
    assert graph.node("a").engine == "Nope"
    assert graph.engines.get("Nope") == Engine("Nope")


def test_cycle_names_file(tmp_path: Path) -> None:
    msg, path = load_error(tmp_path, HEAD + "nodes:\n  - {name: a, type: Relu, inputs: [b]}\n"
                                            "  - {name: b, type: Relu, inputs: [a]}\n")
    assert msg in (f"{path}: graph 'g' has a cycle: a -> b -> a",
                   f"{path}: graph 'g' has a cycle: b -> a -> b")


def test_unowned_subgraph_names_line(tmp_path: Path) -> None:
    text = HEAD + "nodes:\n  - {name: a, type: Data}\nsubgraphs:\n  s:\n    nodes: []\n"
    msg, path = load_error(tmp_path, text)
    assert msg == (f"{path}:6: subgraph 's' is not owned by any node (list it under a node's "
                   "'subgraphs')")


def test_partition_unknown_node(tmp_path: Path) -> None:
    text = HEAD + ("nodes:\n  - {name: a, type: Data}\npartition:\n"
                   "  - {id: sg1, engine: AIcoreEngine, nodes: [a]}\n"
                   "  - {id: sg2, engine: AIcoreEngine, nodes: [zz]}\n")
    msg, path = load_error(tmp_path, text)
    assert msg == f"{path}:7: partition 'sg2' lists unknown node 'zz'"


def test_bad_topo_sorting_option(tmp_path: Path) -> None:
    path = write(tmp_path, "g.yaml", HEAD + "options: {ge.topoSortingMode: 7}\n"
                                            "nodes:\n  - {name: a, type: Data}\n")
    with pytest.raises(OptionError) as err:
        load_graph(path)
    assert str(err.value) == (f"{path}: option ge.topoSortingMode is '7'; "
                              "valid: '', '0', '1', '2', '3'")
    assert err.value.exit_code == 3


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    with pytest.raises(GraphLoadError) as err:
        load_graph(path)
    assert str(err.value) == f"{path}: no such file"
    with pytest.raises(GraphLoadError, match="no such file"):
        load_yaml_json(path)


def test_directory(tmp_path: Path) -> None:
    path = tmp_path / "graphs.yaml"
    path.mkdir()
    with pytest.raises(GraphLoadError) as err:
        load_graph(path)
    assert str(err.value) == f"{path}: is a directory, expected a graph file"


def test_directory_given_to_the_yaml_loader(tmp_path: Path) -> None:
    path = tmp_path / "graphs.yaml"
    path.mkdir()
    with pytest.raises(GraphLoadError) as err:
        load_yaml_json(path)
    assert str(err.value).startswith(f"{path}: cannot read the file: ")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"format: streamalloc.graph/v1\nname: caf\xe9\nnodes: []\n")
    with pytest.raises(GraphLoadError) as err:
        load_graph(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: cannot read the file: ")
    assert "utf-8" in msg and "0xe9" in msg


def test_json_semantic_error_names_line(tmp_path: Path) -> None:
    text = ('{"format": "streamalloc.graph/v1",\n "name": "g",\n "nodes": [\n'
            '  {"name": "a", "type": "Data"},\n'
            '  {"name": "b", "type": "Relu",\n'
            '   "inputs": ["zzz"]}\n ]\n}\n')
    msg, path = load_error(tmp_path, text, "g.json")
    assert msg == f"{path}:5: node 'b' input 0 (zzz:0) in graph 'g': no node named 'zzz'"


def test_json_schema_error_names_line(tmp_path: Path) -> None:
    text = ('{"format": "streamalloc.graph/v1",\n "nodes": [\n'
            '  {"name": "a",\n   "type": "Data",\n   "task_count": "three"}\n ]\n}\n')
    msg, path = load_error(tmp_path, text, "g.json")
    assert msg == f"{path}:5: node 'a' field 'task_count': expected integer, found \"three\""


# ---------------------------------------------------------------------------------------------
# Round trip and canonical text
# ---------------------------------------------------------------------------------------------

RICH = FULL.replace("dynamic_shape: false", "dynamic_shape: true\nattrs: {root_flag: 1}") \
    .replace("      _parallel_group: \"g1\"\n", "      _parallel_group: \"g1\"\n" + "".join(
        "      " + line.strip() + "\n" for line in TYPED.split("attrs:\n", 1)[1].splitlines())) \
    .replace("  loop_body:\n    nodes:", "  loop_body:\n    attrs: {_body: {type: list_int, "
                                         "value: []}}\n    nodes:")


def test_rich_example_is_valid(tmp_path: Path) -> None:
    graph = load_text(tmp_path, RICH, "rich.yaml")
    assert graph.dynamic_shape is True
    assert graph.root.attrs["root_flag"] == AttrValue("int", 1)
    assert graph.subgraphs["loop_body"].attrs["_body"] == AttrValue("list_int", ())
    assert graph.node("relu1").attrs["lli"] == AttrValue("list_list_int", ((1, 2), (3,)))
    assert len(graph.node("relu1").attrs) == 3 + 17


@pytest.mark.parametrize("text", [FULL, RICH, TYPED], ids=["full", "rich", "typed"])
def test_round_trip_yaml_and_json(tmp_path: Path, text: str) -> None:
    graph = load_text(tmp_path, text, "orig.yaml")
    again_yaml = load_text(tmp_path, dump_yaml(graph), "again.yaml")
    again_json = load_text(tmp_path, dump_json(graph), "again.json")
    assert again_yaml == graph
    assert again_json == graph
    assert dump_yaml(again_yaml) == dump_yaml(graph)
    assert dump_json(again_json) == dump_json(graph)
    assert print_graph(again_yaml) == print_graph(again_json) == print_graph(graph)


def test_round_trip_keeps_typed_kinds(tmp_path: Path) -> None:
    graph = load_text(tmp_path, TYPED)
    again = load_text(tmp_path, dump_json(graph), "again.json")
    assert {k: v.kind for k, v in again.node("a").attrs.items()} == {
        k: v.kind for k, v in graph.node("a").attrs.items()}
    document = json.loads(dump_json(graph))
    written = document["nodes"][0]["attrs"]
    assert written["lf"] == {"type": "list_float", "value": []}
    assert written["raw"] == {"type": "bytes", "value": "aGVsbG8="}
    assert written["i"] == 3 and written["ls"] == ["p", "q"] and written["none"] == []


def test_dump_writes_only_non_defaults(tmp_path: Path) -> None:
    document = json.loads(dump_json(load_text(tmp_path, FULL, "demo.yaml")))
    assert document["format"] == "streamalloc.graph/v1"
    assert document["engines"] == [{"name": "MyAccel", "independent": True, "attach": False,
                                    "skip_assign_stream": False, "scheduler_id": "TS_1",
                                    "compute_cost": 2, "default_task_count": 1}]
    assert document["op_engines"] == {"MyCollective": "MyAccel"}
    relu1 = document["nodes"][1]
    assert "engine" not in relu1  # AIcoreEngine is Relu's default
    assert "dynamic_shape" not in document


def test_printer_text(tmp_path: Path) -> None:
    text = print_graph(load_text(tmp_path, FULL, "demo.yaml"))
    lines = text.splitlines()
    assert lines[:3] == ["// streamalloc.graph/v1 canonical text",
                         "graph demo dynamic_shape=false",
                         'option ac_parallel_enable = "1"']
    assert ("  %relu1 = Relu[AIcoreEngine](%data:0) <stream_id=0 task_count=3 cost_us=12.5> "
            '{_parallel_group="g1", _stream_label="a", _user_stream_label="111"} '
            "-> (float16[1,64,56,56] NC1HWC0)") in lines
    assert "  %relu2 = Relu[AIcoreEngine](%relu1:0) ctrl(%data)" in lines
    assert ("  %loop = While[DNN_VM_GE_LOCAL](%relu1:0) subgraphs(cond=@loop_cond, "
            "body=@loop_body)") in lines
    assert lines.index("subgraph @loop_cond parent=%loop") < lines.index(
        "subgraph @loop_body parent=%loop")
    assert text.endswith("\n")


def test_printer_typed_values(tmp_path: Path) -> None:
    line = print_graph(load_text(tmp_path, TYPED)).splitlines()[-1]
    for part in ('b=true', 'dt=dt(1)', 'ex="s0 * 2"', 'f=2.5', 'fl=2.0', 'i=3', 'lf=list_float[]',
                 'lfm=list_float[1.0, 2.5]', 'lli=list_list_int[[1, 2], [3]]',
                 'na="aipp"{mode=1, tags=list_string["x", "y"]}', 'none=list_none[]',
                 'raw=bytes<5 bytes>', 's="7"', 'td=float32[2,3] ND'):
        assert part in line, part


_PRINT = ("import sys; from streamalloc.ir.loaders import load_graph; "
          "from streamalloc.ir.printer import print_graph; "
          "sys.stdout.write(print_graph(load_graph(sys.argv[1])))")


def test_printer_is_byte_identical_across_runs(tmp_path: Path) -> None:
    path = write(tmp_path, "rich.yaml", RICH)
    json_path = write(tmp_path, "rich.json", dump_json(load_graph(path)))
    outputs = []
    for seed, source in (("1", path), ("2", json_path)):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _PRINT, str(source)], env=env,
                              capture_output=True, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].decode("utf-8") == print_graph(load_graph(path))


def test_non_topological_file_is_sorted_and_round_trips(tmp_path: Path) -> None:
    # relu reads data but is listed first: GE's DFS gives data, then the last consumer (c) first
    text = HEAD + ("nodes:\n  - {name: relu, type: Relu, inputs: [data]}\n"
                   "  - {name: data, type: Data}\n  - {name: c, type: Cast, inputs: [data]}\n")
    graph = load_text(tmp_path, text)
    assert [x.name for x in graph.root.nodes] == ["data", "c", "relu"]
    for name, dump in (("again.yaml", dump_yaml), ("again.json", dump_json)):
        again = load_text(tmp_path, dump(graph), name)
        assert again == graph
        assert [x.name for x in again.root.nodes] == ["data", "c", "relu"]
