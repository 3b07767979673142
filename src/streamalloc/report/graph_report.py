"""What `streamalloc show` prints: the graph's nodes and its engine subgraphs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamalloc.ir.graph import Graph
from streamalloc.ir.partition import EngineSubgraph, GraphPartition
from streamalloc.report.table import format_table

SHOW_FORMAT = "streamalloc.show/v1"


def _flags(sg: EngineSubgraph) -> str:
    flags = [name for name, on in (("independent", sg.engine.independent),
                                   ("attach", sg.engine.attach),
                                   ("skip", sg.engine.skip_assign_stream),
                                   ("force_attach", sg.force_attach)) if on]
    return ",".join(flags) or "-"


def _ids(partition: GraphPartition, indices: tuple[int, ...]) -> str:
    return ",".join(partition.subgraphs[i].id for i in indices) or "-"


def graph_summary(graph: Graph, partitions: Mapping[str, GraphPartition]) -> str:
    """Summary line, node table and subgraph table."""
    owner = {n: sg.id for p in partitions.values() for sg in p.subgraphs for n in sg.nodes}
    node_rows = [[n.name, n.type, n.engine, n.graph, owner.get(n.name, "-")]
                 for n in graph.all_nodes()]
    sg_rows = [[sg.id, sg.engine_name, sg.engine.scheduler_id, sg.stream_label or "-",
                sg.user_stream_label or "-", _flags(sg), len(sg.nodes), _ids(p, sg.preds),
                _ids(p, sg.succs)]
               for p in partitions.values() for sg in p.subgraphs]
    head = (f"graph {graph.name}: {graph.node_count()} nodes in {1 + len(graph.subgraphs)} "
            f"graph(s), {len(sg_rows)} engine subgraphs")
    return "\n\n".join([
        head,
        format_table(["node", "type", "engine", "graph", "subgraph"], node_rows),
        format_table(["subgraph", "engine", "scheduler", "label", "user_label", "flags", "nodes",
                      "preds", "succs"], sg_rows),
    ]) + "\n"


def graph_summary_json(graph: Graph, partitions: Mapping[str, GraphPartition]) -> dict[str, Any]:
    """The same content for programs (docs/show-format.md)."""
    return {
        "format": SHOW_FORMAT,
        "graph": graph.name,
        "nodes": {n.name: {"type": n.type, "engine": n.engine, "graph": n.graph}
                  for n in graph.all_nodes()},
        "partitions": {
            name: {"outside": list(p.outside), "subgraphs": [
                {"id": sg.id, "engine": sg.engine_name, "scheduler_id": sg.engine.scheduler_id,
                 "stream_label": sg.stream_label, "user_stream_label": sg.user_stream_label,
                 "independent": sg.engine.independent, "attach": sg.engine.attach,
                 "skip_assign_stream": sg.engine.skip_assign_stream,
                 "force_attach": sg.force_attach, "max_parallel_num": sg.max_parallel_num,
                 "nodes": list(sg.nodes), "preds": [p.subgraphs[i].id for i in sg.preds],
                 "succs": [p.subgraphs[i].id for i in sg.succs]} for sg in p.subgraphs]}
            for name, p in partitions.items()},
    }
