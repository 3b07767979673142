"""The optimal mode: CP-SAT over the same rules, never worse than its GE baseline.

Tested by invariants and objective (style principle 9), not by one optimal assignment: small
cases proven OPTIMAL, Nimble's identity under full concurrency (the matching computed here with
networkx, independently of the solver), never worse than the baseline on random graphs, every
plan verified and byte-identical across runs.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import onnx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from test_heuristic_properties import build, models

from streamalloc.allocation import allocation_text
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.json_text import _plain
from streamalloc.optimal import OptimalOptions, allocate_optimal, at_bounds, nimble
from streamalloc.optimal.driver import _baseline, solver_constraints
from streamalloc.optimal.evaluate import assignment_of, breaks, task_dag
from streamalloc.optimal.model_input import (
    _groups_apart,
    full_start,
    main_stream_limit,
    task_durations,
)
from streamalloc.optimal.repair import within_rules
from streamalloc.rules import builtin_rules, default_rule_set
from streamalloc.rules.constraints import SameStream
from streamalloc.runtime_emu.cost_table import default_cost_table
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.sync.result import PLAIN_SECTIONS
from streamalloc.verify import verify_plan

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "graphs"
GOLDENS = Path(__file__).parent / "goldens" / "optimal"
UNLIMITED = {"streamalloc.unlimited_stream_depth": "true"}
FREE = builtin_rules("free")

DIAMONDS = """
format: streamalloc.graph/v1
name: diamonds
nodes:
  - {name: d, type: Data}
  - {name: a, type: Relu, inputs: [d]}
  - {name: b, type: Relu, inputs: [a]}
  - {name: c, type: Relu, inputs: [a]}
  - {name: e, type: Add, inputs: [b, c]}
  - {name: f, type: Relu, inputs: [e]}
  - {name: g, type: Relu, inputs: [e]}
  - {name: h, type: Relu, inputs: [e]}
  - {name: out, type: NetOutput, inputs: [f, g, h]}
"""


def graph_of(tmp_path: Path, text: str, options: dict[str, str] | None = None) -> Graph:
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    return load_graph(path).with_options(options or {})


def nimble_reference(graph: Graph, plan: dict[str, object]) -> int:
    """|E_TR| - |maximum matching on E_TR| of the streamed nodes' DAG, with networkx."""
    nodes = plan["nodes"]
    assert isinstance(nodes, dict)
    streamed = {n for n, e in nodes.items() if e["physical_stream"] >= 0}
    dag = nx.DiGraph()
    dag.add_nodes_from(streamed)
    for node in graph.all_nodes():
        for src in [*(i.src for i in node.data_sources()), *node.control_inputs]:
            if src in streamed and node.name in streamed:
                dag.add_edge(src, node.name)
    reduction = nx.transitive_reduction(dag)
    bipartite = nx.Graph()
    top = {("out", u) for u in reduction.nodes}
    bipartite.add_nodes_from(top)
    bipartite.add_edges_from((("out", u), ("in", v)) for u, v in reduction.edges)
    matching = nx.bipartite.maximum_matching(bipartite, top_nodes=top)
    return reduction.number_of_edges() - len(matching) // 2


def optimal(graph: Graph, rules: object = None, **settings: object) -> tuple[dict, dict]:
    options = OptimalOptions(**{"time_limit": 2.0, **settings})  # type: ignore[arg-type]
    plan, report = allocate_optimal(graph, rules, options)  # type: ignore[arg-type]
    document = plan.to_json()
    # with the rules the plan was made under (GE's when none are given)
    assert verify_plan(graph, document, rules=rules or default_rule_set(graph)).exit_code == 0
    assert all(_plain(document[key]) for key in PLAIN_SECTIONS)  # written unchecked
    return document, report.to_json()


def test_full_concurrency_on_diamonds_is_nimbles_minimum(tmp_path: Path) -> None:
    graph = graph_of(tmp_path, DIAMONDS, UNLIMITED)
    plan, solver = optimal(graph, FREE, concurrency="full")
    # reduction edges a-b, a-c, b-e, c-e, e-f, e-g, e-h, f-out, g-out, h-out (10); a
    # maximum matching takes 4 of them (a-b, b-e, e-f, f-out): 6 events
    assert solver["status"] == "OPTIMAL" and solver["nimble_min_events"] == 6
    assert plan["event_count"] == 6 == nimble_reference(graph, plan)


def test_cp_sat_proves_small_cases_optimal(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """GE's rules with a cap of 3 AI Core streams, the diamonds' width: Nimble's chains hold
    them, with Nimble's minimum on 3 streams, as many as the most nodes of one depth, so they
    are the plan without a search (free rules get them too). Without that shortcut CP-SAT's
    model proves the same optimum."""
    graph = graph_of(tmp_path, DIAMONDS, {"streamalloc.max_task_per_stream": "4096",
                                          "ge.streamMaxParallelNum": "AIcoreEngine:3"})
    plan, solver = optimal(graph, None, concurrency="full")
    assert solver["status"] == "OPTIMAL" and solver["phase"] == "matching+rules"
    assert solver["deterministic_time"] == 0.0 and solver["objective"] is None
    assert plan["logical_stream_count"] == 3
    assert plan["event_count"] == solver["nimble_min_events"] == 6
    monkeypatch.setattr(at_bounds, "_full_unsearched", lambda *_, **__: None)
    plan, solver = optimal(graph, None, concurrency="full")
    assert solver["status"] == "OPTIMAL" and solver["phase"] == "cp-sat"
    assert plan["logical_stream_count"] == 3
    assert solver["objective"] == solver["bound"] and solver["gap"] == 0.0
    assert plan["event_count"] == solver["nimble_min_events"] == 6


@pytest.mark.parametrize("size", [30, 120, 300])
def test_nimble_identity_on_layered_graphs(size: int) -> None:
    graph = layered_graph(size, seed=size, label_every=0).with_options(UNLIMITED)
    plan, solver = optimal(graph, FREE, concurrency="full")
    assert plan["event_count"] + plan["notify_count"] == solver["nimble_min_events"] \
        == nimble_reference(graph, plan)


def _full_concurrency_streams(graph: Graph, plan: dict) -> list[list[str]]:
    """The plan's streams, each checked to be a chain: full concurrency puts only nodes one
    of which reaches the other on a stream."""
    dag = nx.DiGraph((src, node.name) for node in graph.all_nodes()
                     for src in [*(i.src for i in node.data_sources()), *node.control_inputs])
    streams: dict[int, list[str]] = {}
    for name, entry in plan["nodes"].items():
        if entry["stream"] >= 0:
            streams.setdefault(entry["stream"], []).append(name)
    for members in streams.values():
        assert all(nx.has_path(dag, a, b) or nx.has_path(dag, b, a)
                   for a, b in itertools.combinations(members, 2))
    return list(streams.values())


@pytest.mark.parametrize("size", [60, 300])
def test_full_concurrency_under_the_task_capacity_where_no_stream_splits(size: int) -> None:
    """Under the task capacity (the default), Nimble's chains on the fewest streams are the
    plan where none of them splits, without CP-SAT. Before, the model decided from ge mode's
    streams, which put unordered nodes on one stream: at a short limit the 300-node graph got
    8 events (its minimum is 170), the 60-node one 35 (34)."""
    graph = layered_graph(size, seed=size, label_every=0)
    plan, solver = optimal(graph, FREE, concurrency="full", time_limit=0.05)
    assert solver["phase"] == "matching" and solver["status"] == "OPTIMAL"
    assert plan["event_count"] == solver["nimble_min_events"] == nimble_reference(graph, plan)
    assert len(_full_concurrency_streams(graph, plan)) == plan["physical_stream_count"]


def test_full_concurrency_where_a_stream_splits_goes_to_the_model() -> None:
    """A capacity of 64 task units splits Nimble's chains: CP-SAT places the graph, from
    them, and its plan still keeps unordered nodes apart."""
    graph = layered_graph(60, seed=60, label_every=0).with_options(
        {"streamalloc.max_task_per_stream": "64"})
    plan, solver = optimal(graph, FREE, concurrency="full", time_limit=0.5)
    assert solver["phase"] == "cp-sat"
    assert plan["event_count"] > solver["nimble_min_events"]
    _full_concurrency_streams(graph, plan)


def test_full_concurrency_under_ges_rules_starts_from_nimbles_chains_within_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """GE's rules under the parallel options (engine caps, HCCL and AI CPU streams): Nimble's
    chains brought within the rules split by task capacity (318 events); cut where a cut adds
    no event, they are the plan at once with Nimble's minimum, 316, on 7 streams within the
    caps. Without the cut, CP-SAT starts from those chains and keeps them: from ge mode's
    streams, which put unordered nodes on one stream, it found nothing at this limit, and ge
    mode's plan was a fallback."""
    graph = layered_graph(450, branches=5, seed=9130, hccl_every=50, aicpu_every=7,
                          label_every=0).with_options(
        {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
         "ge.hcomParallel": "1"})
    plan, solver = optimal(graph, None, concurrency="full", time_limit=0.2)
    assert (solver["status"], solver["phase"]) == ("FEASIBLE", "matching+rules+cut")
    assert plan["event_count"] == solver["nimble_min_events"] == 316
    assert plan["logical_stream_count"] == plan["physical_stream_count"] == 7
    _full_concurrency_streams(graph, plan)
    monkeypatch.setattr(at_bounds, "cut_within", lambda *_, **__: None)
    plan, solver = optimal(graph, None, concurrency="full", time_limit=0.2)
    assert solver["status"] == "FEASIBLE" and solver["phase"] == "cp-sat"
    assert plan["event_count"] == 318
    _full_concurrency_streams(graph, plan)


def test_full_concurrency_start_joins_label_groups_on_chains() -> None:
    """Stream labels (`same-stream` groups) under full concurrency: the repair puts a group
    on its first member's stream, among nodes it is not ordered with, so Nimble's chains have
    no start within the rules. Of the starts that do, the cover with each group joined on
    a chain first has Nimble's minimum, 50 events, where the groups on streams of their own
    need 68: the plan, proven optimal before any search; it verifies."""
    graph = layered_graph(100, label_every=7).with_options(
        {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
         "ge.hcomParallel": "1"})
    costs = default_cost_table()
    baseline, _ = _baseline(graph, default_rule_set(graph), OptimalOptions(), costs)
    dag = task_dag(graph, baseline.allocation)
    constraints = solver_constraints(graph, None)
    chains, _ = nimble.fewest_streams(dag)
    durations = task_durations(graph, dag, costs)
    repaired = within_rules(graph, dag, chains, constraints, durations)
    assert repaired is not None and nimble.unordered_neighbours(dag, repaired) is not None
    index = {name: v for v, name in enumerate(dag.names)}
    groups = [tuple(sorted(index[n] for n in c.nodes if n in index))
              for c in constraints if isinstance(c, SameStream)]
    assert len(groups) == 3
    apart = within_rules(graph, dag, _groups_apart(chains, groups), constraints, durations)
    assert apart is not None and nimble.chain_events(dag, apart) == 68
    start = full_start(graph, dag, chains, constraints, durations=durations,
                       stream_limit=main_stream_limit(graph, baseline))
    assert start is not None and nimble.unordered_neighbours(dag, start) is None
    assert not breaks(graph, dag, constraints, assignment_of(dag, start))
    assert nimble.chain_events(dag, start) == nimble.chain_events(dag, chains) == 50
    plan, solver = optimal(graph, None, concurrency="full", time_limit=1.0)
    assert (solver["status"], solver["phase"]) == ("OPTIMAL", "matching+rules")
    assert plan["event_count"] == solver["nimble_min_events"] == 50
    _full_concurrency_streams(graph, plan)


def test_the_makespan_objective_under_full_concurrency_searches_within_chains() -> None:
    """Nimble's chains run 325.8 us; the critical-chain search, every move keeping each
    stream a chain, takes Inception v1 to 316.1 us with the same 54 events (it used to write
    Nimble's chains as they were)."""
    graph = load_graph(LIGHT / "light_inception_v1.onnx").with_options(UNLIMITED)
    plan, solver = optimal(graph, FREE, objective="makespan", concurrency="full",
                           time_limit=10.0)
    assert solver["phase"].startswith("matching+critical")
    assert solver["makespan_us"] < 320.0 and plan["event_count"] == 54
    _full_concurrency_streams(graph, plan)


@pytest.mark.parametrize("model", ["light_squeezenet", "light_bvlc_alexnet", "light_resnet50"])
def test_nimble_identity_on_real_models(model: str) -> None:
    graph = load_graph(LIGHT / f"{model}.onnx").with_options(UNLIMITED)
    plan, solver = optimal(graph, FREE, concurrency="full")
    assert plan["event_count"] == solver["nimble_min_events"] == nimble_reference(graph, plan)


def test_events_objective_merges_what_ge_keeps_apart() -> None:
    graph = load_graph(EXAMPLES / "train_step.yaml")
    plan, solver = optimal(graph, FREE)
    assert solver["baseline_events"] == 7
    assert plan["event_count"] < solver["baseline_events"]
    assert solver["makespan_us"] <= solver["baseline_makespan_us"]
    assert plan["mode"] == "optimal" and solver["status"] in ("OPTIMAL", "FEASIBLE")


@pytest.mark.parametrize("nodes", [200, 400])  # 400: CP-SAT solves in rounds
def test_the_plan_is_byte_identical_across_runs(nodes: int) -> None:
    graph = layered_graph(nodes, seed=7, label_every=7)
    first = json.dumps(optimal(graph, None, workers=2, time_limit=1.0), sort_keys=True)
    assert json.dumps(optimal(graph, None, workers=2, time_limit=1.0), sort_keys=True) == first


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=models("multi"))
@pytest.mark.parametrize("objective", ["events", "makespan"])
def test_never_worse_than_the_baseline(objective: str, spec: object) -> None:
    graph = build(spec)  # type: ignore[arg-type]
    plan, solver = optimal(graph, None, time_limit=0.5, objective=objective)
    assert plan["event_count"] + plan["notify_count"] <= solver["baseline_events"]
    assert solver["makespan_us"] <= solver["baseline_makespan_us"] + 1e-6
    assert solver["status"] in ("OPTIMAL", "FEASIBLE", "FALLBACK")


def control_flow_graph(seed: int) -> dict[str, object]:
    """A random graph of compute nodes, AllReduces, and While and If nodes whose subgraphs hold
    small random DAGs: what the layered and partitioned models leave out."""
    rng = random.Random(seed)
    ops = ["Relu", "Add", "Conv2D", "MatMul", "Cast", "ReduceMean", "NonZero"]

    def body(prefix: str, size: int) -> dict[str, object]:
        nodes: list[dict[str, object]] = [{"name": f"{prefix}_in", "type": "Data",
                                           "attrs": {"_parent_node_index": 0}}]
        for k in range(size):
            srcs = rng.sample([str(n["name"]) for n in nodes], min(len(nodes), 2))
            nodes.append({"name": f"{prefix}_{k}", "type": rng.choice(ops), "inputs": srcs})
        nodes.append({"name": f"{prefix}_out", "type": "NetOutput",
                      "inputs": [nodes[-1]["name"]]})
        return {"nodes": nodes}

    nodes: list[dict[str, object]] = [{"name": "x", "type": "Data"}]
    subgraphs: dict[str, object] = {}
    for k in range(rng.randint(12, 30)):
        names = [str(n["name"]) for n in nodes]
        if k % 5 == 2:  # a loop, then a branch, in turn
            first, second = ("cond", "body") if k % 10 == 2 else ("then_branch", "else_branch")
            subgraphs[f"a{k}"], subgraphs[f"b{k}"] = body(f"a{k}", 2), body(f"b{k}", 5)
            nodes.append({"name": f"c{k}", "type": "While" if first == "cond" else "If",
                          "inputs": rng.sample(names, 1 if first == "cond" else 2)
                          if len(names) > 1 else names,
                          "subgraphs": {first: f"a{k}", second: f"b{k}"}})
        else:
            kind = "HcomAllReduce" if rng.random() < 0.15 else rng.choice(ops)
            nodes.append({"name": f"n{k}", "type": kind,
                          "inputs": rng.sample(names, min(len(names), rng.randint(1, 3)))})
    nodes.append({"name": "out", "type": "NetOutput", "inputs": [nodes[-1]["name"]]})
    return {"format": "streamalloc.graph/v1", "name": f"cf{seed}",
            "options": {"ge.hcomParallel": "1"}, "nodes": nodes, "subgraphs": subgraphs}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("objective", ["events", "makespan"])
def test_control_flow_graphs_verify_emulate_and_are_never_worse(tmp_path: Path, seed: int,
                                                                 objective: str) -> None:
    """While and If subgraphs (activated streams, no events bound): the plan verifies (in
    `optimal`), runs to the end on the emulator, and is never worse than ge mode's."""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(seed), sort_keys=False), encoding="utf-8")
    graph = load_graph(path)
    plan, solver = optimal(graph, None, time_limit=0.3, objective=objective)
    assert emulate(graph, plan).status == "ok"
    assert plan["event_count"] + plan["notify_count"] <= solver["baseline_events"] \
        or objective == "makespan"
    assert solver["makespan_us"] <= solver["baseline_makespan_us"] + 1e-6


GOLDEN_CASES = {
    "diamonds-full": (DIAMONDS, {"concurrency": "full"}, UNLIMITED),
    "diamonds-full-capacity": (DIAMONDS, {"concurrency": "full"},
                               {"streamalloc.max_task_per_stream": "4096"}),
    "train-step-events": ((EXAMPLES / "train_step.yaml").read_text(encoding="utf-8"), {}, {}),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_optimal_goldens(case: str, tmp_path: Path, golden: Callable[[Path, str], None]) -> None:
    """Small cases the solver proves OPTIMAL: the allocation text and the plan's counts."""
    text, settings, options = GOLDEN_CASES[case]
    graph = graph_of(tmp_path, text, options)
    plan, solver = optimal(graph, FREE, **settings)
    assert solver["status"] == "OPTIMAL"
    allocation, _ = allocate_optimal(graph, FREE, OptimalOptions(time_limit=2.0, **settings))
    summary = {k: plan[k] for k in ("logical_stream_count", "physical_stream_count",
                                    "event_count", "notify_count", "events", "streams")}
    summary["solver"] = {k: solver[k] for k in ("status", "objective", "bound", "events_final",
                                                "events_bound", "nimble_min_events", "phase")}
    golden(GOLDENS / f"{case}.expected", allocation_text(allocation.allocation) + "\n"
           + json.dumps(summary, indent=1, sort_keys=True) + "\n")


def test_a_graph_beyond_the_solver_keeps_the_baseline_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from streamalloc.optimal import driver
    graph = layered_graph(60)
    monkeypatch.setattr(driver, "MAX_SOLVER_NODES", 20)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=1))
    assert report.status == "FALLBACK"
    assert "streamed nodes, over the solver's 20" in report.reason
    assert report.events_final == report.baseline_events
    verify_plan(graph, plan.to_json()).raise_for_failure()


ACTIVATED = """
format: streamalloc.graph/v1
name: act_once
nodes:
  - {name: data, type: Data}
  - {name: m, type: Relu, inputs: [data]}
  - {name: act, type: StreamActive, control_inputs: [m], attrs: {_active_label_list: [lab]}}
  - {name: s, type: Relu, inputs: [m], control_inputs: [act], attrs: {_stream_label: lab}}
  - {name: out, type: NetOutput, inputs: [s]}
"""


@pytest.mark.parametrize(("rules", "objective"), [(None, "events"), (FREE, "makespan")])
def test_a_stream_its_activator_waits_for_is_never_chosen(
        tmp_path: Path, rules: object, objective: str) -> None:
    """Found by a fuzz run: StreamActive act starts the stream of label lab, after m. A
    search that put m on s's stream made act wait for a stream it starts, and the emulated
    run, which stops there, looked short; the driver's check then rejected the plan (exit
    5). Such runs now count as infeasible, so the plan written verifies and runs."""
    graph = graph_of(tmp_path, ACTIVATED)
    plan, report = allocate_optimal(graph, rules,  # type: ignore[arg-type]
                                    OptimalOptions(objective=objective, time_limit=0.3))
    document = plan.to_json()
    assert verify_plan(graph, document).ok
    assert emulate(graph, document).status == "ok"
    streams = {n: document["nodes"][n]["stream"] for n in ("m", "act", "s")}
    assert streams["m"] != streams["s"] != streams["act"]
    assert report.status in {"OPTIMAL", "FEASIBLE"}
