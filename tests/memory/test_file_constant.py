"""FileConstant external weights: the three ways to find the file, reading, export modes 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memory.graphs import F32_4, build, weight

from streamalloc.errors import InputError
from streamalloc.ir.graph import Graph
from streamalloc.memory import VarDesc, VarGraphError, VarOp
from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.file_constant import (
    COMBINED_FILE,
    export_mode,
    file_id_map,
    locate,
    read_weight,
)
from streamalloc.memory.loading import load_into_device
from streamalloc.memory.passes import FileConstantExportPass
from streamalloc.memory.plan import variable_plan

DESC = VarDesc(shape=(4,))  # 16 bytes of float32
BINS = json.dumps({"value_bins": [{"value_bin_id": "bucket", "value_bin_file": "b.bin"}]})


def fc(**attrs: object) -> VarOp:
    return VarOp("fc", "FileConstant", (DESC,), attrs=attrs)


def test_file_path_comes_first() -> None:
    where = locate(fc(file_path="a.bin", file_id="bucket", location="c.bin", offset=8))
    assert (where.path, where.offset, where.length, where.how) == ("a.bin", 0, 16, "file_path")


def test_file_id_through_value_bins() -> None:
    where = locate(fc(file_id="bucket", location="c.bin"), {"ge.exec.value_bins": BINS})
    assert (where.path, where.how) == ("b.bin", "file_id")
    with pytest.raises(VarGraphError, match="not in option"):
        locate(fc(file_id="other"), {"ge.exec.value_bins": BINS})


def test_location_offset_length() -> None:
    where = locate(fc(location="c.bin", offset=512, length=12))
    assert (where.path, where.offset, where.length, where.how) == ("c.bin", 512, 12, "location")
    with pytest.raises(VarGraphError, match="names no file"):
        locate(fc())


def test_bad_value_bins_option() -> None:
    with pytest.raises(InputError, match="value_bins"):
        file_id_map({"ge.exec.value_bins": "{not json"})


def test_read_weight_relative_and_short(tmp_path: Path) -> None:
    (tmp_path / "c.bin").write_bytes(bytes(range(32)))
    assert read_weight(locate(fc(location="c.bin", offset=4, length=4)), tmp_path) == \
        bytes([4, 5, 6, 7])
    with pytest.raises(VarGraphError, match=r"only 32"):
        read_weight(locate(fc(location="c.bin", offset=0, length=64)), tmp_path)
    with pytest.raises(VarGraphError, match="cannot read"):
        read_weight(locate(fc(location="missing.bin")), tmp_path)


def test_export_mode_option() -> None:
    assert [export_mode({"ge.externalWeight": v}) for v in ("", "0", "1", "2")] == [0, 0, 1, 2]
    with pytest.raises(InputError, match=r"ge\.externalWeight"):
        export_mode({"ge.externalWeight": "3"})


def _weights_graph(mode: str = "") -> Graph:
    return build([
        {"name": "a/w", "type": "Const", "outputs": [F32_4], "attrs": {"value": weight(b"A" * 16)}},
        {"name": "b", "type": "Constant", "outputs": [F32_4],
         "attrs": {"value": weight(b"B" * 16)}},
        {"name": "c", "type": "Const", "outputs": [F32_4], "attrs": {"value": weight(b"A" * 16)}},
        {"name": "bare", "type": "Const", "outputs": [F32_4]},
        {"name": "add", "type": "AddN", "inputs": ["a/w", "b", "c", "bare"]},
    ], {"ge.externalWeight": mode} if mode else None)


def test_export_mode_1_one_file_per_weight(tmp_path: Path) -> None:
    out = FileConstantExportPass(tmp_path, 1).apply(_weights_graph()).graph
    a, b, c = (out.node(n) for n in ("a/w", "b", "c"))
    assert a.type == b.type == c.type == "FileConstant" and out.node("bare").type == "Const"
    assert a.attr("location") == str(tmp_path / "a_w.bin") and a.attr("offset") == 0
    assert c.attr("location") == a.attr("location")  # identical bytes: one file
    assert (tmp_path / "b.bin").read_bytes() == b"B" * 16
    assert "value" not in a.attrs and a.attr("length") == 16
    plan = variable_plan(out)
    assert plan.variables["c"].reused_from == "a/w" and plan.variables["b"].reused_from is None


def test_export_mode_2_one_combined_file(tmp_path: Path) -> None:
    graph = _weights_graph("2")
    out = FileConstantExportPass(tmp_path).apply(graph).graph
    blob = (tmp_path / COMBINED_FILE).read_bytes()
    offsets = [out.node(n).attr("offset") for n in ("a/w", "b", "c")]
    assert offsets == [0, 512, 0] and blob[512:528] == b"B" * 16 and len(blob) == 528
    loaded = load_into_device(variable_plan(out), memory := EmulatedMemory())
    assert memory.read(loaded.address("b"), 16) == b"B" * 16
    assert memory.read(loaded.address("c"), 16) == b"A" * 16
    assert loaded.variables["b"].initialized and not loaded.variables["bare"].initialized


def test_export_off_keeps_the_graph(tmp_path: Path) -> None:
    graph = _weights_graph()
    assert FileConstantExportPass(tmp_path).apply(graph).graph is graph
    assert not list(tmp_path.iterdir())
