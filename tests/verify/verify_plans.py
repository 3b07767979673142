"""Test helpers: graphs from YAML text, and a builder of correct plans for any stream choice.

The builder is deliberately simple and independent of `streamalloc.sync`: nodes are listed in
T-order on the stream the caller picks (-1 = no task); every cross-stream dependency between
two tasks (through stream-less nodes too) gets its own event: a Send right after the
producer, a Recv right before the consumer. Ids are handed out in T-order of the producers,
so they are contiguous, and every wait's record comes earlier in T-order: no deadlock.
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from streamalloc.facts import LOOP_BACK_TYPES
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders.yaml_json import load_yaml_json

HEAD = "format: streamalloc.graph/v1\n"


def yaml_graph(text: str) -> Graph:
    """A graph from YAML text (formats.md section 1); `format:` is added when missing."""
    if not text.lstrip().startswith("format:"):
        text = HEAD + text
    return load_yaml_json(Path("test.yaml"), text=text)


def entries(stream_of: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """`nodes` entries from node -> stream (logical = physical, -1 = none)."""
    return {n: {"stream": s, "physical_stream": s, "attached_streams": [], "rule": "test"}
            for n, s in stream_of.items()}


SYNC_NAME = re.compile(r"_(Send|Recv)(_Notify)?_(\d+)(_Reuse_\d+)?$")


def plan(graph: Graph, streams: Mapping[int, list[str]], *, events: Iterable[tuple] = (),
         activations: Mapping[str, list[int]] | None = None, **extra: Any) -> dict[str, Any]:
    """A plan dict from stream lists. Names `<g>_Send_<id>`, `<g>_Recv_<id>` (and
    `_Send_Notify_<id>`, `_Reuse_<k>` suffixes) that are not graph nodes become sync nodes.
    `events`: (id, send node, recv node[, send_stream, recv_stream]); the streams default to
    those of the id's first Send and Recv. Counts follow the ids; `extra` overrides keys."""
    graph_nodes = _node_names(graph)
    sync, first = [], {}
    for s, names in streams.items():
        for name in names:
            m = SYNC_NAME.search(name)
            if m and name not in graph_nodes:
                kind = m[1] + ("Notify" if m[2] else "")
                sync.append({"name": name, "type": kind, "stream": s, "event": int(m[3])})
                first.setdefault((kind, int(m[3])), s)
    notify = any(x["type"].endswith("Notify") for x in sync)
    send, recv = ("SendNotify", "RecvNotify") if notify else ("Send", "Recv")
    ev = []
    for triple in events:
        i, a, b = triple[:3]
        ss, rs = triple[3:] if len(triple) == 5 else (first.get((send, i), 0),
                                                        first.get((recv, i), 0))
        ev.append({"id": i, "kind": "notify" if notify else "event", "send": a, "recv": b,
                   "send_stream": ss, "recv_stream": rs})
    where = {name: s for s, names in streams.items() for name in names}
    count = len({x["event"] for x in sync})
    result = {"format": "streamalloc.plan/v1", "graph": graph.name, "mode": "test",
              "nodes": entries({n: where.get(n, -1) for n in sorted(graph_nodes)}),
              "streams": {str(s): list(n) for s, n in streams.items()},
              "logical_stream_count": len(streams), "physical_stream_count": len(streams),
              "attached_stream_count": 0, "events": ev,
              "event_count": 0 if notify else count, "notify_count": count if notify else 0,
              "stream_activations": dict(activations or {}), "sync_nodes": sync}
    result.update(extra)
    return result


def _node_names(graph: Graph) -> set[str]:
    return {n.name for n in graph.all_nodes()}


def task_preds(graph: Graph, has_task: Callable[[str], bool]) -> dict[str, list[str]]:
    """Task -> tasks it depends on (data and control, through stream-less nodes), T-order."""
    nodes = {n.name: n for n in graph.all_nodes()}
    through: dict[str, list[str]] = {}
    preds: dict[str, list[str]] = {}
    for node in graph.all_nodes():
        found: dict[str, None] = {}
        srcs = [i.src for i in node.data_sources() if nodes[i.src].type not in LOOP_BACK_TYPES]
        for src in [*srcs, *node.control_inputs]:
            found.update(dict.fromkeys([src] if has_task(src) else through.get(src, [])))
        (preds if has_task(node.name) else through)[node.name] = list(found)
    return preds


def build_plan(graph: Graph, stream_of: Mapping[str, int], *,
               notify: bool = False) -> dict[str, Any]:
    """A correct plan: nodes in T-order on `stream_of[name]` (-1 or absent = no task), one
    event per cross-stream task dependency."""
    def has_task(name: str) -> bool:
        return stream_of.get(name, -1) >= 0

    preds = task_preds(graph, has_task)
    kind = "Notify_" if notify else ""
    outgoing: dict[str, list[str]] = defaultdict(list)
    for v, us in preds.items():
        for u in us:
            if stream_of[u] != stream_of[v]:
                outgoing[u].append(v)
    lists: dict[int, list[str]] = defaultdict(list)
    pending: dict[tuple[str, str], int] = {}
    events: list[tuple[int, str, str]] = []
    for v in preds:
        s = stream_of[v]
        lists[s].extend(f"{graph.name}_Recv_{kind}{pending[(u, v)]}" for u in preds[v]
                        if (u, v) in pending)
        lists[s].append(v)
        for w in outgoing[v]:
            pending[(v, w)] = len(events)
            events.append((len(events), v, w))
            lists[s].append(f"{graph.name}_Send_{kind}{pending[(v, w)]}")
    count = max(stream_of.values(), default=-1) + 1
    streams = {s: lists.get(s, []) for s in range(count)}
    return plan(graph, streams, events=events)


def without_event(plan_dict: dict[str, Any], ident: int) -> dict[str, Any]:
    """The plan with event `ident` removed (its Send, Recv and entry) and ids renumbered."""
    p = copy.deepcopy(plan_dict)
    gone = {s["name"] for s in p["sync_nodes"] if s["event"] == ident}
    p["streams"] = {k: [n for n in v if n not in gone] for k, v in p["streams"].items()}
    p["sync_nodes"] = [dict(s, event=s["event"] - (s["event"] > ident))
                       for s in p["sync_nodes"] if s["name"] not in gone]
    p["events"] = [dict(e, id=e["id"] - (e["id"] > ident)) for e in p["events"]
                   if e["id"] != ident]
    key = "notify_count" if p["notify_count"] else "event_count"
    p[key] -= 1
    return p
