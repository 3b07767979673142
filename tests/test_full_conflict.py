"""What the optimal mode knows under --concurrency full before any search: rules and stream
limits no plan can hold (`optimal/full_conflict.py`; each conflict checked against every plan
of tiny graphs, and the answer names the rule), and plans at the bounds
(`optimal/at_bounds.py`)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from every_plan import partitions
from node_graphs import graph_of
from real_models import DATA

from streamalloc import api
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.optimal import OptimalOptions
from streamalloc.optimal.driver import allocate_optimal, solver_constraints
from streamalloc.optimal.evaluate import breaks, task_dag
from streamalloc.optimal.full_conflict import full_concurrency_conflict, widest_level
from streamalloc.rules import RuleSet, builtin_rules, default_rule_set, load_rules
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.limits import limits_of
from streamalloc.verify import verify_plan

TRAIN_STEP = Path(__file__).parent.parent / "examples" / "graphs" / "train_step.yaml"
PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
ENGINES = ["AIcoreEngine", "AIcoreEngine", "AIcoreEngine", "DNN_VM_AICPU_ASCEND", "DNN_HCCL"]


def _random_graph(tmp_path: Path, rng: random.Random, k: int) -> Graph:
    """A random DAG of 4 to 7 nodes on AI Core, AI CPU and HCCL, with engine caps of 1 or 2,
    on a device of 3, 4 or 15 usable streams."""
    nodes, names = ["{name: x, type: Data}"], []
    for i in range(rng.randint(4, 7)):
        inputs = ", ".join(rng.sample(names, min(len(names), rng.choice([1, 1, 2])))) or "x"
        nodes.append(f"{{name: n{i}, type: Add, engine: {rng.choice(ENGINES)}, "
                     f"inputs: [{inputs}]}}")
        names.append(f"n{i}")
    nodes.append(f"{{name: out, type: NetOutput, inputs: [{', '.join(names)}]}}")
    caps = f"AIcoreEngine:{rng.choice([1, 1, 2])},DNN_VM_AICPU_ASCEND:{rng.choice([1, 2])}"
    return graph_of(tmp_path, f"g{k}", nodes).with_options(
        {"ge.streamMaxParallelNum": caps, "ge.hcomParallel": rng.choice(["0", "1"]),
         "streamalloc.max_streams": rng.choice(["4", "5", "16"]),
         "streamalloc.unlimited_stream_depth": "true"})


def _chain_plan_exists(graph: Graph, dag: TaskDag, rules: RuleSet) -> bool:
    """Does any plan whose streams are chains (full concurrency) hold the rules and the
    stream limit (no attached streams, no split)?"""
    constraints = solver_constraints(graph, rules)
    usable = limits_of(graph).model_streams
    for streams in partitions(dag.size):
        chains: dict[int, list[int]] = {}
        for v, s in enumerate(streams):
            chains.setdefault(s, []).append(v)
        if len(chains) <= usable and all(dag.reaches(u, v) for chain in chains.values()
               for u, v in itertools.pairwise(chain)) \
                and not breaks(graph, dag, constraints, streams):
            return True
    return False


def test_every_conflict_is_a_proof_on_tiny_graphs(tmp_path: Path) -> None:
    """On 150 random tiny graphs under GE's rules: wherever a conflict is found, no plan of
    chains holds the rules and the stream limit (every partition of the streamed nodes
    tried). Most graphs with no
    such plan are found (the check is a sufficient condition, not an exact one)."""
    rng = random.Random(7)
    found = infeasible = 0
    for k in range(150):
        graph = _random_graph(tmp_path, rng, k)
        rules = default_rule_set(graph)
        dag = task_dag(graph, allocate_ge(graph, rules))
        conflict = full_concurrency_conflict(graph, dag, solver_constraints(graph, rules))
        exists = _chain_plan_exists(graph, dag, rules)
        assert not (conflict and exists), (k, conflict)
        found += conflict is not None
        infeasible += not exists
    assert found >= 25 and found >= 0.95 * infeasible, (found, infeasible)


@pytest.mark.filterwarnings("ignore::streamalloc.errors.InputWarning")  # ge mode's one stream
def test_a_one_stream_rule_over_unordered_nodes_is_named(tmp_path: Path) -> None:
    """A same-stream rule over two parallel branches: no chain holds both."""
    graph = graph_of(tmp_path, "fork", [
        "{name: x, type: Data}", "{name: a, type: Relu, inputs: [x]}",
        "{name: b, type: Relu, inputs: [x]}", "{name: c, type: Relu, inputs: [a]}",
        "{name: out, type: NetOutput, inputs: [b, c]}"])
    rules_file = tmp_path / "together.yaml"
    rules_file.write_text("format: streamalloc.rules/v1\nname: together\nextends: free\n"
                          "rules:\n  - {name: together, kind: same-stream, "
                          "match: {name: '^(a|b|c)$'}}\n")
    rules = load_rules(rules_file)
    plan, report = allocate_optimal(graph, rules, OptimalOptions(concurrency="full"))
    assert report.status == "FALLBACK" and report.deterministic_time == 0.0
    assert report.reason == ("no plan under --concurrency full holds the rules and the "
                             "device limits (proven before any search): rule 'together' "
                             "keeps 'a' and 'b', which no path orders, on one stream")
    assert full_concurrency_conflict(graph, task_dag(graph, allocate_ge(graph, rules)), []) \
        is None
    assert plan.event_count == report.baseline_events


def test_bert_under_ges_rules_is_answered_at_once() -> None:
    """BERT base under GE's rules: AI Core may open one stream, and a layer's query, key and
    value projections (and one more node) need four, of which the other engines' nodes can
    open one. CP-SAT ran out of its 10 s without a plan or a proof (UNKNOWN) and said a longer
    limit might find one; now the rule is named, without a search."""
    graph = api.read_graph(DATA / "onnx" / "bert_base.onnx")
    _, report = allocate_optimal(graph, None, OptimalOptions(concurrency="full",
                                                             time_limit=10.0))
    assert report.status == "FALLBACK" and report.deterministic_time == 0.0
    assert "rule 'assign-by-dependency' lets engine AIcoreEngine open at most 1 stream" \
        in report.reason
    assert "need 4 streams, of which other nodes can open at most 1" in report.reason
    assert report.nimble_min_events == 50 and report.events_bound is None


def test_a_cap_no_depth_shows_is_counted_by_a_flow() -> None:
    """Llama tiny under GE's rules and the parallel options (4 AI Core streams): no depth
    holds more AI Core nodes than the cap and the other nodes can open, but every AI Core node
    other than a stream's opener follows a node that reaches it, and at most 125 of its 131
    can, each after a node of its own. CP-SAT found no plan in 60 s (UNKNOWN) and said a
    longer limit might."""
    graph = api.read_graph(DATA / "onnx" / "llama_tiny.onnx", PARALLEL)
    dag = task_dag(graph, allocate_ge(graph, default_rule_set(graph)))
    found = full_concurrency_conflict(graph, dag, solver_constraints(graph, None))
    assert found is not None
    assert "lets engine AIcoreEngine open at most 4 streams in graph 'main_graph', and its 131 " \
        "nodes open 6 at least" in found and "at most 125 of them can" in found


def test_caps_that_only_together_leave_too_few_streams(tmp_path: Path) -> None:
    """One AI Core stream and two AI CPU streams: n0 (AI CPU) can open the stream of one of
    two unordered AI Core nodes, and the AI CPU nodes n2 and n3 need two more: each cap alone
    holds, together they need 4 followers where 3 nodes can go before them."""
    branches = [("n1", "AIcoreEngine"), ("n2", "DNN_VM_AICPU_ASCEND"),
                ("n3", "DNN_VM_AICPU_ASCEND"), ("n6", "AIcoreEngine")]
    nodes = ["{name: x, type: Data}",
             "{name: n0, type: Add, engine: DNN_VM_AICPU_ASCEND, inputs: [x]}",
             *(f"{{name: {n}, type: Add, engine: {e}, inputs: [n0]}}" for n, e in branches),
             "{name: out, type: NetOutput, inputs: [n1, n2, n3, n6]}"]
    graph = graph_of(tmp_path, "caps", nodes).with_options(
        {"ge.streamMaxParallelNum": "AIcoreEngine:1,DNN_VM_AICPU_ASCEND:2"})
    rules = default_rule_set(graph)
    dag = task_dag(graph, allocate_ge(graph, rules))
    constraints = solver_constraints(graph, rules)
    assert not _chain_plan_exists(graph, dag, rules)
    for cap in constraints:  # each cap alone
        assert full_concurrency_conflict(graph, dag, [cap]) is None
    found = full_concurrency_conflict(graph, dag, constraints)
    assert found == (
        "rule 'assign-by-dependency' lets engines open streams in graph 'caps', "
        "DNN_VM_AICPU_ASCEND at most 2 and AIcoreEngine at most 1; on a stream whose nodes "
        "are ordered, each node of theirs but the stream's opener follows a node of the graph "
        "that reaches it, so 2 of them must, and at most 1 can, each after a node of its own "
        "(a maximum flow)")


@pytest.mark.parametrize("caps, conflict", [("AIcoreEngine:1", True),
                                            ("AIcoreEngine:2", False)])
def test_the_engine_cap_decides(caps: str, conflict: bool) -> None:
    """The example training step's two convolutions run side by side: one AI Core stream
    cannot hold both under full concurrency, two can."""
    graph = api.read_graph(TRAIN_STEP, {"ge.streamMaxParallelNum": caps})
    dag = task_dag(graph, allocate_ge(graph, default_rule_set(graph)))
    found = full_concurrency_conflict(graph, dag, solver_constraints(graph, None))
    assert (found is not None) == conflict
    assert found is None or "its nodes 'conv1', 'conv2', which no path orders, need 2 " \
        "streams" in found
    assert full_concurrency_conflict(graph, dag, solver_constraints(
        graph, builtin_rules("free"))) is None


def test_nimbles_chains_within_ges_rules_at_the_bounds_are_the_plan() -> None:
    """BERT base under GE's rules and the parallel options: Nimble's chains hold the rules
    with Nimble's minimum of 50 events on 4 streams, and 4 nodes of one depth need 4. CP-SAT
    found the same events and streams and ran out its 10 s without a proof (FEASIBLE, 8.4 s
    of wall time); the plan is now known optimal before any search."""
    graph = api.read_graph(DATA / "onnx" / "bert_base.onnx", PARALLEL)
    plan, report = allocate_optimal(graph, None, OptimalOptions(concurrency="full"))
    assert (report.status, report.phase, report.deterministic_time) == \
        ("OPTIMAL", "matching+rules", 0.0)
    assert plan.event_count == report.nimble_min_events == report.events_bound == 50
    assert plan.allocation.main_stream_num == 4
    dag = task_dag(graph, allocate_ge(graph, default_rule_set(graph)))
    assert len(widest_level(dag)) == 4
    document = plan.to_json()
    assert verify_plan(graph, document, rules=default_rule_set(graph)).exit_code == 0


def test_a_stream_label_on_bert_keeps_nimbles_minimum(tmp_path: Path) -> None:
    """A user's stream label on every attention block's Softmax and MatMul_1 (12 layers, one
    label) under GE's rules and the parallel options: the label's nodes are joined on one
    chain before the rest is covered, which keeps Nimble's minimum, 50 events, proven before
    any search. Nimble's chains with the label apart needed 73 events, FEASIBLE after 13 s."""
    rules_file = tmp_path / "softmax_label.yaml"
    rules_file.write_text(
        "format: streamalloc.rules/v1\nname: softmax-stream\nextends: ge-static-multi-stream\n"
        "rules:\n  - name: softmax-label\n    kind: stream-label\n    priority: 30\n"
        "    match: {name: \"attention/self/(Softmax|MatMul_1)$\"}\n"
        "    options: {label: attn}\n", encoding="utf-8")
    rules = load_rules(rules_file)
    graph = api.read_graph(DATA / "onnx" / "bert_base.onnx", PARALLEL)
    plan, report = allocate_optimal(graph, rules, OptimalOptions(concurrency="full"))
    assert (report.status, report.phase) == ("OPTIMAL", "matching+rules")
    assert plan.event_count == report.nimble_min_events == 50
    labelled = {plan.allocation.stream(f"/encoder/layer.{k}/attention/self/{op}")
                for k in range(12) for op in ("Softmax", "MatMul_1")}
    assert len(labelled) == 1
    assert verify_plan(graph, plan.to_json(), rules=rules).exit_code == 0
