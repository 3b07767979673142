"""Starting points brought within the rules (`optimal/repair.py`).

* A start that opens more AI Core streams than `ge.streamMaxParallelNum` allows comes out with
  streams merged so the cap holds, every node still on a stream, each stream in T-order; a
  start within the caps comes out as it went in; one with too many streams is not repaired.
* A start that breaks a rule file's form (same stream, dedicated stream, different streams,
  disjoint groups) comes out with nodes moved so it holds.
* The merge kept is the one with the shortest schedule estimate: a long branch keeps its own
  stream, the short ones join each other.
* A start over the device's stream limit (ge mode's own streams included) comes out with
  streams merged, the same way, until the limit holds; None where a rule forbids the merges.
  A stream joins one of another graph there (a cap counts per graph, the limit does not),
  and where the least loaded stream can join none, the next one moves.
* Under GE's rules the makespan objective starts from such repaired starts: on the ResNet-50
  training step the plan runs far faster than from the starts that hold the rules as they are,
  and verifies with the rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from node_graphs import graph_of
from real_models import LIGHT
from test_optimal import control_flow_graph

from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.training import training_step
from streamalloc.optimal import OptimalOptions, allocate_optimal, makespan_starts, repair
from streamalloc.optimal.driver import solver_constraints
from streamalloc.optimal.evaluate import assignment_of, placement_of, task_dag
from streamalloc.optimal.model_input import hint_chains
from streamalloc.optimal.repair import within_rules, within_stream_limit
from streamalloc.rules import constraints as c
from streamalloc.rules.check import broken
from streamalloc.rules.constraints import Constraint
from streamalloc.solver.dag import TaskDag
from streamalloc.verify import verify_plan

CAP2 = {"ge.streamMaxParallelNum": "AIcoreEngine:2"}
# a fork into four branches, one long (three tasks of 30 us) and three short (5 us each)
FORK = ["{name: x, type: Data}", "{name: p, type: Relu, inputs: [x], cost_us: 5}",
        "{name: l1, type: Relu, inputs: [p], cost_us: 30}",
        "{name: l2, type: Relu, inputs: [l1], cost_us: 30}",
        "{name: l3, type: Relu, inputs: [l2], cost_us: 30}",
        "{name: s1, type: Relu, inputs: [p], cost_us: 5}",
        "{name: s2, type: Relu, inputs: [p], cost_us: 5}",
        "{name: s3, type: Relu, inputs: [p], cost_us: 5}",
        "{name: j, type: AddN, inputs: [l3, s1, s2, s3], cost_us: 5}",
        "{name: out, type: NetOutput, inputs: [j]}"]


@pytest.fixture
def fork(tmp_path: Path) -> Graph:
    return graph_of(tmp_path, "fork", FORK).with_options(CAP2)


def _dag(graph: Graph) -> TaskDag:
    return task_dag(graph, allocate_ge(graph))


def _broken(graph: Graph, dag: TaskDag, chains: tuple[tuple[int, ...], ...],
            constraints: list[Constraint]) -> list[str]:
    return [b.message for b in broken(constraints, graph,
                                      placement_of(dag, assignment_of(dag, chains)))]


def _four_streams(dag: TaskDag) -> tuple[tuple[int, ...], tuple[int, ...],
                                         tuple[tuple[int, ...], ...], list[int]]:
    """The long branch with the fork and the join on one stream (`main`), each short branch
    on its own (`short`): the 4 streams, and the durations of the fork's tasks."""
    at = {n: v for v, n in enumerate(dag.names)}
    short = (at["s1"], at["s2"], at["s3"])
    main = tuple(v for v in range(dag.size) if v not in short)
    durations = [30 if n.startswith("l") else 5 for n in dag.names]
    return main, short, (main, *((v,) for v in short)), durations


def test_a_start_over_the_cap_is_merged_within_it(fork: Graph) -> None:
    dag = _dag(fork)
    main, short, chains, durations = _four_streams(dag)  # 4 opened by AI Core nodes
    constraints = solver_constraints(fork, None)
    assert _broken(fork, dag, chains, constraints)
    capped = within_rules(fork, dag, chains, constraints, durations)
    assert capped is not None and not _broken(fork, dag, capped, constraints)
    assert sorted(v for chain in capped for v in chain) == list(range(dag.size))
    assert all(list(chain) == sorted(chain) for chain in capped)  # T-order
    # the long branch keeps its stream, the short ones share the other
    assert set(capped) == {main, short}
    assert within_rules(fork, dag, capped, constraints, durations) == capped


@pytest.mark.parametrize("form", [
    c.SameStream("r", ("s1", "s2")),
    c.DedicatedStream("r", ("s1", "s2")),
    c.DifferentStreams("r", ("l1",), ("s1", "s2")),
    c.DisjointGroups("r", (("s1",), ("s2", "l1"))),
], ids=lambda form: type(form).__name__)
def test_each_form_of_a_rule_file_moves_nodes_until_it_holds(fork: Graph,
                                                             form: Constraint) -> None:
    """s1 on the long branch's stream, s2 alone: every form above is broken, and repaired."""
    dag = _dag(fork)
    at = {n: v for v, n in enumerate(dag.names)}
    second = (at["s2"],)
    main = tuple(v for v in range(dag.size) if v not in second)
    assert _broken(fork, dag, (main, second), [form])
    repaired = within_rules(fork, dag, (main, second), [form], [1] * dag.size)
    assert repaired is not None and not _broken(fork, dag, repaired, [form])
    assert sorted(v for chain in repaired for v in chain) == list(range(dag.size))


def test_a_start_over_the_stream_limit_is_merged_within_it(fork: Graph) -> None:
    dag = _dag(fork)
    main, short, chains, durations = _four_streams(dag)
    assert within_stream_limit(fork, dag, chains, limit=4, constraints=[],
                               durations=durations) == chains
    limited = within_stream_limit(fork, dag, chains, limit=2, constraints=[],
                                  durations=durations)
    assert limited is not None and set(limited) == {main, short}  # the long branch alone
    (one,) = within_stream_limit(fork, dag, chains, limit=1, constraints=[],
                                 durations=durations) or ((),)
    assert one == tuple(range(dag.size))
    apart: list[Constraint] = [c.DifferentStreams("r", ("l1",), ("s1", "s2", "s3"))]
    assert within_stream_limit(fork, dag, chains, limit=1, constraints=apart,
                               durations=durations) is None


def test_a_stream_that_can_join_none_leaves_the_merge_to_the_next(fork: Graph) -> None:
    """s1 may share a stream with none of the others: its stream, the least loaded (the first
    of three alike), cannot merge, so the next one does (before, the start was given up)."""
    dag = _dag(fork)
    at = {n: v for v, n in enumerate(dag.names)}
    _, _, chains, durations = _four_streams(dag)
    apart: list[Constraint] = [c.DifferentStreams("r", ("s1",), ("l1", "s2", "s3"))]
    constraints = solver_constraints(fork, None) + apart
    capped = within_rules(fork, dag, chains, constraints, durations)
    assert capped is not None and not _broken(fork, dag, capped, constraints)
    assert (at["s1"],) in capped and len(capped) == 2


def test_a_subgraph_stream_joins_a_stream_of_another_graph_within_the_stream_limit(
        tmp_path: Path) -> None:
    """ge mode's streams span subgraphs; on this graph with While and If nodes the least
    loaded of its four is the only stream of an If branch. Within a limit of three it joins
    a stream of another graph (before, only one of its own graph, so the start was given up
    and every start with it)."""
    path = tmp_path / "cf.yaml"
    path.write_text(yaml.safe_dump(control_flow_graph(7), sort_keys=False), encoding="utf-8")
    graph = load_graph(path)
    dag = _dag(graph)
    chains = tuple(tuple(chain) for chain in hint_chains(dag, allocate_ge(graph)))
    assert len(chains) == 4 and any({dag.graphs[v] for v in chain} == {"b7"}
                                    for chain in chains)
    limited = within_stream_limit(graph, dag, chains, limit=3, constraints=[],
                                  durations=[1] * dag.size)
    assert limited is not None and len(limited) == 3
    assert sorted(v for chain in limited for v in chain) == list(range(dag.size))
    assert all(list(chain) == sorted(chain) for chain in limited)  # T-order


def test_a_start_of_too_many_streams_is_left_as_it_is(fork: Graph,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    dag = _dag(fork)
    many = tuple((v,) for v in range(dag.size))
    constraints = solver_constraints(fork, None)
    assert within_rules(fork, dag, many, constraints, [1] * dag.size) is not None
    monkeypatch.setattr(repair, "MAX_STREAMS", len(many) - 1)
    assert within_rules(fork, dag, many, constraints, [1] * dag.size) is None


def test_the_makespan_objective_under_ge_rules_starts_within_the_caps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ResNet-50 training step under GE's rules and options (one stream opened by AI Core
    nodes): ge mode runs 10386 us; at --time-limit 0.5 the search from repaired starts runs
    6532 us, from the starts that hold the rules as they are 6713 us (9817 before the
    engines-aside starts, which hold them)."""
    graph = training_step(load_graph(LIGHT / "light_resnet50.onnx"))
    options = OptimalOptions(objective="makespan", time_limit=0.5)
    plan, report = allocate_optimal(graph, None, options)
    assert verify_plan(graph, plan.to_json()).exit_code == 0  # GE's rules, the caps included
    monkeypatch.setattr(makespan_starts, "within_rules", lambda *_: None)
    _, unrepaired = allocate_optimal(graph, None, options)
    assert report.makespan_us < unrepaired.makespan_us
