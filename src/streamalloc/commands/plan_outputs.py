"""What `allocate` writes and prints, made only from a plan the verifier accepted.

The outputs (the plan file, `--graph-out`'s synchronized graph, the tables or the plan JSON
to print) are staged: written whole to temporary files (`outputs.Staged`), put in place once
the plan verified, removed when it did not. A large plan is staged in a forked child while the
caller verifies it, which makes the rendering (the text of a 100k-node plan, the tables) free
on a second CPU; a small one, or one whose child would not find the memory it may need, is
verified first and staged after, here. Either way the files and the text are the same, and a
rejected plan leaves no file.
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from pathlib import Path

import msgspec

from streamalloc.background import Background, can_fork, free_memory
from streamalloc.ir.graph import Graph
from streamalloc.outputs import Staged, stage_bytes, stage_json
from streamalloc.sync.result import PLAIN_SECTIONS, SyncPlan

# Plans of at least this many nodes are staged in a child while they are verified: below it a
# fork costs about what the rendering takes (`allocate -o`, best of 9: 0.446 s either way at 5k
# nodes, 0.562 -> 0.555 s at 10k; at 100k verifying and writing take 0.40 instead of 0.50 s).
BACKGROUND_FROM = 5_000


class PlanOutputs(msgspec.Struct, frozen=True):
    """What the command was asked to write (None: not asked) and to print."""

    plan: Path | None
    graph: Path | None
    json: bool  # the plan JSON instead of the tables
    nodes: bool  # the per-node table after the stream table


def verified_outputs(graph: Graph, plan: SyncPlan, document: dict[str, object],
                     outputs: PlanOutputs, verify: Callable[[], None]) -> str:
    """Verify the plan (`verify` raises when the verifier rejects it), then put its outputs in
    place; returns the text to print. When `verify` raises, nothing is written."""
    pending = Background(_staged, graph, plan, document, outputs) \
        if _stage_beside(document) else None
    try:
        verify()
    except BaseException:
        if pending is not None:
            pending.cancel()
            for path in (outputs.plan, outputs.graph):
                if path is not None:
                    Staged.of(path).discard()
        raise
    staged, text = pending.result() if pending is not None else \
        _staged(graph, plan, document, outputs)
    for k, output in enumerate(staged):
        try:
            output.commit()
        except BaseException:
            for rest in staged[k + 1:]:
                rest.discard()
            raise
    return text


def _stage_beside(document: dict[str, object]) -> bool:
    """Whether to stage in a child: a large plan, a second CPU, and free memory for a copy of
    every page of the caller (the child keeps the pages the verifier changes meanwhile)."""
    nodes = document.get("nodes")
    if not isinstance(nodes, dict) or len(nodes) < BACKGROUND_FROM or not can_fork():
        return False
    free = free_memory()
    return free is not None and free >= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _staged(graph: Graph, plan: SyncPlan, document: dict[str, object],
            outputs: PlanOutputs) -> tuple[list[Staged], str]:
    """The outputs written to their temporary files, and the text to print."""
    from streamalloc import api
    from streamalloc.ir.serialize import graph_file_text
    from streamalloc.json_text import indented_json
    from streamalloc.report.allocation_report import node_table, stream_table, sync_summary
    staged: list[Staged] = []
    try:
        if outputs.plan is not None:
            staged.append(stage_json(outputs.plan, document, PLAIN_SECTIONS))
        if outputs.graph is not None:
            text = graph_file_text(api.synced_graph(graph, plan), outputs.graph)
            staged.append(stage_bytes(outputs.graph, [text.encode("utf-8")]))
    except BaseException:
        for output in staged:
            output.discard()
        raise
    if outputs.json:
        return staged, b"".join(indented_json(document, plain=PLAIN_SECTIONS)).decode() + "\n"
    text = stream_table(graph, plan.allocation)
    if outputs.nodes:
        text += "\n" + node_table(graph, plan)
    return staged, text + sync_summary(plan)
