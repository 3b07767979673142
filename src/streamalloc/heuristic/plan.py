"""Immutable plans that the heuristic folds rules over.

`GraphPlan` is one graph's state during its pass chain: stream ids of its partition subgraphs
and of its direct nodes, the reuse roots of AssignByDependency, the stream counter and the
default stream. `ModelPlan` is the whole model after the per-graph stage. Passes
(`rule_pass.py`) return new plans (`msgspec.structs.replace`) in a `PassResult`; every stream they
set is recorded as a `Note`, which `streamalloc explain` shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import msgspec
import numpy as np
from msgspec.structs import replace

from streamalloc.allocation import Note
from streamalloc.facts import INVALID
from streamalloc.mappings import Columns, own_dict, picked

__all__ = ["INVALID", "GraphPlan", "ModelPlan", "Note", "initial_graph_plan"]


class GraphPlan(msgspec.Struct, frozen=True):
    """One graph's streams while its pass chain runs. The node tables are columns in the
    graph's G-order (`Columns` over the graph's node index): a pass that changes nodes copies
    two lists, not two 100k-entry dicts, and readers of a whole table read it in order."""

    graph: str
    default_stream: int
    next_stream: int
    sg_streams: tuple[int, ...]
    sg_reused: tuple[int | None, ...]
    streams: Columns[str, int]
    notes: Columns[str, tuple[Note, ...]]
    sg_notes: tuple[tuple[Note, ...], ...]

    def set_subgraphs(self, changes: Mapping[int, tuple[int, Note]],
                      reused: Mapping[int, int | None] | None = None) -> GraphPlan:
        """Give subgraphs new stream ids (and reuse roots), noting why."""
        streams, notes = list(self.sg_streams), list(self.sg_notes)
        for index, (stream, note) in changes.items():
            streams[index] = stream
            notes[index] = (*notes[index], note)
        roots = list(self.sg_reused)
        for index, root in (reused or {}).items():
            roots[index] = root
        return replace(self, sg_streams=tuple(streams), sg_notes=tuple(notes),
                       sg_reused=tuple(roots))

    def set_nodes(self, changes: Mapping[str, tuple[int, Note]]) -> GraphPlan:
        """Give nodes new stream ids, noting why: the nodes given the same stream and note
        are one group of `set_groups`."""
        groups: dict[tuple[int, int], tuple[list[str], int, Note]] = {}
        for name, (stream, note) in changes.items():  # ids: `changes` keeps the notes alive
            groups.setdefault((stream, id(note)), ([], stream, note))[0].append(name)
        return self.set_groups(groups.values())

    def set_groups(self, groups: Iterable[tuple[Sequence[str], int, Note]]) -> GraphPlan:
        """Give each group of nodes one stream, noting why (the groups must not overlap). One
        pass notes many nodes alike: the nodes of a group with the same notes so far share
        the new tuple (one tuple for the whole group when they all do)."""
        position = self.streams.positions()
        streams, notes = list(self.streams.column()), list(self.notes.column())
        changed = False
        for names, stream, note in groups:
            if not names:
                continue
            changed = True
            at = picked(position, names)
            for k in at:
                streams[k] = stream
            olds = [notes[k] for k in at]
            first = olds[0]
            if olds.count(first) == len(olds):
                new = (*first, note)
                for k in at:
                    notes[k] = new
                continue
            extended: dict[int, tuple[Note, ...]] = {}  # by the id of the notes so far
            for k, old in zip(at, olds, strict=True):
                made = extended.get(id(old))
                if made is None:
                    made = extended[id(old)] = (*old, note)
                notes[k] = made
        if not changed:
            return self
        return replace(self, streams=self.streams.with_column(streams),
                       notes=self.notes.with_column(notes))

    def set_by_owner(self, owner_at: Sequence[int], streams: Sequence[int],
                     notes: Sequence[Note], keep: Iterable[str] = ()) -> GraphPlan:
        """Give every node the stream of its owner, noting why: `owner_at` is each node's
        owner in G-order, an index into `streams` and `notes` (-1: their last entries); the
        nodes of `keep` keep their stream and notes. As `set_groups` with a group per owner,
        made a column at a time when every node is noted alike so far (before any pass
        noted single nodes)."""
        old = self.notes.column()
        if old and old.count(old[0]) != len(old):
            owners: dict[int, list[str]] = {}
            kept = set(keep)
            for name, owner in zip(self.notes, owner_at, strict=True):
                if name not in kept:
                    owners.setdefault(owner, []).append(name)
            return self.set_groups((names, streams[k], notes[k]) for k, names in owners.items())
        at = np.asarray(owner_at, np.int64)
        stream_column = np.asarray(streams, np.int64)[at].tolist()
        noted = np.empty(len(notes), object)  # one tuple per owner, shared by its nodes
        for k, note in enumerate(notes):
            noted[k] = (*old[0], note) if old else (note,)
        note_column = noted[at].tolist()
        position, streams_before = self.streams.positions(), self.streams.column()
        for name in keep:
            p = position[name]
            stream_column[p], note_column[p] = streams_before[p], old[p]
        return replace(self, streams=self.streams.with_column(stream_column),
                       notes=self.notes.with_column(note_column))

    def take_streams(self, count: int = 1) -> tuple[GraphPlan, list[int]]:
        """Allocate `count` fresh ids from the counter."""
        ids = list(range(self.next_stream, self.next_stream + count))
        return replace(self, next_stream=self.next_stream + count), ids


def initial_graph_plan(graph: str, index: Mapping[str, int], streams: Sequence[int], *,
                       subgraphs: int, default_stream: int, next_stream: int) -> GraphPlan:
    """The state before a graph's first pass: subgraphs without stream, the nodes of `index`
    (each node's G-order position) on `streams` (in G-order), no notes."""
    positions = own_dict(index)  # a dict: lookups through a read-only proxy cost more
    nodes = Columns(list(positions), list(streams), positions)
    return GraphPlan(graph=graph, default_stream=default_stream, next_stream=next_stream,
                     sg_streams=(INVALID,) * subgraphs, sg_reused=(None,) * subgraphs,
                     streams=nodes, notes=nodes.with_column([()] * len(positions)),
                     sg_notes=((),) * subgraphs)


class ModelPlan(msgspec.Struct, frozen=True):
    """All graphs' plans, the stream counter, and the model-wide results."""

    graphs: Mapping[str, GraphPlan]
    next_stream: int
    main_stream_num: int | None = None
    attached: Mapping[str, tuple[int, ...]] = msgspec.field(
        default_factory=lambda: MappingProxyType({}))
    custom_stream_ids: tuple[int, ...] = ()
    # dynamic flow: the model-wide streams of engines and labels, as (kind, key, stream)
    owners: tuple[tuple[str, str, int], ...] = ()

    def stream_of(self, node: str, graph: str) -> int:
        """A node's current logical stream."""
        return self.graphs[graph].streams[node]

    def set_nodes(self, graph: str, changes: Mapping[str, tuple[int, Note]]) -> ModelPlan:
        """New stream ids for nodes of one graph."""
        if not changes:
            return self
        graphs = own_dict(self.graphs)
        graphs[graph] = graphs[graph].set_nodes(changes)
        return replace(self, graphs=MappingProxyType(graphs))
