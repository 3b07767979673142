"""The searches' probe: the emulated plan of a stream assignment, and how many
such runs fit in a share of --time-limit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from streamalloc.allocation import Allocation
from streamalloc.errors import AllocationInfeasible
from streamalloc.ir.graph import Graph
from streamalloc.optimal.evaluate import (
    Measured,
    Outcome,
    assignment_of,
    chains_of_assignment,
    optimal_allocation,
)
from streamalloc.optimal.found import Found
from streamalloc.optimal.numbering import Numbering, by_first_node
from streamalloc.optimal.options import TIME_SCALE, OptimalOptions, makespan_limit_us
from streamalloc.optimal.order import Order, Orders
from streamalloc.rules import FREE, RuleSet
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.node_tasks import NodeTask, graph_node_tasks
from streamalloc.runtime_emu.plan import SYNC_TYPES, Plan, PlanEvent
from streamalloc.runtime_emu.plan import SyncNode as EmulatedSyncNode
from streamalloc.runtime_emu.results import EmulationResult
from streamalloc.solver.dag import TaskDag
from streamalloc.sync.driver import synchronize
from streamalloc.sync.limits import without_device_limits
from streamalloc.sync.result import SyncPlan

EVALUATION_US = 860  # wall time of one evaluation of the makespan search (sync, emulate,
TASK_US = 10.4  # the search's own step) plus this per task of its program (Sends and Recvs
STREAM_US = 77  # included) and this per physical stream: the fit (relative error, within 10%
# on each) of the mean evaluation of the 12 inputs of bench/ the search runs long on (2-35 ms
# each, 2-core machine, 2026-12-05; tasks alone missed the ResNet-50 training step's 106
# streams by 30%); the searches' budgets are counts derived from it, not clocks, so their
# plans are deterministic


@dataclass(frozen=True)
class Evaluator:
    """The emulated plan of a stream assignment (makespan in schedule units), its
    streams numbered by `numbering`, synchronized in an execution order (`orders`: the search
    may change it; None: always the graph's T-order)."""

    graph: Graph
    dag: TaskDag
    baseline: Outcome
    options: OptimalOptions
    costs: CostTable
    numbering: Numbering = by_first_node
    orders: Orders | None = None

    @cached_property
    def tasks(self) -> dict[str, NodeTask]:
        """The graph's node tasks, computed once: the plans differ, the tasks do not."""
        return graph_node_tasks(self.graph, self.costs)

    @cached_property
    def lifted(self) -> Graph:
        """The graph without its stream, event and notify limits."""
        return without_device_limits(self.graph)

    def outcome(self, streams: Sequence[int], order: Order | None = None) -> Measured | None:
        """The events and the emulated makespan of the assignment's plan, unverified as the
        searches' runs are (the driver verifies the plan it writes: a candidate's check
        was a fifth of each outcome on the DenseNet-121 training step); None when it is over
        a device limit."""
        result = self.run(streams, order, budgeted=False)
        if result is None:
            return None
        return Measured(result.program.event_count + result.program.notify_count,
                        result.makespan_us)

    def makespan(self, streams: Sequence[int], order: Order | None = None) -> int:
        """Emulated makespan of the unverified run (infinite over the task capacity): the
        polish's probe, as `run` is the search's (the driver verifies the plan it writes).
        The polish only lowers the events and the streams, so the event budget and the
        device's stream, event and notify limits are checked on its result, not here: from a
        start over one it comes within step by step."""
        result = self.run(streams, order, budgeted=False, lifted=True)
        if result is None:
            return math.inf  # type: ignore[return-value]
        return math.ceil(result.makespan_us * TIME_SCALE)

    def run(self, streams: Sequence[int], order: Order | None = None, *,
            budgeted: bool = True, lifted: bool = False) -> EmulationResult | None:
        """The emulated run of an assignment's plan, unverified (the search's probe; None
        over a device limit or, when `budgeted`, over the makespan objective's event
        budget, and for a run that does not finish: a stream activated by a node that waits
        for it deadlocks); `lifted`: with the stream, event and notify limits lifted."""
        budget = self.options.event_budget if budgeted else None
        try:
            plan = self.synchronized(streams, order, lifted=lifted)
            if budget is not None and plan.event_count + plan.notify_count > budget:
                return None
            result = emulate(self.lifted if lifted else self.graph, emulated_form(plan),
                             costs=self.costs, tasks=self.tasks)
        except AllocationInfeasible:
            return None
        return result if result.status == "ok" else None

    def synchronized(self, streams: Sequence[int], order: Order | None = None, *,
                     lifted: bool = False) -> SyncPlan:
        """The assignment's plan, unverified and not emulated (AllocationInfeasible over a
        device limit); `lifted`: with the stream, event and notify limits lifted."""
        graph = self._in_order(order)
        return synchronize(without_device_limits(graph) if lifted else graph,
                           self._allocation(streams), sync=self.options.sync)

    def _allocation(self, streams: Sequence[int]) -> Allocation:
        return optimal_allocation(self.graph, self.baseline.allocation, self.dag,
                                  self.numbering(chains_of_assignment(streams)),
                                  rules=RuleSet(FREE, "static", ()), constraints=[])

    def _in_order(self, order: Order | None) -> Graph:
        """The graph in `order` (None: its own order)."""
        return self.graph if order is None or self.orders is None \
            else self.orders.graph_in(order)

    def limit(self) -> int:
        """The baseline's makespan x (1 + slack), in schedule units rounded down (the
        searches compare run lengths rounded up)."""
        return math.floor(self.limit_us() * TIME_SCALE)

    def limit_us(self) -> float:
        """The baseline's makespan x (1 + slack) in us, as the driver checks the plan."""
        return makespan_limit_us(self.baseline.makespan_us, self.options.makespan_slack)


def emulated_form(plan: SyncPlan) -> Plan:
    """The plan as the emulator reads its document (`plan_from_dict(plan.to_json())`), made
    without the document: a search emulates hundreds of plans, and writing and reading the
    document (its per-node table, which the emulator does not read, the most of it) took a
    twentieth of each run on Inception v2."""
    allocation = plan.allocation
    return Plan(source="<plan>", graph=allocation.graph, mode=allocation.mode,
                streams={s: tuple(tasks) for s, tasks in sorted(plan.streams.items())},
                sync_nodes={n.name: EmulatedSyncNode(n.name, n.type, n.stream,
                                                     n.event if n.type in SYNC_TYPES else None)
                            for n in plan.sync_nodes},
                events=tuple(PlanEvent(e.id, e.kind, e.send, e.recv, e.send_stream,
                                       e.recv_stream) for e in plan.events),
                stream_activations={n: tuple(s) for n, s in sorted(plan.activations.items())},
                physical_stream_count=plan.physical_stream_count,
                attached_stream_count=len(allocation.attached_stream_ids),
                event_count=plan.event_count, notify_count=plan.notify_count,
                logical_stream_count=allocation.main_stream_num)


def measured_outcome(evaluator: Evaluator, measured: dict[Found, Measured | None], found: Found
                     ) -> Measured | None:
    """The outcome of `found`'s plan, run once: from `measured` (the outcomes `evaluator` ran
    before) when there, else run and kept there. The choice after the search meets the plans
    tried before it again, in the same orders."""
    if found not in measured:
        chains, order = found
        measured[found] = evaluator.outcome(assignment_of(evaluator.dag, chains), order)
    return measured[found]


def evaluation_count(evaluator: Evaluator, streams: Sequence[int], seconds: float) -> int:
    """How many evaluations of plans like that of `streams` take about `seconds` of wall time
    (its program's tasks, Sends and Recvs included, and physical streams decide the cost: the
    plan's stream entries and streams, one task per entry; its run is not needed)."""
    try:
        return plan_evaluation_count(evaluator.synchronized(streams), seconds)
    except AllocationInfeasible:
        return evaluations_of(evaluator.dag.size, len(set(streams)), seconds)


def plan_evaluation_count(plan: SyncPlan, seconds: float) -> int:
    """`evaluation_count` of plans like `plan`."""
    tasks = sum(map(len, plan.streams.values()))  # (its Sends and Recvs included)
    return evaluations_of(tasks, plan.physical_stream_count, seconds)


def evaluations_of(tasks: int, physical: int, seconds: float) -> int:
    """How many evaluations of a program of `tasks` tasks on `physical` streams take about
    `seconds` (at least one)."""
    return max(1, int(seconds * 1e6 / (EVALUATION_US + TASK_US * tasks + STREAM_US * physical)))


def lifted_run(evaluator: Evaluator, streams: Sequence[int], order: Order | None
               ) -> tuple[int, float] | None:
    """The events (and notifies) and the emulated makespan of an assignment's plan with the
    device's stream, event and notify limits lifted (None over the task capacity): a plan
    over the event limit is polished down to the budget as one over the budget is."""
    result = evaluator.run(streams, order, budgeted=False, lifted=True)
    if result is None:
        return None
    return result.program.event_count + result.program.notify_count, result.makespan_us
