"""AssignByDependencyPass (spec 2.4): reuse a predecessor's stream, else open one per engine.

Temporary ids are per-engine slots (wrapping at max_parallel_num); `finalize` turns them into
real ids in E-order blocks of engine names, with GE's quirk Q1 kept: when the graph has a
default stream the counter steps back by one even if nothing fresh was handed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import msgspec
from msgspec.structs import replace

from streamalloc.heuristic.context import GraphContext
from streamalloc.heuristic.plan import INVALID, GraphPlan, Note
from streamalloc.heuristic.rule_pass import RulePass
from streamalloc.ir.partition import EngineSubgraph
from streamalloc.passes import PassResult, outcome
from streamalloc.rules.model import Rule

MEMORY_PRIORITY = "MemoryPriority"
_COST_CEILING = 10  # GE's starting best cost in the ranking: a cost-10 candidate wins only first


class _State(msgspec.Struct):
    streams: list[int]
    reused: list[int | None]
    engine_next: dict[str, int] = msgspec.field(default_factory=dict)
    engine_count: dict[str, int] = msgspec.field(default_factory=dict)
    roots: list[int] = msgspec.field(default_factory=list)
    pairs: list[tuple[int, int]] = msgspec.field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AssignByDependency(RulePass):
    """assign-by-dependency (AssignByDependencyPass); option `memory_priority`: True or False,
    or None ("auto", the default): GE's ge.exec.memoryOptimizationPolicy is MemoryPriority."""

    memory_priority: bool | None = None

    @classmethod
    def from_rule(cls, rule: Rule) -> Self:
        """The pass with the rule's `memory_priority` option ("auto" -> None)."""
        setting = rule.options.get("memory_priority", "auto")
        return cls(rule, None if setting == "auto" else bool(setting))

    def apply(self, ctx: GraphContext, plan: GraphPlan) -> PassResult[GraphPlan]:
        """Main loop in L-order, then finalize."""
        memory_priority = self.memory_priority
        if memory_priority is None:
            memory_priority = ctx.option("ge.exec.memoryOptimizationPolicy") == MEMORY_PRIORITY
        return outcome(plan, _assign(self.rule, ctx, plan, memory_priority))


def _assign(rule: Rule, ctx: GraphContext, plan: GraphPlan, memory_priority: bool) -> GraphPlan:
    state = _State(list(plan.sg_streams), list(plan.sg_reused))
    for sg in ctx.subgraphs:
        if state.streams[sg.index] != INVALID or not ctx.subgraph_matches(rule, sg):
            continue
        pred = _reusable_pred(ctx, sg, state, memory_priority)
        if pred is None:
            _new_temp_stream(sg, state)
            continue
        if state.streams[pred] == INVALID:  # a pred later in L-order, not processed yet
            _new_temp_stream(ctx.subgraphs[pred], state)
        state.streams[sg.index] = state.streams[pred]
        known = state.reused[pred]
        root = known if known is not None else pred
        state.reused[sg.index] = root
        state.pairs.append((sg.index, root))
    return _finalize(rule, ctx, plan, state)


def _new_temp_stream(sg: EngineSubgraph, state: _State) -> None:
    slot = state.engine_next.get(sg.engine_name, 0)
    if slot >= sg.max_parallel_num:
        slot = 0  # engine streams are handed out round-robin
    state.streams[sg.index] = slot
    state.engine_next[sg.engine_name] = slot + 1
    state.engine_count[sg.engine_name] = max(state.engine_count.get(sg.engine_name, 0), slot + 1)
    state.roots.append(sg.index)


def _reusable_pred(ctx: GraphContext, sg: EngineSubgraph, state: _State,
                   memory_priority: bool) -> int | None:
    # [P-order] GE ranks the candidate set in pointer order; we use L-order (spec 2.4.2).
    candidates = [p for p in sg.preds if _could_reuse(ctx, sg, ctx.subgraphs[p], state,
                                                       memory_priority)]
    return top_priority(ctx, candidates)


def top_priority(ctx: GraphContext, candidates: list[int]) -> int | None:
    """GE's ranking: the smallest compute cost, starting from (first candidate, cost 10); no
    candidate at all when one of them has no registered cost."""
    costs = [ctx.subgraphs[p].engine.compute_cost for p in candidates]
    if not candidates or any(c is None for c in costs):
        return None
    best, best_cost = candidates[0], _COST_CEILING
    for p, cost in zip(candidates, costs, strict=True):
        if cost is not None and cost < best_cost:
            best, best_cost = p, cost
    return best


def _could_reuse(ctx: GraphContext, sg: EngineSubgraph, pred: EngineSubgraph, state: _State,
                 memory_priority: bool) -> bool:
    if sg.engine.scheduler_id != pred.engine.scheduler_id:
        return False
    if pred.engine.independent or pred.stream_label:
        return False  # labelled and HCCL streams are never reused
    if sg.force_attach:
        return True
    if not memory_priority and any(q != sg.index and ctx.subgraphs[q].engine_name ==
                                   pred.engine_name for q in pred.succs):
        return False  # a sibling of pred's own engine: fan-out opens new streams
    if sg.engine_name == pred.engine_name or sg.engine.attach:
        return True
    root = state.reused[pred.index]
    return root is not None and ctx.subgraphs[root].engine_name == sg.engine_name


def _finalize(rule: Rule, ctx: GraphContext, plan: GraphPlan, state: _State) -> GraphPlan:
    next_stream, to_replace = plan.next_stream, INVALID
    if plan.default_stream != INVALID:
        next_stream -= 1  # quirk Q1: even when no subgraph got a fresh stream
        to_replace = next_stream
    start: dict[str, int] = {}
    for engine in sorted(state.engine_count, key=lambda e: e.encode("utf-8")):  # E-order
        start[engine] = next_stream
        next_stream += state.engine_count[engine]
    changes: dict[int, tuple[int, Note]] = {}
    for x in state.roots:
        sg = ctx.subgraphs[x]
        stream = state.streams[x] + start[sg.engine_name]
        why = f"fresh {sg.engine_name} stream (slot {state.streams[x]})"
        if stream == to_replace:
            stream, why = plan.default_stream, f"{why}: the parent node's stream"
        state.streams[x] = stream
        changes[x] = (stream, Note(rule.name, stream, why))
    for x, root in state.pairs:
        state.streams[x] = state.streams[root]
        changes[x] = (state.streams[x], Note(rule.name, state.streams[x],
                                              f"reuses the stream of {ctx.subgraphs[root].id}"))
    plan = plan.set_subgraphs(changes, reused=dict(enumerate(state.reused)))
    return replace(plan, next_stream=next_stream)
