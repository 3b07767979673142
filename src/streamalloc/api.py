"""The Python API behind the command line: load, partition, convert."""

from __future__ import annotations

from pathlib import Path

from streamalloc.errors import UsageError
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import GraphPartition, partition_model
from streamalloc.ir.serialize import dump_json, dump_yaml

__all__ = ["convert_graph", "load_graph", "partition_model"]


def convert_graph(model: str | Path, output: str | Path) -> Graph:
    """Load any supported model and write it as our graph format (`.json` or YAML by suffix)."""
    graph = load_graph(model)
    text = dump_json(graph) if Path(output).suffix == ".json" else dump_yaml(graph)
    write_atomic(Path(output), text)
    return graph


def partitions(graph: Graph) -> dict[str, GraphPartition]:
    """GE's engine-subgraph partition of every graph of the model."""
    return partition_model(graph)


def write_atomic(path: Path, text: str) -> None:
    """Write the file completely or not at all (a failed command leaves no output file)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write the output file: {exc.strerror or exc}") from None
