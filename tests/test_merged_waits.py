"""Merged waits (`optimal/merged_waits.py`): a stream that receives two events from one other
stream waits once when the later receiver runs first.

Invariants: the merged order is a topological order of the graph's nodes and the streams stay
as they were; its plan needs fewer events and runs within the limit it was given, or there is
no merged plan; on the Inception v2 training step under the parallel options the events
objective reaches the events bound so (91 -> 90 events before it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from every_plan import ge_evaluator
from real_models import LIGHT

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.training import training_step
from streamalloc.optimal import OptimalOptions, allocate_optimal
from streamalloc.optimal.evaluate import (
    Measured,
    assignment_of,
    chains_of_assignment,
)
from streamalloc.optimal.evaluator import Evaluator
from streamalloc.optimal.found import Found
from streamalloc.optimal.merged_waits import merged
from streamalloc.runtime_emu.cost_table import default_cost_table

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}

# the chain c1..c4 on one stream; a1 (after c1) and a2 (after c3) on another, a1 first: each
# waits for its producer, two events into the second stream, and one back to `out`
TWO_WAITS = """\
format: streamalloc.graph/v1
name: two_waits
nodes:
  - {name: x, type: Data}
  - {name: c1, type: Relu, inputs: [x], cost_us: 10}
  - {name: a1, type: Relu, inputs: [c1], cost_us: 10}
  - {name: c2, type: Relu, inputs: [c1], cost_us: 10}
  - {name: c3, type: Relu, inputs: [c2], cost_us: 10}
  - {name: a2, type: Relu, inputs: [c3], cost_us: 10}
  - {name: c4, type: Relu, inputs: [c3], cost_us: 10}
  - {name: j, type: AddN, inputs: [c4, a1, a2], cost_us: 10}
  - {name: out, type: NetOutput, inputs: [j]}
"""


@pytest.fixture()
def two_waits(tmp_path: Path) -> Graph:
    path = tmp_path / "two_waits.yaml"
    path.write_text(TWO_WAITS, encoding="utf-8")
    return load_graph(path)


def _evaluator(graph: Graph) -> Evaluator:
    return ge_evaluator(graph, OptimalOptions(makespan_slack=100.0), default_cost_table())


def _aside(evaluator: Evaluator) -> Found:
    """a1 and a2 on stream 1, every other node on stream 0, in the graph's order."""
    names = evaluator.dag.names
    return chains_of_assignment([int(n in ("a1", "a2")) for n in names]), None


def test_the_later_receiver_runs_first_and_one_event_goes(two_waits: Graph) -> None:
    evaluator = _evaluator(two_waits)
    measured: dict[Found, Measured | None] = {}
    start = _aside(evaluator)
    before = evaluator.outcome(assignment_of(evaluator.dag, start[0]))
    assert before is not None and before.events == 3  # c1 -> a1, c3 -> a2, a2 -> j
    found = merged(two_waits, evaluator.dag, start, evaluator, measured,
                   within_us=evaluator.limit_us(), most=None)
    assert found is not None
    (chains, order), outcome = found
    assert chains == start[0]
    assert order is not None and order.index("a2") < order.index("a1")
    assert sorted(order) == sorted(two_waits.root.index)
    position = {name: k for k, name in enumerate(order)}
    assert all(position[p] < position[n] for n, preds in evaluator.orders.preds.items()
               for p in preds)  # type: ignore[union-attr]
    assert outcome.events == 2
    assert outcome == evaluator.outcome(assignment_of(evaluator.dag, chains), order)
    assert outcome.makespan_us <= evaluator.limit_us()


def test_no_merge_beyond_the_makespan_limit(two_waits: Graph) -> None:
    evaluator = _evaluator(two_waits)
    start = _aside(evaluator)
    before = evaluator.outcome(assignment_of(evaluator.dag, start[0]))
    assert before is not None
    tight = before.makespan_us  # a1 waiting for c3 ends later than it does now
    assert merged(two_waits, evaluator.dag, start, evaluator, {}, within_us=tight,
                  most=None) is None


def test_the_inception_v2_training_step_reaches_its_events_bound() -> None:
    graph = training_step(load_graph(LIGHT / "light_inception_v2.onnx")).with_options(PARALLEL)
    plan, report = allocate_optimal(graph, None, OptimalOptions(time_limit=2.0))
    assert report.status == "OPTIMAL" and "+merged" in (report.phase or "")
    assert plan.event_count + plan.notify_count == report.events_bound == 90
