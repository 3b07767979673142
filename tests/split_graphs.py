"""Random preset graphs that force physical splits (ge-sync-and-split.md 5), for the split
properties: every plan verifies and emulates without violation.

`split_graph(rng)` draws, from any `random.Random` (hypothesis' `st.randoms()` in the test
suite, a seeded one in `bench/bench_split_properties.py`), a graph whose nodes carry their
logical stream (`stream_id`, run in preset mode) with:

* random stream ids and task units: `task_count`, `_node_sqe_num`, HCCL nodes with their own
  `_hccl_task_num`, and single nodes almost as large as the capacity, which is small enough
  that most logical streams split;
* label-activated streams (`_stream_label` on the first or on every node of the stream,
  `_active_label_list` on a node of another stream that no node of the label stream reaches,
  sometimes placed after the whole label stream in G-order);
* Case and If nodes whose branches hold nodes on any stream, multi-dims Cases (`_batch_num`,
  so ids inside the dims are shared);
* root-graph RTS label nodes without a stream that issue a task (5.4: they go on stream 0);
* nodes with attached streams (`_attached_stream_info_list`, 2.6, 4.5), sometimes declaring
  attached-stream dependencies and attached sync resources.

Stream ids are compacted at the end (preset ids run from 0 without gaps, like GE's).
`check_split_plan(graph)` is the property; `features(graph)` names what a graph exercises, for
the bench's counts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from streamalloc.api import plan
from streamalloc.errors import LimitExceeded
from streamalloc.ir import AttrValue, DataInput, GraphBuilder, NamedAttrs
from streamalloc.ir.graph import Graph
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

CAPACITIES = (48, 64, 100, 160, 256, 1024)
COMPUTE = ("Relu", "MatMul", "Add")


@dataclass
class _Node:
    """A node as drawn; `stream` -1 for none."""

    name: str
    type: str
    stream: int
    graph: str | None = None
    inputs: list[str] = field(default_factory=list)
    controls: list[str] = field(default_factory=list)
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    subgraphs: tuple[tuple[str, str], ...] = ()
    task_count: int | None = None


@dataclass
class _Draft:
    """The graph being drawn: its nodes in T-order, its subgraphs, capacity and streams."""

    rng: random.Random
    streams: int
    capacity: int
    nodes: list[_Node] = field(default_factory=list)
    subgraphs: list[str] = field(default_factory=list)
    serial: int = 0

    def name(self, prefix: str) -> str:
        """A fresh node name."""
        self.serial += 1
        return f"{prefix}{self.serial}"

    def add(self, node: _Node) -> _Node:
        """Append a node (T-order: a control-flow node's branches follow it)."""
        self.nodes.append(node)
        return node

    def units(self, node: _Node) -> None:
        """A node's task units: small mostly, sometimes almost the whole capacity; as
        `task_count` or as `_node_sqe_num` on a one-task node."""
        rng = self.rng
        big = rng.random() < 0.08 and self.capacity > 60
        value = rng.randint(self.capacity - 40, self.capacity - 12) if big else \
            rng.randint(1, max(2, self.capacity // 6))
        if rng.random() < 0.2:
            node.task_count = 1
            node.attrs["_node_sqe_num"] = AttrValue("int", value)
        else:
            node.task_count = value


def split_graph(rng: random.Random) -> Graph:
    """One random preset graph (see the module docstring)."""
    draft = _Draft(rng, rng.randint(1, 5), rng.choice(CAPACITIES))
    root = _root_nodes(draft)
    _label_activation(draft, root)
    options = {"streamalloc.max_task_per_stream": str(draft.capacity)}
    if rng.random() < 0.1:
        options["ge.event"] = "notify"
    builder = GraphBuilder(f"split_{draft.serial}", options=options)
    for sub in draft.subgraphs:
        builder.add_subgraph(sub)
    used = sorted({n.stream for n in draft.nodes if n.stream >= 0})
    rank = {s: i for i, s in enumerate(used)}  # preset ids run from 0 without gaps
    for n in draft.nodes:
        builder.add_node(n.name, n.type, graph=n.graph, inputs=[DataInput(i) for i in n.inputs],
                         control_inputs=n.controls, attrs=n.attrs, subgraphs=n.subgraphs,
                         stream_id=rank.get(n.stream, -1), task_count=n.task_count)
    return builder.build()


def _root_nodes(draft: _Draft) -> list[_Node]:
    rng = draft.rng
    first = draft.add(_Node("d", "Data", rng.choice([-1, 0])))
    made = [first]
    for _ in range(rng.randint(4, 30)):
        kind = rng.random()
        if kind < 0.08:
            made.append(_control_flow(draft, made))
        elif kind < 0.12:
            made.append(_rts_label(draft, first))
        else:
            made.append(_compute(draft, made, None))
    return made


def _inputs(draft: _Draft, made: list[_Node]) -> list[str]:
    sources = [n.name for n in made if n.type != "LabelSet"]
    return draft.rng.sample(sources, k=min(len(sources), draft.rng.choice([1, 1, 1, 2])))


def _compute(draft: _Draft, made: list[_Node], graph: str | None) -> _Node:
    rng = draft.rng
    hccl = rng.random() < 0.12
    node = _Node(draft.name("h" if hccl else "n"),
                 "HcomAllReduce" if hccl else rng.choice(COMPUTE),
                 rng.randrange(draft.streams), graph, _inputs(draft, made))
    draft.units(node)
    if hccl and rng.random() < 0.6:
        node.attrs["_hccl_task_num"] = AttrValue("int", rng.randint(1, max(2, draft.capacity // 3)))
    if not hccl and rng.random() < 0.08:
        node.attrs.update(_attached(rng))
    if rng.random() < 0.15 and len(made) > 2:
        control = rng.choice(made)
        if control.name not in node.inputs and control.type != "LabelSet":
            node.controls.append(control.name)
    return draft.add(node)


def _attached(rng: random.Random) -> dict[str, AttrValue]:
    """An attached-stream request (v2 list), with a dependency on input 0 sometimes, and
    sometimes an attached sync resource (sync spec 2.6, 4.5)."""
    entry = {"_attached_resource_name": AttrValue("string", "aux"),
             "_attached_resource_required_flag": AttrValue("bool", True)}
    if rng.random() < 0.5:
        entry["_attached_resource_force_reuse"] = AttrValue("bool", True)
    if rng.random() < 0.5:
        entry["_attached_resource_depend_value_list_int"] = AttrValue("list_int", (0,))
    attrs = {"_attached_stream_info_list": AttrValue(
        "list_named_attrs", (NamedAttrs("", entry),))}
    if rng.random() < 0.4:
        resource = {"_attached_resource_name": AttrValue("string", "ev"),
                    "_attached_resource_type": AttrValue("string", "event"),
                    "_attached_resource_required_flag": AttrValue("bool", True)}
        attrs["_attached_sync_res_info_list"] = AttrValue(
            "list_named_attrs", (NamedAttrs("", resource),))
    return attrs


def _rts_label(draft: _Draft, first: _Node) -> _Node:
    """A root-graph label node: no stream (logical-streams 2.6) but one task (5.4). Nothing on
    a stream feeds it (GE cannot synchronize a consumer without a stream, sync spec 2.2)."""
    controls = [first.name] if first.stream < 0 else []
    return draft.add(_Node(draft.name("lbl"), "LabelSet", -1, controls=controls,
                           attrs={"_rts_label_node": AttrValue("bool", True)}, task_count=1))


def _control_flow(draft: _Draft, made: list[_Node]) -> _Node:
    """A Case (sometimes multi-dims) or If whose branches hold nodes on any stream."""
    rng = draft.rng
    kind = rng.choice(["Case", "Case", "If"])
    name = draft.name("cf")
    attrs = {"_batch_num": AttrValue("int", 2)} if kind == "Case" and rng.random() < 0.7 else {}
    branches = [f"{name}_b{i}" for i in range(rng.randint(2, 3) if kind == "Case" else 2)]
    node = draft.add(_Node(name, kind, rng.randrange(draft.streams), None,
                           _inputs(draft, made), attrs=attrs, task_count=1,
                           subgraphs=tuple((f"branch{i}", b) for i, b in enumerate(branches))))
    for branch in branches:
        draft.subgraphs.append(branch)
        inner = [draft.add(_Node(f"{branch}_d", "Data", -1, branch,
                                 attrs={"_parent_node_index": AttrValue("int", 0)}))]
        for _ in range(rng.randint(1, 8)):
            inner.append(_compute(draft, inner, branch))
        draft.add(_Node(f"{branch}_out", "NetOutput", inner[-1].stream, branch,
                        [inner[-1].name], task_count=0))
    return node


def _label_activation(draft: _Draft, root: list[_Node]) -> None:
    """Make one root stream label-activated by a node of another stream that the label
    stream does not reach (an activator waiting for its own stream deadlocks in GE too)."""
    rng = draft.rng
    if draft.streams < 2 or rng.random() < 0.4:
        return
    label_stream = rng.randrange(1, draft.streams)
    members = [n for n in root if n.stream == label_stream and not n.subgraphs]
    reached = _reached(draft.nodes, label_stream)
    candidates = [n for n in root if n.stream not in (label_stream, -1)
                  and n.name not in reached and not n.subgraphs]
    if not members or not candidates:
        return
    for node in members if rng.random() < 0.5 else members[:1]:
        node.attrs["_stream_label"] = AttrValue("string", "L")
    rng.choice(candidates).attrs["_active_label_list"] = AttrValue("list_string", ("L",))


def _reached(nodes: list[_Node], stream: int) -> set[str]:
    """Nodes that run after some node of `stream`: through data and control edges, the event
    from a node with an attached stream to its graph's NetOutput (sync spec 2.7) and the
    program order of each stream (T-order), which the split keeps."""
    found = {n.name for n in nodes if n.stream == stream}
    changed = True
    while changed:
        changed = False
        seen_on: set[int] = set()
        attached_in = {n.graph for n in nodes if n.name in found
                       and "_attached_stream_info_list" in n.attrs}
        for node in nodes:
            hit = node.name in found or bool({*node.inputs, *node.controls} & found) \
                or node.stream in seen_on \
                or (node.type == "NetOutput" and node.graph in attached_in)
            if hit and node.name not in found:
                found.add(node.name)
                changed = True
            if hit and node.stream >= 0:
                seen_on.add(node.stream)
    return found


def features(graph: Graph) -> set[str]:
    """What a graph exercises: for the bench's counts."""
    found: set[str] = set()
    for node in graph.all_nodes():
        keys = set(node.attrs)
        found |= {name for name, hit in (
            ("multi-dims", node.type == "Case" and "_batch_num" in keys),
            ("control-flow", node.type in ("Case", "If")),
            ("hccl", node.type == "HcomAllReduce"), ("sqe", "_node_sqe_num" in keys),
            ("label-activation", "_active_label_list" in keys),
            ("rts-label", node.type == "LabelSet"),
            ("attached", "_attached_stream_info_list" in keys)) if hit}
    if graph.option("ge.event") == "notify":
        found.add("notify")
    return found


def dims(graph: Graph) -> int:
    """How many dims the widest multi-dims Case has (1 without one): the emulator runs each."""
    return max((len(n.subgraphs) for n in graph.all_nodes()
                if n.type == "Case" and "_batch_num" in n.attrs), default=1)


def check_split_plan(graph: Graph) -> str:
    """Plan `graph` in preset mode, verify it and emulate it (every dim of its multi-dims
    Cases); "ok", or "limit" when it is refused as over a device limit (exit 4: a node with
    its own events larger than a stream). Any other error or violation raises."""
    try:
        document = plan(graph, mode="preset").to_json()
    except LimitExceeded:
        return "limit"
    report = verify_plan(graph, document)
    assert report.ok, report.text()
    for dim in range(dims(graph)):
        result = emulate(graph, document, dim=dim)
        assert result.status == "ok", (dim, result.violations[:3], result.deadlock)
    _events_stay_with_their_nodes(document)
    return "ok"


def _events_stay_with_their_nodes(document: dict[str, object]) -> None:
    """Every Send and Recv next to a graph node is on that node's physical stream (or, for a
    node with attached streams, on one of them)."""
    nodes = document["nodes"]
    assert isinstance(nodes, dict)
    sync_nodes = document["sync_nodes"]
    assert isinstance(sync_nodes, list)
    for sync in sync_nodes:
        entry = nodes.get(sync.get("peer"))
        if entry is not None and not entry["attached_streams"]:
            assert sync["stream"] == entry["physical_stream"], sync
