"""The bulk loading path: node rows added in one call, whole-graph checks with the per-node
messages as fallback (the first problem in node order, as before), consumers by port then
link order, and a JSON round trip equal to the graph written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamalloc import api
from streamalloc.errors import GraphLoadError
from streamalloc.ir.adjacency import Consumer
from streamalloc.ir.builder import GraphBuilder, NodeRow, parse_ref
from streamalloc.ir.serialize import dump_json
from streamalloc.ir.synthetic import layered_graph


def row(name: str, type: str, *inputs: str) -> NodeRow:
    """A row of a node with data inputs only."""
    return (name, type, None, tuple(parse_ref(r) for r in inputs), (), None, (), (), (), None,
            None, None)


def test_duplicate_before_a_later_rows_error() -> None:
    def rows() -> Iterator[NodeRow]:
        yield row("a", "Data")
        yield row("a", "Relu")
        raise GraphLoadError("m.yaml:3: bad attribute")

    b = GraphBuilder("g", source="m.yaml")
    with pytest.raises(GraphLoadError, match=r"^m\.yaml:2: duplicate node name 'a' \(first "
                                             r"defined at m\.yaml:1\)"):
        b.add_nodes("g", rows(), lambda k: f"m.yaml:{k + 1}")


def test_rows_error_before_a_later_duplicate() -> None:
    def rows() -> Iterator[NodeRow]:
        yield row("a", "Data")
        raise GraphLoadError("m.yaml:2: bad attribute")

    b = GraphBuilder("g", source="m.yaml")
    with pytest.raises(GraphLoadError, match="bad attribute"):
        b.add_nodes("g", rows(), lambda k: f"m.yaml:{k + 1}")


def test_unknown_graph_names_the_first_row() -> None:
    b = GraphBuilder("g", source="m.yaml")
    with pytest.raises(GraphLoadError, match=r"^m\.yaml:1: node 'a' is placed in unknown graph "
                                             r"'nope'"):
        b.add_nodes("nope", [row("a", "Data")], lambda k: f"m.yaml:{k + 1}")


@pytest.mark.parametrize(("rows", "message"), [
    ([row("a", "Data"), row("b", "Relu", "a:-1"), row("c", "Relu", "zz")],
     r"m\.yaml:2: node 'b' input 0 \(a:-1\): node 'a' has no described outputs, and a port runs "
     r"0\.\.2147483647, not -1"),
    ([row("a", "Data"), row("c", "Relu", "zz"), row("b", "Relu", "a:-1")],
     r"m\.yaml:2: node 'c' input 0 \(zz:0\) in graph 'g': no node named 'zz'"),
    ([row("a", "Data"), row("c", "Relu", "zz"), ("d", "Relu", "NOPE", (), (), None, (), (),
                                                 (), None, None, None)],
     r"m\.yaml:2: node 'c' input 0"),
    ([("d", "Relu", "NOPE", (), (), None, (), (), (), None, None, None),
      row("c", "Relu", "zz")],
     r"m\.yaml:1: node 'd' field 'engine': unknown engine 'NOPE'"),
])
def test_first_problem_in_node_order(rows: list[NodeRow], message: str) -> None:
    b = GraphBuilder("g", source="m.yaml")
    b.add_nodes("g", rows, lambda k: f"m.yaml:{k + 1}")
    with pytest.raises(GraphLoadError, match="^" + message):
        b.build()


def test_consumers_by_port_then_link_order() -> None:
    b = GraphBuilder("g")
    b.add_nodes("g", [row("s", "Split"), row("x", "Relu", "s:2"), row("y", "Add", "s:0", "s:1"),
                      row("z", "Relu", "s:0")], lambda k: "")
    root = b.build().root
    assert root.consumers["s"] == (Consumer(0, "y", 0), Consumer(0, "z", 0),
                                   Consumer(1, "y", 1), Consumer(2, "x", 0))
    assert dict(root.index) == {"s": 0, "x": 1, "y": 2, "z": 3}
    assert root.list_order == ("s", "x", "y", "z")


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2000-node synthetic graph (attributes, labels, several engines) as a JSON file."""
    path = tmp_path_factory.mktemp("load") / "g2k.json"
    path.write_text(dump_json(layered_graph(2000, label_every=7)))
    return path


def test_loaded_graph_equals_the_built_one(graph_file: Path) -> None:
    graph = api.read_graph(graph_file)
    assert graph == layered_graph(2000, label_every=7)
    assert list(graph.by_name) == [n.name for n in graph.root.nodes]
