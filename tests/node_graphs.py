"""Small graphs written as YAML node lines, for tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph


def graph_of(tmp_path: Path, name: str, nodes: Sequence[str]) -> Graph:
    """The graph `name` whose nodes are these YAML flow mappings (written under tmp_path)."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"format: streamalloc.graph/v1\nname: {name}\nnodes:\n"
                    + "".join(f"  - {n}\n" for n in nodes))
    return load_graph(path)
