"""Faster paths give what the paths they replace gave: the decoding of JSON texts
(`json_text.decode_json`, json's own but for a repeated key), the builder's consumer lists, a
graph's producer and consumer arrays (what the partition, the verifier, the emulator and the
passes read instead of name lookups), the distinct values of integer arrays by a sort
(`arrays.sorted_distinct`) in the verifier's one-logical-stream-per-physical-stream check,
copies of read-only mappings, the split's task units read as a T-order column, and the
heuristic's runs of nodes noted alike."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamalloc import json_text
from streamalloc.arrays import sorted_distinct
from streamalloc.heuristic.driver import _run_starts
from streamalloc.ir import AttrValue, DataInput, GraphBuilder
from streamalloc.ir.adjacency import Consumer
from streamalloc.ir.clusters import in_positions
from streamalloc.mappings import own_dict
from streamalloc.sync.model import Task, TaskColumns
from streamalloc.sync.tasks import _counts, _node_row_units
from streamalloc.verify.node_columns import NodeColumns

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(),
    st.text(), st.sampled_from(["\ud800", "\x7f", "\u00e9", "a\\\"b"]))
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.text(max_size=4), inner, max_size=5)),
    max_leaves=30)
_ODD_TEXTS = st.sampled_from([
    "[1e400, -1e400]", "[NaN, Infinity]", '["\\ud800"]',
    "[1]x", "\ufeff{}", '["a\tb"]', "", "{", '{"a" 1}', "[1,]", "[01]", "[18446744073709551616]"])


def _outcome(decode: Any, text: str) -> Any:
    """What decoding gives: the document (NaN made comparable) or json's error, located."""
    try:
        return repr(decode(text))
    except json.JSONDecodeError as exc:
        return exc.msg, exc.lineno, exc.colno


def _same_as_json(text: str) -> None:
    assert _outcome(json_text.decode_json, text) == _outcome(json.loads, text)


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS, st.sampled_from([None, 1]), st.booleans())
def test_decode_json_is_json_loads(document: Any, indent: int | None, ascii_only: bool) -> None:
    _same_as_json(json.dumps(document, indent=indent, ensure_ascii=ascii_only))


@settings(max_examples=100, deadline=None)
@given(_ODD_TEXTS, st.integers(0, 3))
def test_decode_json_keeps_json_errors_and_extensions(text: str, cut: int) -> None:
    _same_as_json(text[:len(text) - cut] if cut < len(text) else text)


@pytest.mark.parametrize(("text", "error"), [
    ('{"a": 1, "b": 2, "a": 3}', ("key 'a' repeats the key of line 1", 1, 18)),
    ('{"nodes": [\n {"name": "x",\n  "type": "Relu", "name": "y"}]}',
     ("key 'name' repeats the key of line 2", 3, 19)),
    ('[{"a\\u0062": 1, "ab": 2}]', ("key 'ab' repeats the key of line 1", 1, 17)),
    ('{"k": {"k": 1}, "l": [{}, {}]}', None),
])
def test_decode_json_rejects_a_repeated_key_at_the_repeat(text: str,
                                                           error: tuple[str, int, int] | None
                                                           ) -> None:
    """json keeps a repeated key's last value; decode_json says where the key repeats (a key
    repeated in another object, or in an object nested in its own, is no repeat)."""
    assert _outcome(json_text.decode_json, text) == (error or repr(json.loads(text)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2)), max_size=4),
                min_size=1, max_size=20))
def test_consumers_by_port_then_link_order(inputs: list[list[tuple[int, int]]]) -> None:
    # node i reads output `port` of an earlier node (a random index folded into range)
    builder = GraphBuilder("g")
    builder.add_node("n0", "Data")
    refs = [[(f"n{src % (i + 1)}", port) for src, port in row] for i, row in enumerate(inputs)]
    for i, row in enumerate(refs, 1):
        builder.add_node(f"n{i}", "Relu", inputs=[DataInput(src, port) for src, port in row])
    expected: dict[str, list[Consumer]] = {}
    for i, row in enumerate(refs, 1):
        for slot, (src, port) in enumerate(row):
            expected.setdefault(src, []).append(Consumer(port, f"n{i}", slot))
    consumers = builder.build().root.consumers
    assert dict(consumers) == {src: tuple(sorted(found, key=lambda c: c.port))
                               for src, found in expected.items()}
    assert all(type(found) is tuple for found in consumers.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 3)), max_size=30))
def test_single_logical_as_with_np_unique(rows: list[tuple[int, int]]) -> None:
    physical = np.array([p for p, _ in rows], np.int64)
    stream = np.array([s for _, s in rows], np.int64)
    none = np.zeros(len(rows), np.int64)
    columns = NodeColumns(none.astype(bool), stream, physical, none, none)
    on = (physical >= 0) & (stream >= 0)
    width = int(stream.max(initial=0)) + 1
    pairs = np.unique(physical[on] * width + stream[on])
    unique = len(np.unique(pairs // width)) == len(pairs)
    expected = dict(zip((pairs // width).tolist(), (pairs % width).tolist(), strict=True))
    assert columns.single_logical == (expected if unique else None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=40))
def test_sorted_distinct_is_np_unique(values: list[int]) -> None:
    array = np.array(values, np.int64)
    assert sorted_distinct(array).tolist() == np.unique(array).tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2),
                                             st.booleans()), max_size=4),
                          st.lists(st.integers(0, 30), max_size=2)),
                min_size=1, max_size=15),
       st.sampled_from(["listed", "sorted", "reordered"]))
def test_edge_arrays_are_the_name_lookups(rows: list[tuple[list[tuple[int, int, bool]],
                                                          list[int]]], how: str) -> None:
    # node i reads earlier nodes (data, some slots unconnected) and may wait on earlier ones
    # (control). "listed": G-order is the list; "sorted": the list is given reversed, so the
    # builder sorts it; "reordered": the listed graph in another topological order (deepest
    # first), so link order (the list's) and G-order differ and every array is made anew
    entries = [("n0", [], [])]
    for i, (data, control) in enumerate(rows, 1):
        entries.append((f"n{i}", [None if empty else DataInput(f"n{src % i}", port)
                                  for src, port, empty in data],
                        sorted({f"n{src % i}" for src in control})))
    builder = GraphBuilder("g")
    for name, data, control in reversed(entries) if how == "sorted" else entries:
        builder.add_node(name, "Relu" if data or control else "Data", inputs=data,
                         control_inputs=control)
    graph = builder.build()
    if how == "reordered":
        depth: dict[str, int] = {}
        for name, data, control in entries:
            depth[name] = 1 + max([depth[r.src] for r in data if r is not None]
                                  + [depth[c] for c in control], default=-1)
        graph = graph.reordered(sorted(depth, key=lambda n: (depth[n], -int(n[1:]))))
    root = graph.root
    index = root.index
    expected_in = [[index[r.src] for r in node.inputs if r is not None]
                   + [index[src] for src in node.control_inputs] for node in root.nodes]
    assert in_positions(root) == expected_in
    producers = graph.t_producers()
    assert producers.data.tolist() == [-1 if r is None else index[r.src]
                                       for node in root.nodes for r in node.inputs]
    assert producers.control.tolist() == [index[src] for node in root.nodes
                                          for src in node.control_inputs]
    from_arrays = {node.name: root.data_consumers(node.name) for node in root.nodes}
    table = root.consumers  # made now (unless sorting made it): compared with the arrays'
    assert from_arrays == {node.name: tuple(c.node for c in table.get(node.name, ()))
                           for node in root.nodes}


def test_own_dict_copies_a_proxy_and_a_mapping() -> None:
    inner = {"a": 1, "b": 2}
    for source in (MappingProxyType(inner), inner):
        copy = own_dict(source)
        copy["c"] = 3
        assert list(copy) == ["a", "b", "c"] and inner == {"a": 1, "b": 2}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Relu", "HcomAllReduce", "NonZero", "Identity"]),
                          st.sampled_from([None, 0, 2]), st.booleans()), min_size=1, max_size=12),
       st.lists(st.integers(0, 13), max_size=5), st.permutations(range(13)))
def test_row_units_in_t_order_or_by_name(nodes: list[tuple[str, int | None, bool]],
                                          made_at: list[int], order: list[int]) -> None:
    # a chain of nodes, some with a task count or an explicit count (an attribute); Send rows
    # made between them; the node rows in T-order (read as a column) or in another order (by
    # name): each row's units are its node's ASSIGNED main count, else its own units
    builder = GraphBuilder("g")
    builder.add_node("n0", "Data")
    for i, (op, count, explicit) in enumerate(nodes, 1):
        builder.add_node(f"n{i}", op, inputs=[DataInput(f"n{i - 1}")], task_count=count,
                         attrs={"_node_sqe_num": AttrValue("int", 5)} if explicit else None)
    graph = builder.build()
    names = list(graph.t_ordered_names())
    shuffled = [names[k] for k in order if k < len(names)]
    for listed in (names, shuffled):
        rows = TaskColumns(list(listed), [0] * len(listed), [()] * len(listed), {}).inserted(
            sorted(((at % (len(listed) + 1), Task(f"s{k}", "Send", "g", 0, is_sync=True))
                    for k, at in enumerate(made_at)), key=lambda insert: insert[0]))
        expected = []
        for row, name in enumerate(rows.names):
            if row in rows.made:
                expected.append(0)
                continue
            own, main, _ = _counts(graph, name)
            expected.append(main if main > 0 else own)
        assert _node_row_units(graph, rows) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2), st.integers(0, 2)),
                max_size=30))
def test_run_starts_where_a_key_changes(keys: list[tuple[int, int, int]]) -> None:
    objects = [(), ("a",), ("b",)]  # compared by identity
    numbers = [k[0] for k in keys], [k[1] for k in keys]
    column = [objects[k[2]] for k in keys]
    expected = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
    assert _run_starts(numbers, (column,)) == expected


@settings(max_examples=100, deadline=None)
@given(refs=st.lists(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["", ":0", ":1"])),
                              min_size=1, max_size=3), min_size=6, max_size=6))
def test_references_to_earlier_nodes_read_as_parsed(tmp_path_factory: Any,
                                                    refs: list[list[tuple[int, str]]]) -> None:
    """The loader looks a reference to output 0 of an earlier node up instead of parsing it:
    every input reads as `parse_ref` gives it, for earlier and later producers, other ports, no
    port, and names with a colon in them."""
    from streamalloc.ir.builder import parse_ref
    from streamalloc.ir.loaders import load_graph
    names = ["src", "a:1", "b", "c:0", "d", "e"]  # node k may read any node (a later one too)
    nodes: list[dict[str, Any]] = [{"name": "src", "type": "Data"}]
    for k, chosen in enumerate(refs[1:], start=1):
        # an earlier node (no cycle); a name with a colon needs its port
        inputs = [(name := names[min(j, k - 1)]) + (port or ":0" if ":" in name else port)
                  for j, port in chosen]
        nodes.append({"name": names[k], "type": "Relu", "inputs": inputs})
    nodes.append({"name": "f", "type": "Relu", "inputs": ["g:0", "g"]})  # a later producer
    nodes.append({"name": "g", "type": "Relu", "inputs": ["e:1"]})
    path = tmp_path_factory.mktemp("refs") / "g.json"
    path.write_text(json.dumps({"format": "streamalloc.graph/v1", "name": "g",
                                "nodes": nodes}), encoding="utf-8")
    graph = load_graph(path)
    for entry in nodes[1:]:
        node = graph.node(entry["name"])
        assert list(node.inputs) == [parse_ref(r) for r in entry["inputs"]]
        assert all(r.src is graph.node(r.src).name for r in node.inputs)  # one string per name


_VALUES = st.sampled_from([0, 1, 7, -1, True, None, "", "a", "Send", "Recv", "SendNotify",
                           "RecvNotify", "StreamActive", "event", "notify", [1], 2.0])
_KEYS = ("name", "type", "stream", "event", "id", "kind", "send", "recv", "send_stream",
         "recv_stream")


def _entry(valid: dict[str, Any], changes: dict[str, Any], drop: list[str]) -> dict[str, Any]:
    entry = {**valid, **changes}
    for key in drop:
        entry.pop(key, None)
    return entry


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(["Send", "Recv", "SendNotify", "StreamActive"]),
                      max_size=5),
       changes=st.lists(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=2), max_size=5),
       drop=st.lists(st.lists(st.sampled_from(_KEYS), max_size=1), max_size=5))
def test_sync_nodes_and_events_read_a_column_at_a_time_as_one_by_one(
        kinds: list[str], changes: list[dict[str, Any]], drop: list[list[str]]) -> None:
    """The plan reader checks well-formed `sync_nodes` and `events` a column at a time: the
    entries it reads (or the error it raises for the first bad one) are those of the reader
    that checks them one by one."""
    from streamalloc.errors import InputError
    from streamalloc.plan_fields import PlanFields
    from streamalloc.verify import plan_input
    syncs = [_entry({"name": f"s{i}", "type": k, "stream": i, "event": i},
                    changes[i] if i < len(changes) else {}, drop[i] if i < len(drop) else [])
             for i, k in enumerate(kinds)]
    events = [_entry({"id": i, "kind": "event", "send": "a", "recv": "b", "send_stream": 0,
                      "recv_stream": 1}, changes[i] if i < len(changes) else {},
                     drop[i] if i < len(drop) else []) for i in range(len(kinds))]
    for read, raw in ((plan_input._sync_nodes, syncs), (plan_input._events, events)):
        outcomes = []
        for columns in (True, False):
            with patch.object(plan_input, "_all_dicts", lambda _entries, c=columns: c):
                try:
                    outcomes.append(read(PlanFields("p"), raw))
                except InputError as exc:
                    outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


@given(a=st.text("abcAB", max_size=9), b=st.text("abcAB", max_size=9), cap=st.integers(0, 3))
def test_capped_edit_distance_is_the_distance_up_to_the_cap(a: str, b: str, cap: int) -> None:
    """The typo checks ask for distances up to 2 only: the capped distance stops early and
    gives `cap + 1` for anything above the cap, the distance itself otherwise."""
    from streamalloc.ir.options import edit_distance
    assert edit_distance(a, b, cap=cap) == min(edit_distance(a, b), cap + 1)
