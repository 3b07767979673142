"""The example policies under examples/rules/ change the allocation as they promise, and each
rule file's constraints (the solver's view of the same rules) hold on the heuristic's result."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from streamalloc.allocation import Allocation
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.heuristic.rule_check import placement_of
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.rules import default_rule_set, load_rules
from streamalloc.rules.check import broken
from streamalloc.rules.constraints import Constraint, SameStream, rule_constraints

ROOT = Path(__file__).resolve().parents[1] / "examples"
GRAPH = ROOT / "graphs" / "transformer_layers.yaml"


def streams_of(allocation: Allocation) -> dict[int, set[str]]:
    members: dict[int, set[str]] = defaultdict(set)
    for name, node in allocation.nodes.items():
        if node.stream >= 0:
            members[node.stream].add(name)
    return members


def holds(constraint: Constraint, graph: Graph, allocation: Allocation) -> bool:
    return not broken([constraint], graph, placement_of(allocation))


def allocate(graph: Graph, policy: str | None) -> Allocation:
    rules = load_rules(ROOT / "rules" / f"{policy}.yaml") if policy else None
    return allocate_ge(graph, rules)


def test_attention_nodes_share_a_stream_of_their_own() -> None:
    graph = load_graph(GRAPH)
    attn = {n.name for n in graph.all_nodes() if n.name.startswith(("layer0/attn",
                                                                     "layer1/attn"))}
    default = allocate(graph, None)
    assert any(streams_of(default)[default.stream(n)] - attn for n in attn)  # shared before
    policy = allocate(graph, "attention_stream")
    assert {policy.stream(n) for n in attn} == {policy.stream("layer0/attn/q")}
    assert streams_of(policy)[policy.stream("layer0/attn/q")] == attn
    assert policy.nodes["layer1/attn/k"].rule == "assign-by-label"


def test_aicpu_ops_never_share_a_stream_with_aicore_ops() -> None:
    graph = load_graph(GRAPH)

    def mixed(allocation: Allocation) -> list[int]:
        return [s for s, names in streams_of(allocation).items()
                if {graph.node(n).engine for n in names} >= {"AIcoreEngine",
                                                             "DNN_VM_AICPU_ASCEND"}]

    assert mixed(allocate(graph, None))  # GE attaches the masks to the AI Core stream
    policy = allocate(graph, "aicpu_apart_from_aicore")
    assert not mixed(policy)
    assert policy.nodes["layer0/mask"].rule == "aicpu-apart"


def test_every_allreduce_gets_its_own_stream() -> None:
    graph = load_graph(GRAPH)
    reduces = ["layer0/grad", "layer1/grad"]
    default = allocate(graph, None)
    assert any(streams_of(default)[default.stream(r)] != {r} for r in reduces)
    policy = allocate(graph, "allreduce_own_stream")
    assert [streams_of(policy)[policy.stream(r)] for r in reduces] == [{r} for r in reduces]
    assert policy.stream(reduces[0]) != policy.stream(reduces[1])


@pytest.mark.parametrize("policy", ["attention_stream", "aicpu_apart_from_aicore",
                                    "allreduce_own_stream"])
def test_policy_constraints_hold_on_the_heuristic_result(policy: str) -> None:
    graph = load_graph(GRAPH)
    rules = load_rules(ROOT / "rules" / f"{policy}.yaml")
    allocation = allocate_ge(graph, rules)
    own = [c for c in rule_constraints(rules, graph)
           if c.rule in {r.name for r in rules.rules} - {r.name for r in default_rule_set(
               graph).rules}]
    assert own, "the policy states at least one constraint"
    assert all(holds(c, graph, allocation) for c in own)


LABELLED = """
format: streamalloc.graph/v1
name: labelled
nodes:
  - {name: d, type: Data}
  - {name: a1, type: Relu, inputs: [d], attrs: {_stream_label: L}}
  - {name: h1, type: HcomAllReduce, inputs: [a1], attrs: {_stream_label: L}}
  - {name: a2, type: Relu, inputs: [h1], attrs: {_stream_label: L}}
  - {name: h2, type: HcomAllReduce, inputs: [a2], attrs: {_stream_label: L}}
  - {name: h3, type: HcomAllReduce, inputs: [a2], attrs: {_stream_label: L, _parallel_group: g}}
  - {name: out, type: NetOutput, inputs: [h2, h3]}
"""


def test_shipped_rules_state_the_label_constraints(tmp_path: Path) -> None:
    path = tmp_path / "labelled.yaml"
    path.write_text(LABELLED, encoding="utf-8")
    graph = load_graph(path)
    rules = default_rule_set(graph)
    constraints = rule_constraints(rules, graph)
    assert constraints == [SameStream("assign-by-label", ("a1", "a2")),
                           SameStream("independent-stream", ("h1", "h2"))]
    allocation = allocate_ge(graph, rules)
    assert all(holds(c, graph, allocation) for c in constraints)
    assert allocation.stream("a1") != allocation.stream("h1")
