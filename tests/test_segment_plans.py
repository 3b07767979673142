"""Plans of single segments from the sync-aware bound's runs (`optimal/segment_plans.py`).

Invariants (style principle 9): a segment's tasks end up sharing streams exactly as the run
the bound solved shares them, in the run's order; what followed the segment's last task on its
stream follows it on its new one; a kind of segment is kept only where its plans run faster,
so a start never gets slower, and its plan verifies (random chains of fork-joins, some of
their tasks without device work); and on BERT base, whose attention blocks the search alone runs
the value projection first, the makespan objective runs them as the bound solved them.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from every_plan import ge_evaluator
from node_graphs import fork_join_chain_nodes, graph_of

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.bounds import segment_runs
from streamalloc.optimal.evaluate import assignment_of
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.options import TIME_SCALE
from streamalloc.optimal.segment_plans import with_segment_plans
from streamalloc.optimal.series import SegmentRun
from streamalloc.rules import builtin_rules
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.verify import verify_plan

COSTS = default_cost_table()
DATA = Path(__file__).parent / "data"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def _attention(layers: int) -> str:
    """BERT's attention blocks in small: the q, k and v projections (32 cores each), their
    Adds and Transposes (11), the scores' chain (21), the output projection, a LayerNorm."""
    lines = ["format: streamalloc.graph/v1", "name: attention", "nodes:",
             "  - {name: x, type: Data}"]

    def op(name: str, type_: str, inputs: list[str], cost: float, dim: int) -> None:
        lines.append(f"  - {{name: {name}, type: {type_}, inputs: [{', '.join(inputs)}], "
                     f"cost_us: {cost}, attrs: {{block_dim: {dim}}}}}")

    op("ln", "LayerNorm", ["x"], 1.9, 11)
    previous = "ln"
    for layer in range(layers):
        p = f"l{layer}_"
        for head in ("k", "q", "v"):
            op(p + head, "MatMul", [previous], 2.6, 32)
            op(p + head + "a", "Add", [p + head], 1.9, 11)
            op(p + head + "t", "Transpose", [p + head + "a"], 1.9, 11)
        op(p + "s", "MatMul", [p + "qt", p + "kt"], 2.0, 21)
        op(p + "m", "Mul", [p + "s"], 2.0, 21)
        op(p + "sm", "Softmax", [p + "m"], 2.0, 21)
        op(p + "o", "MatMul", [p + "sm", p + "vt"], 2.0, 21)
        op(p + "d", "MatMul", [p + "o"], 2.6, 32)
        op(p + "ln", "LayerNorm", [p + "d"], 1.9, 11)
        previous = p + "ln"
    lines.append(f"  - {{name: out, type: NetOutput, inputs: [{previous}]}}")
    return "\n".join(lines) + "\n"


@pytest.fixture()
def attention(tmp_path: Path) -> Graph:
    path = tmp_path / "attention.yaml"
    path.write_text(_attention(3), encoding="utf-8")
    return load_graph(path)


def _evaluator(graph: Graph) -> Evaluator:
    return ge_evaluator(graph, OptimalOptions(objective="makespan"), COSTS)


def _one_stream(evaluator: Evaluator) -> tuple[tuple[tuple[tuple[int, ...], ...], None], int]:
    """Every node on one stream in the graph's order (each layer's v projection first of
    the three after k and q: the scores wait), and its makespan in schedule units."""
    dag = evaluator.dag
    chains = (tuple(range(dag.size)),)
    outcome = evaluator.outcome(assignment_of(dag, chains))
    assert outcome is not None
    return (chains, None), math.ceil(outcome.makespan_us * TIME_SCALE)


def test_a_segment_runs_as_the_bound_solved_it(attention: Graph) -> None:
    evaluator = _evaluator(attention)
    dag = evaluator.dag
    runs = segment_runs(attention, evaluator.baseline.plan, COSTS)
    assert [run.members[0] for run in runs] == ["ln", "l0_ln", "l1_ln"]  # one kind: equal layers
    assert {run.kind for run in runs} == {0}
    start, makespan = _one_stream(evaluator)
    (chains, order), faster = with_segment_plans(dag, start, makespan, runs=runs,
                                                 evaluator=evaluator, allowed=lambda _: True)
    assert faster < makespan and faster / TIME_SCALE < 152.0  # one stream: 189.1 us
    streams = assignment_of(dag, chains)
    assert order is not None
    position = {name: i for i, name in enumerate(order)}
    index = {name: v for v, name in enumerate(dag.names)}
    for run in runs:
        members = [index[name] for name in run.members]
        for i, u in enumerate(members):
            for j, v in enumerate(members[:i]):
                assert (streams[u] == streams[v]) == (run.streams[i] == run.streams[j])
                if streams[u] == streams[v] and run.starts[i] != run.starts[j]:
                    assert (position[run.members[i]] > position[run.members[j]]) == \
                        (run.starts[i] > run.starts[j])
    # the output projection followed the last MatMul on its stream, and still does
    assert streams[index["l0_d"]] == streams[index["l0_o"]]
    plan = evaluator.synchronized(streams, order)
    assert verify_plan(attention, plan.to_json()).ok
    assert emulate(attention, plan.to_json()).makespan_us == pytest.approx(faster / TIME_SCALE,
                                                                           abs=0.1)


def test_a_kind_whose_plans_run_slower_is_left_out(attention: Graph) -> None:
    """From the plan the bound's runs give, the first layer with each task on a stream of
    its own (every dependency an event) runs slower: the start comes back as it was."""
    evaluator = _evaluator(attention)
    runs = segment_runs(attention, evaluator.baseline.plan, COSTS)
    start, makespan = with_segment_plans(evaluator.dag, *_one_stream(evaluator), runs=runs,
                                         evaluator=evaluator, allowed=lambda _: True)
    solved = runs[0]
    apart = SegmentRun(solved.members, tuple(range(len(solved.members))), solved.starts, 1)
    assert with_segment_plans(evaluator.dag, start, makespan, runs=[apart],
                              evaluator=evaluator, allowed=lambda _: True) == (start, makespan)


def test_a_kind_that_breaks_a_rule_is_left_out(attention: Graph) -> None:
    evaluator = _evaluator(attention)
    start, makespan = _one_stream(evaluator)
    runs = segment_runs(attention, evaluator.baseline.plan, COSTS)
    assert with_segment_plans(evaluator.dag, start, makespan, runs=runs, evaluator=evaluator,
                              allowed=lambda streams: len(set(streams)) == 1) \
        == (start, makespan)


def test_bert_base_runs_its_attention_blocks_as_the_bound_solved_them() -> None:
    """The search alone left BERT base at 1701.1 us (--time-limit 10): from each layer's
    LayerNorm to its second MatMul 44.6 us, the bound's run 38.6."""
    graph = load_graph(DATA / "onnx" / "bert_base.onnx").with_options(PARALLEL)
    plan, solver = allocate_optimal(graph, builtin_rules("free"),
                                    OptimalOptions(objective="makespan", time_limit=1.0))
    assert verify_plan(graph, plan.to_json()).ok
    assert solver.makespan_us == pytest.approx(emulate(graph, plan.to_json()).makespan_us)
    assert solver.makespan_us < 1660.0
    assert "+critical+segments" in solver.phase


@pytest.mark.parametrize("seed", range(12))
def test_segment_plans_of_fork_join_chains(tmp_path: Path, seed: int) -> None:
    """Every module of a chain of fork-joins is a segment: from one stream and from ge
    mode's streams, the plans with segment plans put in verify, run as reported and never
    slower than the start; the same twice; and the makespan objective's plan verifies."""
    rng = random.Random(seed)
    graph = graph_of(tmp_path, f"chain{seed}", fork_join_chain_nodes(rng, rng.randint(2, 4)))
    evaluator = _evaluator(graph)
    dag = evaluator.dag
    runs = segment_runs(graph, evaluator.baseline.plan, COSTS)
    assert runs  # each module's fork and join are cut tasks
    ge_mode = evaluator.baseline.allocation
    ge_chains = tuple(tuple(v for v in range(dag.size) if ge_mode.stream(dag.names[v]) == s)
                      for s in sorted({ge_mode.stream(name) for name in dag.names}))
    ge_outcome = evaluator.outcome(assignment_of(dag, ge_chains))
    assert ge_outcome is not None
    for start, makespan in (_one_stream(evaluator),
                            ((ge_chains, None),
                             math.ceil(ge_outcome.makespan_us * TIME_SCALE))):
        found, faster = with_segment_plans(dag, start, makespan, runs=runs,
                                           evaluator=evaluator, allowed=lambda _: True)
        assert faster <= makespan
        assert (found, faster) == with_segment_plans(dag, start, makespan, runs=runs,
                                                     evaluator=evaluator,
                                                     allowed=lambda _: True)
        plan = evaluator.synchronized(assignment_of(dag, found[0]), found[1])
        assert verify_plan(graph, plan.to_json()).ok
        result = emulate(graph, plan.to_json())
        assert result.status == "ok"
        assert math.ceil(result.makespan_us * TIME_SCALE) == faster
    plan, _ = allocate_optimal(graph, builtin_rules("free"),
                               OptimalOptions(objective="makespan", time_limit=0.2))
    assert verify_plan(graph, plan.to_json()).ok
