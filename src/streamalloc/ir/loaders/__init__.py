"""Graph loaders. `load_graph(path)` picks the loader by suffix and, for GE dumps, by content.

| suffix | loader |
|---|---|
| `.yaml`, `.yml`, `.json` | our graph format (`yaml_json`) |
| `.onnx` | ONNX model (`onnx_model`), constants folded (`onnx_fold`) unless `fold=False` |
| anything else | GE dump (`ge_dump`): protobuf text or binary, ModelDef or GraphDef |
"""

from __future__ import annotations

from pathlib import Path

from streamalloc import collector
from streamalloc.errors import GraphLoadError
from streamalloc.ir.graph import Graph

GRAPH_SUFFIXES = (".yaml", ".yml", ".json")


@collector.pausing
def load_graph(path: str | Path, *, fold: bool = True) -> Graph:
    """Load any supported graph file into the IR (raises GraphLoadError on bad input).

    `fold` applies to ONNX models: constant-only nodes become `Const` weights, as GE's constant
    folding does (`onnx_fold`); `fold=False` keeps the model as written. Other formats are
    loaded as written either way.
    """
    path = Path(path)
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL in it
        raise GraphLoadError(f"{path}: cannot read the file: {exc}") from None
    if not exists:
        raise GraphLoadError(f"{path}: no such file")
    if path.is_dir():
        raise GraphLoadError(f"{path}: is a directory, expected a graph file")
    suffix = path.suffix.lower()
    if suffix in GRAPH_SUFFIXES:
        from streamalloc.ir.loaders.yaml_json import load_yaml_json
        return load_yaml_json(path)
    if suffix == ".onnx":
        from streamalloc.ir.loaders.onnx_model import load_onnx
        return load_onnx(path, fold=fold)
    from streamalloc.ir.loaders.ge_dump import load_ge_dump
    return load_ge_dump(path)
