"""GE's quirks and tie-breaks (ge-logical-streams.md 1.5, 2.x, 3.3, 4, 5), one small graph each.

Every expected stream below is derived by hand from the spec, not produced by the code; the
derivation is the comment above the case. Worked examples already pinned by test_ge_examples.py
and the golden cases are not repeated. Notation as in spec 7: AIC AIcoreEngine, CPU
DNN_VM_AICPU_ASCEND, HCCL DNN_HCCL, LOC DNN_VM_GE_LOCAL, `tN` a temporary (per-engine slot) id;
`d` is a Data node (data-like: outside every subgraph). Positions `name:i` are G-order ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent

import pytest

from streamalloc.allocation import Allocation
from streamalloc.errors import InputError, OptionError
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders.yaml_json import load_yaml_json
from streamalloc.rules import RuleSet, load_rules

N = -1  # GE's INVALID


def graph_of(text: str, name: str = "g") -> Graph:
    """A graph from YAML text (header added)."""
    return load_yaml_json(Path(f"{name}.yaml"),
                          f"format: streamalloc.graph/v1\nname: {name}\n" + dedent(text))


def allocate(text: str, rules: RuleSet | None = None) -> Allocation:
    return allocate_ge(graph_of(text), rules)


def streams(allocation: Allocation) -> dict[str, int]:
    return {n: s.stream for n, s in allocation.nodes.items()}


@dataclass(frozen=True)
class Case:
    graph: str
    streams: dict[str, int]
    main: int
    attached: dict[str, tuple[int, ...]] = field(default_factory=dict)


CASES: dict[str, Case] = {}

# 2.6 `_rts_label_node` in the root gets the default stream, which is INVALID there.
# Subgraphs A{a}, L{lbl} (RTS), B{b}, O{out}. A fresh AIC t0; L (attach) reuses A; B: L is not
# independent/labelled, AIC is not attach, but L.reused = A is AIC (step 6) -> reuses A; O
# reuses B -> A. All t0 -> 0. NodeStreamUpdate: lbl := default_stream = INVALID.
CASES["rts_label_node_root"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: lbl, type: LabelSet, inputs: [a], attrs: {_rts_label_node: true}}
      - {name: b, type: Relu, inputs: [lbl]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": N, "a": 0, "lbl": N, "b": 0, "out": 0}, 1)

# The static pass tests presence: `_rts_label_node: false` is a label node all the same.
CASES["rts_label_node_false_root"] = Case(
    CASES["rts_label_node_root"].graph.replace("_rts_label_node: true", "_rts_label_node: false"),
    {"d": N, "a": 0, "lbl": N, "b": 0, "out": 0}, 1)

# 2.6 `_rts_label_node` in a known-shape subgraph gets the parent's stream (not its subgraph's).
# Root d:0 a:1 h:2 pc:3 out:4; subgraphs A{a}, H{h}, P{pc,out}. Independent H=0 (next 1); A
# fresh AIC t0; P (pred H independent) fresh LOC t0; AIC start 1, LOC start 2 -> a 1, pc 2,
# out 2 (next 3). Skipped: pc sees {0, 2} -> stays; out has no outputs. Optimize: h has only an
# in-node on 1 and an out-node on 2 -> stays.
# Body (default 2): L{lbl} label X -> 3 (next 4); B1 fresh AIC t0; BO (pred labelled) fresh LOC
# t0. Finalize: next 4-1=3 = to_replace; AIC start 3 -> B1 3 -> 2 (parent); LOC start 4 -> BO 4
# (next 5). NodeStreamUpdate: lbl := default 2 (label stream 3 ends empty). Compaction of
# {0,1,2,4}: 4 -> 3.
CASES["rts_label_node_subgraph"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: h, type: HcomAllReduce, inputs: [a]}
      - {name: pc, type: PartitionedCall, inputs: [h], subgraphs: {f: body}}
      - {name: out, type: NetOutput, inputs: [pc]}
    subgraphs:
      body:
        nodes:
          - {name: bd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: b1, type: Relu, inputs: [bd]}
          - {name: lbl, type: LabelSet, inputs: [b1],
             attrs: {_rts_label_node: true, _stream_label: X}}
          - {name: bout, type: NetOutput, inputs: [lbl]}
    """, {"d": N, "a": 1, "h": 0, "pc": 2, "out": 2, "bd": N, "b1": 2, "lbl": 2, "bout": 3}, 4)

# 2.6 NetOutput of a While body (instance 1) whose While lives in an unknown-shape graph -> 0.
# Root P{pc,out} fresh LOC -> 0 (next 1). R-order: dyn, wb, wc. dyn (default pc's 0): W{w,dout}
# fresh LOC; finalize next 0 = to_replace -> 0 (next 1). wb: the While's graph is unknown-shape
# -> default INVALID: B1 fresh AIC, BO reuses -> 1 (next 2); bout := 0 (the quirk); skipped:
# bout has a valid pred and no outputs -> stays 0. wc (instance 0, cond): c1, cout -> 2.
CASES["while_body_netoutput_unknown_shape"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: pc, type: PartitionedCall, inputs: [d], subgraphs: {f: dyn}}
      - {name: out, type: NetOutput, inputs: [pc]}
    subgraphs:
      dyn:
        attrs: {unknown_shape: true}
        nodes:
          - {name: dd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: w, type: While, inputs: [dd], subgraphs: {cond: wc, body: wb}}
          - {name: dout, type: NetOutput, inputs: [w]}
      wc:
        nodes:
          - {name: cd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: c1, type: Less, inputs: [cd]}
          - {name: cout, type: NetOutput, inputs: [c1]}
      wb:
        nodes:
          - {name: bd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: b1, type: Relu, inputs: [bd]}
          - {name: bout, type: NetOutput, inputs: [b1]}
    """, {"d": N, "pc": 0, "out": 0, "dd": N, "w": 0, "dout": 0, "cd": N, "c1": 2, "cout": 2,
          "bd": N, "b1": 1, "bout": 0}, 3)

# 2.3 IndependentStreamPass overwrites the plain label stream of an HCCL subgraph; the label
# stream (here used by nobody else) vanishes at compaction. Labels H(L)=0 (next 1); Independent
# (DNN_HCCL, L) -> 1 (next 2); A and B fresh AIC t0 (B's pred is independent), O reuses B;
# AIC start 2. Compaction of {1,2}.
CASES["independent_overwrites_label"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: h, type: HcomAllReduce, inputs: [a], attrs: {_stream_label: L}}
      - {name: b, type: Relu, inputs: [h]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": N, "a": 1, "h": 0, "b": 1, "out": 1}, 2)

# 2.10 several qualifying streams: the node ends on the largest. d:0 x1:1 y1:2 h:3 x2:4 y2:5
# out:6; x2/y2 cannot merge with x1/y1 (path through h). AIC max 4: H=0; X1 t0, Y1 t1, X2
# reuses X1, Y2 reuses Y1, O reuses X2 (L-order tie) -> x1 1, y1 2, x2 1, y2 2, out 1. Optimize
# h: stream 1 in x1(1) out x2(4), next id after 1 is 4 -> move to 1; stream 2 in y1(2) out
# y2(5), next after 2 is 5 -> move again -> 2. Compaction {1,2} -> 0,1.
CASES["optimize_largest_qualifying_stream"] = Case("""
    options: {ge.streamMaxParallelNum: "AIcoreEngine:4"}
    nodes:
      - {name: d, type: Data}
      - {name: x1, type: Relu, inputs: [d]}
      - {name: y1, type: Relu, inputs: [d]}
      - {name: h, type: HcomAllReduce, inputs: [x1, y1]}
      - {name: x2, type: Relu, inputs: [h, x1]}
      - {name: y2, type: Relu, inputs: [h, y1]}
      - {name: out, type: NetOutput, inputs: [x2, y2]}
    """, {"d": N, "x1": 0, "y1": 1, "h": 1, "x2": 0, "y2": 1, "out": 0}, 2)

# 2.4.2 top_priority, cost ceiling 10. Subgraphs X(label X), P1, Y(label Y), P2, C{c} (CPU,
# attach), O. Labels X=0, Y=1 (next 2). P1 and P2 have only labelled preds -> fresh.
_TOP_PRIORITY = """
    options: {{ge.streamMaxParallelNum: "DNN_VM_HOST_CPU:2"}}
    engines:
      - {{name: Slow, attach: true, compute_cost: 12}}
    op_engines: {{SlowOp: Slow}}
    nodes:
      - {{name: d, type: Data}}
      - {{name: x, type: Relu, inputs: [d], attrs: {{_stream_label: X}}}}
      - {{name: p1, type: {p1}, inputs: [x]}}
      - {{name: y, type: Relu, inputs: [d], attrs: {{_stream_label: Y}}}}
      - {{name: p2, type: {p2}, inputs: [y]}}
      - {{name: c, type: NonZero, inputs: [p1, p2]}}
      - {{name: out, type: NetOutput, inputs: [c]}}
    """
# Both HOST_CPU (cost 10, max 2): P1 t0, P2 t1; C's candidates [P1, P2] tie at 10 -> the first
# (L-order) P1; O reuses C -> P1. HOST start 2 -> p1 2, p2 3, c 2, out 2. Skipped: p1 sees
# {0,2}, p2 sees {1,2} -> stay. Optimize: no move.
CASES["top_priority_cost_10_first_wins"] = Case(
    _TOP_PRIORITY.format(p1="ConvBnBiasHost", p2="QuantBiasOptimization"),
    {"d": N, "x": 0, "p1": 2, "y": 1, "p2": 3, "c": 2, "out": 2}, 4)
# [Slow (12), HOST (10)]: best starts as Slow with cost 10; HOST's 10 is not < 10 -> Slow wins
# although it costs more. E-order DNN_VM_HOST_CPU (2) < Slow (3): p2 2, p1 3, c 3, out 3.
CASES["top_priority_cost_10_second_never_wins"] = Case(
    _TOP_PRIORITY.format(p1="SlowOp", p2="QuantBiasOptimization"),
    {"d": N, "x": 0, "p1": 3, "y": 1, "p2": 2, "c": 3, "out": 3}, 4)
# [HOST (10), AIC (1)]: 1 < 10 -> P2. AIC start 2 (p2, c, out), HOST start 3 (p1).
CASES["top_priority_cheaper_second_wins"] = Case(
    _TOP_PRIORITY.format(p1="ConvBnBiasHost", p2="Relu"),
    {"d": N, "x": 0, "p1": 3, "y": 1, "p2": 2, "c": 2, "out": 2}, 4)

# 2.4.3 step 4, same-engine siblings. d:0 p:1 x:2 (CPU) q1:3 q2:4 out:5; q1/q2 cannot merge
# into p (path through x). AIC max 4. P fresh t0. X: P has other AIC successors -> no
# candidate -> fresh CPU t0. Q1: P rejected (sibling Q2), X rejected (X.reused empty) -> fresh
# t1; Q2 fresh t2; O reuses Q1. AIC start 0: p 0, q1 1, q2 2, out 1; CPU start 3: x 3.
# Optimize: x has in-node p on 0 but no out-node there; nothing moves.
_SIBLINGS = """
    options: {{ge.streamMaxParallelNum: "AIcoreEngine:4"{extra}}}
    nodes:
      - {{name: d, type: Data}}
      - {{name: p, type: Relu, inputs: [d]}}
      - {{name: x, type: NonZero, inputs: [p]{x_attrs}}}
      - {{name: q1, type: Relu, inputs: [x, p]}}
      - {{name: q2, type: Relu, inputs: [x, p]}}
      - {{name: out, type: NetOutput, inputs: [q1, q2]}}
    """
CASES["sibling_same_engine_opens_streams"] = Case(
    _SIBLINGS.format(extra="", x_attrs=""),
    {"d": N, "p": 0, "x": 3, "q1": 1, "q2": 2, "out": 1}, 4)
# MemoryPriority skips step 4: X attaches to P; Q1's candidates P (cost 1) and X (step 6:
# X.reused = P is AIC) -> P; Q2 likewise; O -> P. Everything on one stream.
CASES["sibling_rule_off_with_memory_priority"] = Case(
    _SIBLINGS.format(extra=", ge.exec.memoryOptimizationPolicy: MemoryPriority", x_attrs=""),
    {"d": N, "p": 0, "x": 0, "q1": 0, "q2": 0, "out": 0}, 1)
# 2.4.3 step 3: force-attach on x skips steps 4-6 for X only: X reuses P. Q1/Q2 still reject P
# (sibling), but accept X by step 6 (X.reused = P is AIC) -> P's stream.
CASES["force_attach_skips_sibling_rule"] = Case(
    _SIBLINGS.format(extra="", x_attrs=", attrs: {_force_attach_stream: true}"),
    {"d": N, "p": 0, "x": 0, "q1": 0, "q2": 0, "out": 0}, 1)

# 2.4.3 step 6: AICore after an AICPU that attached to AICore. AIC max 2 so that a fresh AIC
# stream would be visible. A t0; C (attach) reuses A; B: step 5 fails (AIC not attach), step 6
# C.reused = A is AIC -> reuses A (t0, not a fresh t1); O -> A. One stream.
CASES["could_reuse_step6"] = Case("""
    options: {ge.streamMaxParallelNum: "AIcoreEngine:2"}
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: c, type: NonZero, inputs: [a]}
      - {name: b, type: Relu, inputs: [c]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": N, "a": 0, "c": 0, "b": 0, "out": 0}, 1)

# 2.4.3 step 3: without force-attach B (AIC) cannot reuse C (CPU, a root): B fresh AIC; AIC
# start 0 (b, out), CPU 1 (c); c has no in-node on 0 -> stays.
_FORCE = """
    nodes:
      - {{name: d, type: Data}}
      - {{name: c, type: NonZero, inputs: [d]}}
      - {{name: b, type: Relu, inputs: [c]{b_attrs}}}
      - {{name: out, type: NetOutput, inputs: [b]}}
    """
CASES["no_force_attach"] = Case(_FORCE.format(b_attrs=""),
                                {"d": N, "c": 1, "b": 0, "out": 0}, 2)
# With `_force_attach_stream` on b: step 3 -> true -> B and O on C's CPU stream 0.
CASES["force_attach"] = Case(_FORCE.format(b_attrs=", attrs: {_force_attach_stream: 1}"),
                             {"d": N, "c": 0, "b": 0, "out": 0}, 1)

# 2.4.3 step 1: no reuse across schedulers. x runs on an engine of scheduler TS_2, so out
# (GE-local, attach) opens a LOC stream: E-order Acc2 (0) < DNN_VM_GE_LOCAL (1).
_SCHEDULER = """
    engines:
      - {{name: Acc2, scheduler_id: {scheduler}, compute_cost: 1}}
    op_engines: {{Acc2Op: Acc2}}
    nodes:
      - {{name: d, type: Data}}
      - {{name: x, type: Acc2Op, inputs: [d]}}
      - {{name: out, type: NetOutput, inputs: [x]}}
    """
CASES["scheduler_mismatch"] = Case(_SCHEDULER.format(scheduler="TS_2"),
                                   {"d": N, "x": 0, "out": 1}, 2)
CASES["scheduler_match"] = Case(_SCHEDULER.format(scheduler="TS_1"),
                                {"d": N, "x": 0, "out": 0}, 1)

# 2.4.1 a reusable pred later in L-order gets its temporary stream when it is reused. c2 merges
# into c1's cluster (parents c1, a tie on out-degree, c1 first), so C{c1,c2} (first node at 1)
# precedes A{a} (at 2) although A feeds it. C (CPU, attach) takes A: A has no stream yet ->
# new AIC t0 for A, C reuses it; A is then skipped (assigned) and stays a root; O reuses C -> A.
CASES["pred_later_in_l_order"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: c1, type: NonZero, inputs: [d]}
      - {name: a, type: Relu, inputs: [d]}
      - {name: c2, type: NonZero, inputs: [c1, a]}
      - {name: out, type: NetOutput, inputs: [c2]}
    """, {"d": N, "c1": 0, "a": 0, "c2": 0, "out": 0}, 1)

# 2.4.1 max_parallel_num wrap-around. AIC max 2, d:0 a0:1 h:2 a1:3 a2:4 a3:5 out:6. H=0
# (next 1); A0 t0, A1 t1, A2 wraps to t0, A3 t1; O -> A1 (t1). AIC start 1: a0 1, a1 2, a2 1,
# a3 2, out 2. Optimize h: stream 1 in a0(1) out a2(4), nothing between -> h to 1; stream 2 has
# no in-node. Compaction {1,2} -> 0,1.
CASES["max_parallel_wraps"] = Case("""
    options: {ge.streamMaxParallelNum: "AIcoreEngine:2"}
    nodes:
      - {name: d, type: Data}
      - {name: a0, type: Relu, inputs: [d]}
      - {name: h, type: HcomAllReduce, inputs: [a0]}
      - {name: a1, type: Relu, inputs: [h]}
      - {name: a2, type: Relu, inputs: [h]}
      - {name: a3, type: Relu, inputs: [h]}
      - {name: out, type: NetOutput, inputs: [a1, a2, a3]}
    """, {"d": N, "a0": 0, "h": 0, "a1": 1, "a2": 0, "a3": 1, "out": 1}, 2)

# 2.7 group "-1" with two data inputs cannot follow a producer -> a group stream. H=0; A1, A2,
# A3 fresh AIC t0, O -> A3; AIC start 1 (next 2). Bucket 0 [h]: two inputs -> group "-1" gets
# 2. Optimize skips h (parallel group). Compaction {1,2}.
CASES["group_minus1_two_inputs"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a1, type: Relu, inputs: [d]}
      - {name: a2, type: Relu, inputs: [d]}
      - {name: h, type: HcomAllReduce, inputs: [a1, a2], attrs: {_parallel_group: "-1"}}
      - {name: a3, type: Relu, inputs: [h]}
      - {name: out, type: NetOutput, inputs: [a3]}
    """, {"d": N, "a1": 0, "a2": 0, "h": 1, "a3": 0, "out": 0}, 2)
# ... and with its single producer data-like (INVALID): H=0; A fresh -> 1; h -> group stream 2.
CASES["group_minus1_data_producer"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: h, type: HcomAllReduce, inputs: [d], attrs: {_parallel_group: "-1"}}
      - {name: a, type: Relu, inputs: [h]}
      - {name: out, type: NetOutput, inputs: [a]}
    """, {"d": N, "h": 1, "a": 0, "out": 0}, 2)

# 2.8 an AllReduce among the successors reserves a new id but keeps its stream. ar1 and ar2
# merge into one HCCL subgraph (0, next 1); G and U fresh AIC t0 -> 1 (next 2). Successors in
# id-order: ar2 (old 0 -> reserves 2, keeps 0), u (old 1 -> 3), out (-> 3). Compaction
# {0,1,3}: 3 -> 2 (the reserved 2 was never used).
_ALLREDUCE_CHAIN = """
    options: {ge.hcomParallel: "1"}
    nodes:
      - {name: d, type: Data}
      - {name: g, type: Relu, inputs: [d]}
      - {name: ar1, type: HcomAllReduce, inputs: [g], attrs: {fusion: 1}}
      - {name: ar2, type: HcomAllReduce, inputs: [ar1], attrs: {fusion: 1}}
      - {name: u, type: Relu, inputs: [ar2]}
      - {name: out, type: NetOutput, inputs: [u]}
    """
CASES["allreduce_successor_allreduce"] = Case(
    _ALLREDUCE_CHAIN, {"d": N, "g": 1, "ar1": 0, "ar2": 0, "u": 2, "out": 2}, 3)

# 2.8 label matching: ar has label L, so consumers labelled L or unlabelled follow; M does not.
# d:0 g:1 ar:2 u1:3(L) u2:4 u3:5(M) out:6. Labels AR=U1=0 (L), U3=1 (M) (next 2); Independent
# (DNN_HCCL, L) -> AR 2 (next 3); G, U2 fresh AIC t0, O reuses U2 (U1, U3 labelled); AIC start
# 3. Successors: u1 (old 0 -> 4), u2 (old 3 -> 5), out via u1 (L -> "" matches: -> 5).
# Optimize: g has only an out-node on 2; the rest are labelled or have same-stream neighbours.
# Compaction {1,2,3,4,5} (label stream 0 emptied) -> shift by one.
CASES["allreduce_labelled_successors"] = Case("""
    options: {ge.hcomParallel: "1"}
    nodes:
      - {name: d, type: Data}
      - {name: g, type: Relu, inputs: [d]}
      - {name: ar, type: HcomAllReduce, inputs: [g], attrs: {fusion: 1, _stream_label: L}}
      - {name: u1, type: Relu, inputs: [ar], attrs: {_stream_label: L}}
      - {name: u2, type: Relu, inputs: [ar]}
      - {name: u3, type: Relu, inputs: [ar], attrs: {_stream_label: M}}
      - {name: out, type: NetOutput, inputs: [u1, u2, u3]}
    """, {"d": N, "g": 2, "ar": 1, "u1": 3, "u2": 4, "u3": 0, "out": 4}, 5)
# An unlabelled AllReduce takes only unlabelled consumers: U1(L)=0; AR 1; G, U2 fresh AIC -> 2;
# successors u2 (2 -> 3), out (-> 3); u1 stays on its label stream.
CASES["allreduce_unlabelled_skips_labelled"] = Case("""
    options: {ge.hcomParallel: "1"}
    nodes:
      - {name: d, type: Data}
      - {name: g, type: Relu, inputs: [d]}
      - {name: ar, type: HcomAllReduce, inputs: [g], attrs: {fusion: 1}}
      - {name: u1, type: Relu, inputs: [ar], attrs: {_stream_label: L}}
      - {name: u2, type: Relu, inputs: [ar]}
      - {name: out, type: NetOutput, inputs: [u1, u2]}
    """, {"d": N, "g": 2, "ar": 1, "u1": 0, "u2": 3, "out": 3}, 4)
# [P-order] successors on two old streams get new ids in id-order (u1 before u2). AIC max 2:
# AR 0; G t0, U1 t1, U2 t0 (wrap), O -> U1; AIC start 1: g 1, u1 2, u2 1, out 2 (next 3).
# Successors in id-order: u1 (old 2 -> 3), u2 (old 1 -> 4), out (old 2 -> 3). Optimize: ar's
# stream-1 in-node g has no stream-1 out-node any more. Compaction {0,1,3,4}.
CASES["allreduce_successors_id_order"] = Case("""
    options: {ge.hcomParallel: "1", ge.streamMaxParallelNum: "AIcoreEngine:2"}
    nodes:
      - {name: d, type: Data}
      - {name: g, type: Relu, inputs: [d]}
      - {name: ar, type: HcomAllReduce, inputs: [g], attrs: {fusion: 1}}
      - {name: u1, type: Relu, inputs: [ar]}
      - {name: u2, type: Relu, inputs: [ar]}
      - {name: out, type: NetOutput, inputs: [u1, u2]}
    """, {"d": N, "g": 1, "ar": 0, "u1": 2, "u2": 3, "out": 2}, 4)

# 2.9 skip-engine sinks (NoOp, NetOutput: no outputs) are never re-homed by the second rule,
# even though their only neighbour sits on a single stream. A(L)=0; N and O (pred labelled)
# fresh LOC t0 -> 1.
CASES["skipped_sinks_not_rehomed"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}
      - {name: n, type: NoOp, inputs: [a]}
      - {name: out, type: NetOutput, inputs: [a]}
    """, {"d": N, "a": 0, "n": 1, "out": 1}, 2)

# 2.9 a labelled GE-local node is no candidate: unlike 7.8a, r keeps its label stream although
# its only input is data-like. R(L)=0; A (pred labelled) fresh AIC -> 1, O reuses A.
CASES["labelled_local_not_skipped"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: r, type: Reshape, inputs: [d], attrs: {_stream_label: L}}
      - {name: a, type: Relu, inputs: [r]}
      - {name: out, type: NetOutput, inputs: [a]}
    """, {"d": N, "r": 0, "a": 1, "out": 1}, 2)

# 3.3 / 7.11 compaction keeps the relative order of root and subgraph ids. Root: MDE reserves 0
# (next 1); H=1; A fresh AIC, P{pc,out} fresh LOC; AIC start 2, LOC 3 -> a 2, pc 3, out 3
# (next 4). Body (default 3): BH=4 (next 5); B1 (pred independent) fresh AIC; finalize next
# 4 = to_replace, AIC start 4 -> B1 -> 3; BO reuses B1. Used {1,2,3,4} -> 0..3.
CASES["compaction_across_graphs"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {NewStreamId: 7}}
      - {name: h, type: HcomAllReduce, inputs: [a]}
      - {name: pc, type: PartitionedCall, inputs: [h], subgraphs: {f: body}}
      - {name: out, type: NetOutput, inputs: [pc]}
    subgraphs:
      body:
        nodes:
          - {name: bd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: bh, type: HcomAllReduce, inputs: [bd]}
          - {name: b1, type: Relu, inputs: [bh]}
          - {name: bout, type: NetOutput, inputs: [b1]}
    """, {"d": N, "a": 1, "h": 0, "pc": 2, "out": 2, "bd": N, "bh": 3, "b1": 2, "bout": 2}, 4)

# 2.2 the same label in a subgraph gets another stream than in the root. Root A(L)=0; P
# (pred labelled) fresh LOC -> 1 (next 2). Body (default 1): B(L) -> 2 (per-graph label map,
# next 3); BO fresh LOC; finalize next 2 = to_replace, LOC start 2 -> BO -> 1.
CASES["label_per_graph"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}
      - {name: pc, type: PartitionedCall, inputs: [a], subgraphs: {f: body}}
      - {name: out, type: NetOutput, inputs: [pc]}
    subgraphs:
      body:
        nodes:
          - {name: bd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: b, type: Relu, inputs: [bd], attrs: {_stream_label: L}}
          - {name: bout, type: NetOutput, inputs: [b]}
    """, {"d": N, "a": 0, "pc": 1, "out": 1, "bd": N, "b": 2, "bout": 1}, 3)

# 1.5 Cmo labelling: cmo's own label L is replaced by "g_Cmo", so it leaves the L stream.
# A(L)=0, C(g_Cmo)=1, B(L)=0 (next 2); O (pred labelled) fresh LOC -> 2.
CASES["cmo_replaces_label"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}
      - {name: cmo, type: Cmo, inputs: [a], attrs: {_stream_label: L}}
      - {name: b, type: Relu, inputs: [cmo], attrs: {_stream_label: L}}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": N, "a": 0, "cmo": 1, "b": 0, "out": 2}, 3)
# Two unlabelled Cmo nodes of one graph share the "g_Cmo" stream, apart from unlabelled work:
# C1=C2=0 (next 1); A, B fresh AIC (B's pred labelled) -> 1; O fresh LOC -> 2. Optimize: b sits
# between c1 and c2 on 0, but 0 is a label stream.
CASES["cmo_nodes_share_stream"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: c1, type: Cmo, inputs: [a]}
      - {name: b, type: Relu, inputs: [c1]}
      - {name: c2, type: Cmo, inputs: [b]}
      - {name: out, type: NetOutput, inputs: [c2]}
    """, {"d": N, "a": 1, "c1": 0, "b": 1, "c2": 0, "out": 2}, 3)

# 2.5 single-stream: root s=0 (next 1); known subgraphs (dyn, known) use the parent's 0; inner
# lives under pc2, whose graph dyn is unknown-shape -> default INVALID -> opens stream 1.
# R-order: dyn, inner, known.
CASES["single_stream_subgraphs"] = Case("""
    options: {ge.enableSingleStream: "true"}
    nodes:
      - {name: d, type: Data}
      - {name: pc, type: PartitionedCall, inputs: [d], subgraphs: {f: dyn}}
      - {name: pk, type: PartitionedCall, inputs: [d], subgraphs: {f: known}}
      - {name: out, type: NetOutput, inputs: [pc, pk]}
    subgraphs:
      dyn:
        attrs: {unknown_shape: true}
        nodes:
          - {name: dd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: pc2, type: PartitionedCall, inputs: [dd], subgraphs: {f: inner}}
          - {name: dout, type: NetOutput, inputs: [pc2]}
      inner:
        nodes:
          - {name: id, type: Data, attrs: {_parent_node_index: 0}}
          - {name: i1, type: Relu, inputs: [id]}
          - {name: iout, type: NetOutput, inputs: [i1]}
      known:
        nodes:
          - {name: kd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: k1, type: Relu, inputs: [kd]}
          - {name: kout, type: NetOutput, inputs: [k1]}
    """, {"d": N, "pc": 0, "pk": 0, "out": 0, "dd": N, "pc2": 0, "dout": 0, "id": N, "i1": 1,
          "iout": 1, "kd": N, "k1": 0, "kout": 0}, 2)

# R-order: an If appends its subgraphs in reverse (else, then), so the else branch's HCCL
# stream comes first. Root: all on 0 (next 1). else: EH=1 (next 2); EO fresh LOC; finalize
# next 1 = to_replace -> EO 0. then: TH=2 (next 3); TO -> 0.
CASES["if_else_branch_first"] = Case("""
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: if, type: If, inputs: [a], subgraphs: {then: t, else: e}}
      - {name: out, type: NetOutput, inputs: [if]}
    subgraphs:
      t:
        nodes:
          - {name: td, type: Data, attrs: {_parent_node_index: 0}}
          - {name: th, type: HcomAllReduce, inputs: [td]}
          - {name: tout, type: NetOutput, inputs: [th]}
      e:
        nodes:
          - {name: ed, type: Data, attrs: {_parent_node_index: 0}}
          - {name: eh, type: HcomAllReduce, inputs: [ed]}
          - {name: eout, type: NetOutput, inputs: [eh]}
    """, {"d": N, "a": 0, "if": 0, "out": 0, "td": N, "th": 2, "tout": 0, "ed": N, "eh": 1,
          "eout": 0}, 3)

# --- dynamic flow (4), ENABLE_DYNAMIC_SHAPE_MULTI_STREAM = 1 ----------------------------------
_DYN = '    dynamic_shape: true\n    options: {{ENABLE_DYNAMIC_SHAPE_MULTI_STREAM: "1"{extra}}}\n'
_AC = _DYN.format(extra=', ac_parallel_enable: "1"')

# 4.3 step 2 no_input: C has no paired PlaceHolder -> own CPU stream (1); A owns AIC 0; O
# reuses A. Renumber AIC (1) 0, CPU (3) 1; d, out forced to 0. Without ac_parallel C reuses
# its successor A's stream (step 3, C is attach) -> one stream.
_NO_INPUT = """
    nodes:
      - {name: d, type: Data}
      - {name: c, type: NonZero, inputs: [d]}
      - {name: a, type: Relu, inputs: [c]}
      - {name: out, type: NetOutput, inputs: [a]}
    """
CASES["dyn_ac_no_input"] = Case(_AC + _NO_INPUT, {"d": 0, "c": 1, "a": 0, "out": 0}, 2)
CASES["dyn_no_ac_no_input"] = Case(_DYN.format(extra="") + _NO_INPUT,
                                   {"d": 0, "c": 0, "a": 0, "out": 0}, 1)

# 4.3 step 2 only_notask_input: C's only pred R is GE-local with no paired input -> own CPU
# stream 1 in step 2, so in step 3 R (attach) reuses its successor C -> 1. Without ac_parallel
# R finds C still unassigned and stays INVALID (-> 0), C gets CPU in step 4.
_NOTASK = """
    nodes:
      - {name: d, type: Data}
      - {name: r, type: Reshape, inputs: [d]}
      - {name: c, type: NonZero, inputs: [r]}
      - {name: a, type: Relu, inputs: [c]}
      - {name: out, type: NetOutput, inputs: [a]}
    """
CASES["dyn_ac_only_notask_input"] = Case(_AC + _NOTASK,
                                         {"d": 0, "r": 1, "c": 1, "a": 0, "out": 0}, 2)
CASES["dyn_no_ac_only_notask_input"] = Case(_DYN.format(extra="") + _NOTASK,
                                            {"d": 0, "r": 0, "c": 1, "a": 0, "out": 0}, 2)

# 4.3 step 2 can_reuse_pred: A also feeds B (AIC, not merged: path through c), so A has another
# successor of its own engine -> no reusable pred -> C owns CPU 1. Without the a->b edge C
# reuses A (step 3) -> one stream.
CASES["dyn_ac_cannot_reuse_pred"] = Case(_AC + """
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: c, type: NonZero, inputs: [a]}
      - {name: b, type: Relu, inputs: [a, c]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": 0, "a": 0, "c": 1, "b": 0, "out": 0}, 2)
CASES["dyn_ac_can_reuse_pred"] = Case(_AC + """
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: c, type: NonZero, inputs: [a]}
      - {name: b, type: Relu, inputs: [c]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": 0, "a": 0, "c": 0, "b": 0, "out": 0}, 1)

# 4.3 step 2 without ac_parallel: AI CPU subgraphs holding an independent type (GetNext,
# DropOutGenMask, ...) own the CPU stream; any other AI CPU op reuses A.
_INDEPENDENT_CPU = """
    nodes:
      - {{name: d, type: Data}}
      - {{name: a, type: Relu, inputs: [d]}}
      - {{name: g, type: {op}, inputs: [a]}}
      - {{name: b, type: Relu, inputs: [g]}}
      - {{name: out, type: NetOutput, inputs: [b]}}
    """
for _op, _stream in (("GetNext", 1), ("DropOutGenMask", 1), ("NonZero", 0)):
    CASES[f"dyn_independent_cpu_{_op}"] = Case(
        _DYN.format(extra="") + _INDEPENDENT_CPU.format(op=_op),
        {"d": 0, "a": 0, "g": _stream, "b": 0, "out": 0}, 1 + _stream)

# 4.4 step 3 forced main: A, B own AIC 0; G1, G2 (DropOutGenMask) own CPU 1; F (FileConstant,
# GE-local, attach, no preds) reuses its successor G1 -> 1. Renumber: AIC 0, CPU 1; f
# (FileConstant) and g2 (_is_potential_const) are forced to 0.
CASES["dyn_forced_main"] = Case(_DYN.format(extra="") + """
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d]}
      - {name: f, type: FileConstant}
      - {name: g1, type: DropOutGenMask, inputs: [a, f]}
      - {name: g2, type: DropOutGenMask, inputs: [a], attrs: {_is_potential_const: true}}
      - {name: b, type: Relu, inputs: [g1, g2]}
      - {name: out, type: NetOutput, inputs: [b]}
    """, {"d": 0, "a": 0, "f": 0, "g1": 1, "g2": 0, "b": 0, "out": 0}, 2)

# 4.2 labels are model-wide in the dynamic flow (unlike 2.2): a (root) and b (unknown-shape
# body) share label L's stream. Owning: A, B -> AIC 0 (one per engine for the model); P{pc,out}
# and BO reuse their AIC preds; labels: a, b -> L = 1. Renumber: AIC (still used by pc, out,
# bout) 0, L 1; d, bd, out, bout forced main, pc owns a subgraph -> 0.
CASES["dyn_label_model_wide"] = Case(_DYN.format(extra="") + """
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}
      - {name: pc, type: PartitionedCall, inputs: [a], subgraphs: {f: body}}
      - {name: out, type: NetOutput, inputs: [pc]}
    subgraphs:
      body:
        nodes:
          - {name: bd, type: Data, attrs: {_parent_node_index: 0}}
          - {name: b, type: Relu, inputs: [bd], attrs: {_stream_label: L}}
          - {name: bout, type: NetOutput, inputs: [b]}
    """, {"d": 0, "a": 1, "pc": 0, "out": 0, "bd": 0, "b": 1, "bout": 0}, 2)

# 4: a dynamic model without ENABLE_DYNAMIC_SHAPE_MULTI_STREAM = "1" stays on stream 0, labels,
# HCCL and AI CPU included.
_DYN_PLAIN = """
    nodes:
      - {name: d, type: Data}
      - {name: a, type: Relu, inputs: [d], attrs: {_stream_label: L}}
      - {name: h, type: HcomAllReduce, inputs: [a]}
      - {name: c, type: DropOutGenMask, inputs: [h]}
      - {name: out, type: NetOutput, inputs: [c]}
    """
for _key, _option in (("absent", ""), ("zero", "ENABLE_DYNAMIC_SHAPE_MULTI_STREAM: '0'"),
                      ("true", "ENABLE_DYNAMIC_SHAPE_MULTI_STREAM: 'true'")):
    CASES[f"dyn_without_multi_stream_{_key}"] = Case(
        f"    dynamic_shape: true\n    options: {{{_option}}}\n" + _DYN_PLAIN,
        {"d": 0, "a": 0, "h": 0, "c": 0, "out": 0}, 1)

# --- attached streams (5) -------------------------------------------------------------------
# m1 on label stream 0, m2 on label stream 1 (main 2); attached ids start at 2.
_ATTACHED = """
    nodes:
      - {{name: d, type: Data}}
      - {{name: m1, type: MatMul, inputs: [d], attrs: {{_stream_label: A, {m1}}}}}
      - {{name: m2, type: MatMul, inputs: [d], attrs: {{_stream_label: B, {m2}}}}}
    """


def _legacy_single(key: str, group: str) -> str:
    return (f"group: {group}, _attached_stream_info: {{type: named_attrs, value: {{name: '', "
            f"attrs: {{_attached_stream_policy: group, _attached_stream_key: {key}}}}}}}")


def _legacy_list(key: str) -> str:
    return (f"_attached_stream_info: {{type: list_named_attrs, value: [{{name: '', attrs: "
            f"{{_attached_stream_key: {key}}}}}]}}")


_MAIN = {"d": N, "m1": 0, "m2": 1}
# 5.1 legacy single form: the key has no stream suffix, so one (group, key) is one stream: 2.
CASES["attached_legacy_single_shared"] = Case(
    _ATTACHED.format(m1=_legacy_single("k", "g1"), m2=_legacy_single("k", "g1")),
    _MAIN, 2, {"m1": (2,), "m2": (2,)})
# Two groups: [hash order] in GE, sorted by name here: "aa" (m2) -> 2 before "zz" (m1) -> 3.
CASES["attached_legacy_single_groups_sorted"] = Case(
    _ATTACHED.format(m1=_legacy_single("k", "zz"), m2=_legacy_single("k", "aa")),
    _MAIN, 2, {"m1": (3,), "m2": (2,)})
# 5.1 legacy list form: key + "_stream_" + main stream: k_stream_0 (m1) 2 < k_stream_1 (m2) 3.
CASES["attached_legacy_list"] = Case(
    _ATTACHED.format(m1=_legacy_list("k"), m2=_legacy_list("k")),
    _MAIN, 2, {"m1": (2,), "m2": (3,)})
# `_disable_attached_resource` (presence, any value) drops m2's request.
CASES["attached_disabled"] = Case(
    _ATTACHED.format(m1=_legacy_list("k"),
                     m2=_legacy_list("k") + ", _disable_attached_resource: 0"),
    _MAIN, 2, {"m1": (2,)})

# 5.1 a node with `_attached_sync_res_info_list` counts as v2: without a stream list it gets no
# attached stream, and its legacy `_attached_stream_info` is ignored. m2: k_stream_1 -> 2.
CASES["attached_sync_list_hides_legacy"] = Case(
    _ATTACHED.format(m1=_legacy_list("k") + ", _attached_sync_res_info_list: {type: "
                     "list_named_attrs, value: [{name: '', attrs: {x: 1}}]}",
                     m2=_legacy_list("k")),
    _MAIN, 2, {"m2": (2,)})

_V2_FORCED = ("_attached_stream_info_list: {type: list_named_attrs, value: [{name: '', attrs: "
              "{_attached_resource_name: aux, _attached_resource_required_flag: true, "
              "_attached_resource_force_reuse: true}}]}")
# 5: a fresh pass instance per graph: the same forced-reuse key "aux" in the root (m1) and in a
# subgraph (m2) gives two streams. Main: m1 fresh AIC 0, P reuses; body on the parent's 0.
CASES["attached_per_graph"] = Case(f"""
    nodes:
      - {{name: d, type: Data}}
      - {{name: m1, type: MatMul, inputs: [d], attrs: {{{_V2_FORCED}}}}}
      - {{name: pc, type: PartitionedCall, inputs: [m1], subgraphs: {{f: body}}}}
      - {{name: out, type: NetOutput, inputs: [pc]}}
    subgraphs:
      body:
        nodes:
          - {{name: bd, type: Data, attrs: {{_parent_node_index: 0}}}}
          - {{name: m2, type: MatMul, inputs: [bd], attrs: {{{_V2_FORCED}}}}}
          - {{name: bout, type: NetOutput, inputs: [m2]}}
    """, {"d": N, "m1": 0, "pc": 0, "out": 0, "bd": N, "m2": 0, "bout": 0}, 1,
    {"m1": (1,), "m2": (2,)})


@pytest.mark.parametrize("name", sorted(CASES))
def test_quirk(name: str) -> None:
    case = CASES[name]
    allocation = allocate(case.graph)
    assert streams(allocation) == case.streams
    assert allocation.main_stream_num == case.main
    assert {n: s.attached for n, s in allocation.nodes.items() if s.attached} == case.attached
    assert allocation.total_stream_num == case.main + len(
        {a for ids in case.attached.values() for a in ids})


def test_allreduce_successor_reserves_an_id(tmp_path: Path) -> None:
    """2.8: without compaction the id reserved for ar2's old stream (2) shows as a hole."""
    rules = tmp_path / "no-compact.yaml"
    rules.write_text("format: streamalloc.rules/v1\nextends: ge-static-multi-stream\nrules:\n"
                     "  - {name: compact, disable: true}\n", encoding="utf-8")
    allocation = allocate(_ALLREDUCE_CHAIN, load_rules(rules))
    assert streams(allocation) == {"d": N, "g": 1, "ar1": 0, "ar2": 0, "u": 3, "out": 3}
    assert allocation.main_stream_num == 4  # the counter: 0, 1, reserved 2, u's 3


def test_invalid_ac_parallel_enable() -> None:
    """4.1: ac_parallel_enable must be "", "0" or "1" (GE E10001), an input error (exit 3)."""
    with pytest.raises(OptionError, match=r"ac_parallel_enable.*'2'") as info:
        allocate(_DYN.format(extra=', ac_parallel_enable: "2"') + _NO_INPUT)
    assert info.value.exit_code == 3


_MALFORMED = {
    "legacy single without policy group": (
        "group: g1, _attached_stream_info: {type: named_attrs, value: {name: '', attrs: "
        "{_attached_stream_policy: other, _attached_stream_key: k}}}"),
    "legacy single without group attribute": (
        "_attached_stream_info: {type: named_attrs, value: {name: '', attrs: "
        "{_attached_stream_policy: group, _attached_stream_key: k}}}"),
    "legacy neither named attrs nor list": "_attached_stream_info: 3",
    "v2 entry without resource name": (
        "_attached_stream_info_list: {type: list_named_attrs, value: [{name: '', attrs: "
        "{_attached_resource_required_flag: true}}]}"),
    "v2 not a list": "_attached_stream_info_list: aux",
}


@pytest.mark.parametrize("what", sorted(_MALFORMED))
def test_malformed_attached_stream_info(what: str) -> None:
    """5, 3.5: a malformed attached-stream attribute is an input error naming the node."""
    text = _ATTACHED.format(m1=_MALFORMED[what], m2="_x: 1")
    with pytest.raises(InputError, match="'m1'") as info:
        allocate(text)
    assert info.value.exit_code == 3


def _dynamic_if(unknown: bool) -> str:
    flag = "true" if unknown else "false"
    return f"""
    dynamic_shape: true
    options: {{ENABLE_DYNAMIC_SHAPE_MULTI_STREAM: "1"}}
    nodes:
      - {{name: d, type: Data}}
      - {{name: a, type: Relu, inputs: [d]}}
      - {{name: if, type: If, inputs: [a], subgraphs: {{then: t, else: e}}}}
      - {{name: out, type: NetOutput, inputs: [if]}}
    subgraphs:
      t:
        attrs: {{unknown_shape: {flag}}}
        nodes:
          - {{name: td, type: Data, attrs: {{_parent_node_index: 0}}}}
          - {{name: tm, type: MatMul, inputs: [td], attrs: {{{_V2_FORCED}}}}}
          - {{name: tout, type: NetOutput, inputs: [tm]}}
      e:
        attrs: {{unknown_shape: {flag}}}
        nodes:
          - {{name: ed, type: Data, attrs: {{_parent_node_index: 0}}}}
          - {{name: em, type: MatMul, inputs: [ed], attrs: {{{_V2_FORCED}}}}}
          - {{name: eout, type: NetOutput, inputs: [em]}}
    """


def test_dynamic_attached_streams_follow_r_order() -> None:
    """5, 4.3/4.5: dynamic flow runs per root, then unknown subgraphs in R-order (else, then).

    Main: everything on the AIC stream 0 (1 stream). Attached, fresh pass per graph, key "aux":
    root none; else branch em -> 1; then branch tm -> 2 (total 3).
    """
    allocation = allocate(_dynamic_if(unknown=True))
    assert allocation.main_stream_num == 1 and allocation.total_stream_num == 3
    assert allocation.nodes["em"].attached == (1,)
    assert allocation.nodes["tm"].attached == (2,)


def test_dynamic_attached_streams_skip_known_subgraphs() -> None:
    """5: "Dynamic flow: per root and per unknown subgraph": tm/em live in known-shape branches."""
    allocation = allocate(_dynamic_if(unknown=False))
    assert {n for n, s in allocation.nodes.items() if s.attached} == set()
    assert allocation.total_stream_num == 1


_NO_COST = """
{header}    engines:
      - {{name: NoCost, attach: {attach}}}
    op_engines: {{NoCostOp: NoCost}}
    nodes:
      - {{name: d, type: Data}}
      - {{name: a, type: Relu, inputs: [d]}}
      - {{name: n, type: NoCostOp, inputs: [d]}}
      - {{name: out, type: NetOutput, inputs: [a, n]}}
    """


def test_engine_without_cost_aborts_the_ranking() -> None:
    """2.4.2: out's candidates are A (AIC) and N (NoCost, no cost) -> none -> fresh LOC stream.
    E-order AIcoreEngine 0, DNN_VM_GE_LOCAL 1, NoCost 2; nothing folds (out has no outputs)."""
    allocation = allocate(_NO_COST.format(header="", attach="true"))
    assert streams(allocation) == {"d": N, "a": 0, "n": 2, "out": 1}


def test_dynamic_engine_without_cost_is_an_error() -> None:
    """4.4: N (NoCost, not attach) gets its engine stream in 4.3 step 4; renumbering needs its
    cost."""
    with pytest.raises(InputError, match="NoCost"):
        allocate(_NO_COST.format(header=_DYN.format(extra=""), attach="false"))
