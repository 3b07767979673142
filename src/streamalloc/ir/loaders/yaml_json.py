"""Our YAML/JSON graph format (formats.md section 1) -> Graph.

Every error names the file, the line (YAML; JSON files are re-read as YAML to find it), the node
and field, what was expected and, for keys and enums, the valid choices.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from json import JSONDecodeError
from pathlib import Path
from typing import Any

import yaml

from streamalloc.errors import GraphLoadError
from streamalloc.ir.attrs import attr_from_plain, desc_from_plain
from streamalloc.ir.builder import GraphBuilder, NodeRow, parse_ref
from streamalloc.ir.engines import default_engine_table, engine_from_plain
from streamalloc.ir.graph import DataInput, Graph, PartitionEntry
from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
from streamalloc.ir.loaders.located import line_of, load_located, yaml_error
from streamalloc.json_text import decode_json
from streamalloc.validation import SchemaCheck, explain

_CHECK = SchemaCheck(GRAPH_SCHEMA)


class _Where:
    """A lazy `file:line`: the line is looked up only when a message prints it."""

    __slots__ = ("located", "path", "where")  # one per node while a file loads

    def __init__(self, path: str, where: tuple[Any, ...], located: Callable[[], Any]) -> None:
        self.path, self.where, self.located = path, where, located

    def __str__(self) -> str:
        document = self.located()
        line = line_of(document, self.where) if document is not None else 0
        return f"{self.path}:{line}" if line else self.path


Locate = Callable[[Sequence[Any]], object]


def load_yaml_json(path: str | Path, text: str | None = None) -> Graph:
    """Load a `.yaml`/`.yml`/`.json` graph file."""
    path = Path(path)
    text = read_text(path) if text is None else text
    document = _parse(path, text)

    @cache
    def located() -> Any:
        # JSON has no line marks; re-read it as YAML (once, on the first message) to find lines.
        return document if path.suffix != ".json" else _try_located(text)

    def locate(where: Sequence[Any]) -> _Where:
        return _Where(str(path), tuple(where), located)

    _validate(document, locate)
    # JSON messages find their lines in the text, not the document: its node entries can go as
    # they are built, so the graph reuses their memory (a 1M-node file: ~0.5 GB less at peak)
    return graph_from_document(document, str(path), locate, default_name=path.stem,
                               consume=path.suffix == ".json")


def read_text(path: Path) -> str:
    """File text, with missing or unreadable files reported as input errors."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GraphLoadError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GraphLoadError(f"{path}: cannot read the file: {exc}") from None


def _parse(path: Path, text: str) -> Any:
    if path.suffix == ".json":
        try:
            return decode_json(text)
        except JSONDecodeError as exc:
            raise GraphLoadError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}"
                                 ) from None
    try:
        return load_located(text)
    except yaml.YAMLError as exc:
        raise GraphLoadError(yaml_error(exc, text, str(path))) from None


def _try_located(text: str) -> Any:
    try:
        return load_located(text)
    except yaml.YAMLError:
        return None


def _field_name(path: Sequence[Any], document: Any) -> str:
    if len(path) >= 2 and path[0] in ("nodes",) and isinstance(path[1], int):
        node = document["nodes"][path[1]]
        rest = ".".join(str(p) for p in path[2:])
        name = node.get("name") if isinstance(node, Mapping) else None
        who = f"node {name!r}" if isinstance(name, str) else f"node #{path[1] + 1}"
        return who + (f" field {rest!r}" if rest else "")
    if len(path) >= 4 and path[0] == "subgraphs" and path[2] == "nodes":
        return _field_name(list(path[2:]), document["subgraphs"][path[1]])
    return f"field {'.'.join(str(p) for p in path)!r}" if path else "the document"


def _validate(document: Any, locate: Locate) -> None:
    if not isinstance(document, Mapping):
        found = "a list" if isinstance(document, list) else type(document).__name__
        raise GraphLoadError(f"{locate([])}: expected a mapping with 'format' and 'nodes', found "
                             f"{found}")
    error = _CHECK.first_error(document)
    if error is None:
        return
    path = list(error.absolute_path)
    raise GraphLoadError(f"{locate(path)}: {_field_name(path, document)}: {explain(error)}")


def graph_from_document(document: Mapping[str, Any], source: str, locate: Locate,
                        default_name: str = "graph", *, consume: bool = False) -> Graph:
    """Build a Graph from a schema-valid document; `consume`: drop each node entry from the
    document once its node is built (the caller no longer needs them)."""
    table = default_engine_table()
    if "engines" in document or "op_engines" in document:
        table = table.extended((engine_from_plain(e) for e in document.get("engines", ())),
                               document.get("op_engines"))
    options = {str(k): _option_text(v) for k, v in (document.get("options") or {}).items()}
    name = document.get("name") or default_name
    builder = GraphBuilder(name, source=source, options=options, engines=table,
                           dynamic_shape=bool(document.get("dynamic_shape", False)))
    subgraphs = document.get("subgraphs") or {}
    builder.set_graph_attrs(_attrs(document, [], locate, f"graph {name!r}"))
    for sub, body in subgraphs.items():
        builder.add_subgraph(sub, origin=locate(["subgraphs", sub]),
                             attrs=_attrs(body, ["subgraphs", sub], locate, f"graph {sub!r}"))
    _add_nodes(builder, document["nodes"], name, ["nodes"], locate, consume=consume)
    for sub, body in subgraphs.items():
        _add_nodes(builder, body["nodes"], sub, ["subgraphs", sub, "nodes"], locate,
                   consume=consume)
    if "partition" in document:
        builder.set_partition(
            (PartitionEntry(e["id"], e["engine"], e.get("stream_label", ""), tuple(e["nodes"])),
             locate(["partition", i])) for i, e in enumerate(document["partition"]))
    return builder.build(order=document.get("node_order", "given"))


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _add_nodes(builder: GraphBuilder, nodes: list[Any], graph: str, path: list[Any],
               locate: Locate, *, consume: bool) -> None:
    def origin_at(index: int) -> object:
        return locate([*path, index])

    builder.add_nodes(graph, _node_rows(nodes, path, locate, consume=consume), origin_at)


def _node_rows(nodes: list[Any], path: list[Any], locate: Locate, *, consume: bool
               ) -> Iterator[NodeRow]:
    """The builder's row of each node entry (the hot loop of loading: entries with only a name,
    a type and connected inputs, most of them, skip the other fields)."""
    # Output 0 of each node listed so far, by its reference text: a file lists most producers
    # before their consumers, and looking a reference up costs a quarter of parsing it (which
    # makes and interns the name's string again)
    earlier: dict[str, DataInput] = {}
    for index, node in enumerate(nodes):
        inputs = node.get("inputs")
        name = node["name"]
        if inputs is None and len(node) == 2:
            yield name, node["type"], None, (), (), None, (), (), (), None, None, None
        elif len(node) == 3 and inputs and "" not in inputs:
            refs: tuple[DataInput | None, ...]
            if len(inputs) == 1:  # most nodes: a tuple made without an iterator
                ref = earlier.get(inputs[0])
                refs = (parse_ref(inputs[0]) if ref is None else ref,)
            else:
                refs = tuple(map(earlier.get, inputs))
                if None in refs:
                    refs = tuple(map(parse_ref, inputs))
            yield name, node["type"], None, refs, (), None, (), (), (), None, None, None
        else:
            yield _full_row(node, [*path, index], locate)
        if type(name) is str:  # a wrong type is the builder's error to report
            earlier[name + ":0"] = DataInput(sys.intern(name), 0)
        if consume:
            nodes[index] = None


def _refs(inputs: list[str] | None) -> tuple[DataInput | None, ...]:
    if not inputs:
        return ()
    return tuple(None if ref == "" else parse_ref(ref) for ref in inputs)  # "": unconnected


def _full_row(node: Mapping[str, Any], here: list[Any], locate: Locate) -> NodeRow:
    get = node.get
    outputs, descs, cost = get("outputs"), get("input_descs"), get("cost_us")
    return (node["name"], node["type"], get("engine"), _refs(get("inputs")),
            tuple(get("control_inputs", ())),
            _attrs(node, here, locate, f"node {node['name']!r}") if "attrs" in node else None,
            tuple(desc_from_plain(d) for d in outputs) if outputs else (),
            tuple(desc_from_plain(d) for d in descs) if descs else (),
            tuple(node["subgraphs"].items()) if "subgraphs" in node else (),
            get("stream_id"), get("task_count"), _cost(cost, node["name"], [*here, "cost_us"],
                                                        locate))


def _cost(cost: Any, name: str, where: list[Any], locate: Locate) -> float | None:
    """The node's cost in us: a finite number (the schema bounds it, but NaN passes any bound,
    and the emulator's trace and the solver's integers cannot hold it)."""
    if cost is None:
        return None
    if not math.isfinite(cost):
        raise GraphLoadError(f"{locate(where)}: node {name!r} field 'cost_us': {cost} is not a "
                             "finite number of microseconds")
    return float(cost)


def _attrs(owner: Mapping[str, Any], here: list[Any], locate: Locate, what: str
           ) -> dict[str, Any]:
    out = {}
    for key, plain in (owner.get("attrs") or {}).items():
        try:
            out[str(key)] = attr_from_plain(plain)
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            kind = plain.get("type") if isinstance(plain, Mapping) else None
            form = f" (a value of type {kind!r} has its own form, docs/graph-format.md)" \
                if isinstance(exc, AttributeError | IndexError | TypeError) and kind else ""
            raise GraphLoadError(f"{locate([*here, 'attrs', key])}: {what} attribute {key!r}: "
                                 f"{exc}{form}") from None
    return out
