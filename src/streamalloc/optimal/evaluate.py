"""The streamed-node DAG of a graph, plans of stream assignments, and their evaluation
(sync, verify, emulate): what both the search and the driver need."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from streamalloc.allocation import Allocation, NodeStream
from streamalloc.facts import INVALID
from streamalloc.ir.graph import Graph
from streamalloc.recent import Recent
from streamalloc.rules import RuleSet
from streamalloc.rules.check import Placement, broken
from streamalloc.rules.constraints import (
    AttachedStreams,
    Constraint,
    DedicatedStream,
    PinnedStream,
    StreamCap,
    constraint_nodes,
)
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.emulator import emulate
from streamalloc.runtime_emu.node_tasks import NodeTask
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.model import Unsolvable
from streamalloc.sync.context import SyncModel
from streamalloc.sync.driver import synchronize
from streamalloc.sync.insert import insert_cross_stream_pairs
from streamalloc.sync.model import SyncMaps
from streamalloc.sync.result import SyncPlan
from streamalloc.verify import verify_plan


@dataclass(frozen=True)
class Measured:
    """What the searches keep of an emulated plan: its events (and notifies) and
    makespan, not the plan (tens of MB on a 100k-node graph, for each of dozens of starts)."""

    events: int
    makespan_us: float


@dataclass(frozen=True)
class Outcome(Measured):
    """A verified, emulated plan."""

    allocation: Allocation
    plan: SyncPlan


def evaluate(graph: Graph, allocation: Allocation, rules: RuleSet | None, sync: str,
             costs: CostTable, *, in_order: Graph | None = None,
             tasks: Mapping[str, NodeTask] | None = None) -> Outcome:
    """The plan of `allocation`, verified and emulated on `graph`; synchronized in the
    execution order of `in_order` (the graph reordered, `optimal/order.py`) when given;
    `tasks`: the graph's node tasks on `costs` (`graph_node_tasks`), kept by a caller that
    evaluates many plans."""
    plan = synchronize(graph if in_order is None else in_order, allocation, sync=sync)
    document = plan.to_json()
    verify_plan(graph, document, rules=rules).raise_for_failure()
    result = emulate(graph, document, costs=costs, tasks=tasks)
    return Outcome(plan.event_count + plan.notify_count, result.makespan_us, allocation, plan)


def evaluate_in_order(graph: Graph, allocation: Allocation, order: Sequence[str] | None,
                      sync: str, costs: CostTable) -> Outcome:
    """`evaluate` of a search's plan (no rules: the search kept them), synchronized in its
    execution `order` (None: the graph's own)."""
    return evaluate(graph, allocation, None, sync, costs,
                    in_order=None if order is None else graph.reordered(order))


def task_dag(graph: Graph, allocation: Allocation) -> TaskDag:
    """The nodes the allocation gives a stream, in T-order, and the dependencies the sync layer
    orders between them (every such pair is cross-stream when each node has its own stream)."""
    names = [n.name for n in graph.all_nodes() if allocation.stream(n.name) != INVALID]
    unique = {n: i for i, n in enumerate(names)}
    maps = SyncMaps()
    insert_cross_stream_pairs(SyncModel.of(graph, {}),
                              {n: unique.get(n, INVALID) for n in allocation.nodes}, {}, maps)
    senders, receivers = maps.senders(), maps.receivers()
    pairs = [(senders[x], receivers[x]) for x in sorted(senders)]
    return TaskDag.build(names, pairs, [graph.node(n).graph for n in names])


def optimal_allocation(graph: Graph, baseline: Allocation, dag: TaskDag,
                       chains: tuple[tuple[int, ...], ...], *, rules: RuleSet,
                       constraints: list[Constraint]) -> Allocation:
    """The solver's streams as an Allocation: pinned streams keep their ids, the others are
    numbered by first node in T-order; attached streams follow the main ones as in GE."""
    ids = _stream_ids(dag, chains, constraints)
    main = max(ids, default=-1) + 1
    shift = main - baseline.main_stream_num
    unstreamed, provenance, attached = _unstreamed(baseline)
    nodes = dict(unstreamed)  # the baseline's order; the nodes that change overwritten in place
    if shift:
        for name in attached:
            nodes[name] = NodeStream(INVALID, "initial",
                                     tuple(a + shift for a in nodes[name].attached))
    for k, chain in enumerate(chains):
        for v in chain:
            name = dag.names[v]
            nodes[name] = NodeStream(ids[k], "solver", nodes[name].attached)
    result = replace(baseline, mode="optimal", rules=rules.name, rules_digest=rules.digest,
                     nodes=MappingProxyType(nodes), main_stream_num=main,
                     total_stream_num=baseline.total_stream_num + shift,
                     provenance=provenance, custom_stream_ids=())
    if constraints:  # (a search's evaluations pass none: it checks its moves itself)
        placement = Placement({n: s.stream for n, s in nodes.items()},
                              {n: s.attached for n, s in nodes.items() if s.attached})
        problems = broken(constraints, graph, placement)
        if problems:  # the model states every form; a break is a bug in the model or polish
            raise AssertionError(
                f"the solver broke rule {problems[0].rule}: {problems[0].message}")
    return result


Unstreamed = tuple[dict[str, NodeStream], Mapping[str, tuple[()]], tuple[str, ...]]
_UNSTREAMED: Recent[Unstreamed] = Recent(4)


def _unstreamed(baseline: Allocation) -> Unstreamed:
    """Every node of the baseline as a plan without streams places it (the streamed nodes
    are then overwritten), with the baseline's attached streams; the nodes' empty provenance;
    the nodes with attached streams (few: a plan with another number of streams moves them).
    The same for every plan of a search, so made once (a search builds an allocation per
    evaluation: a tenth of its time on Inception v2 went into these maps)."""
    def make() -> Unstreamed:
        nodes = {name: NodeStream(INVALID, "initial", node.attached)
                 for name, node in baseline.nodes.items()}
        return (nodes, MappingProxyType(dict.fromkeys(nodes, ())),
                tuple(name for name, node in nodes.items() if node.attached))
    return _UNSTREAMED.get_or_make(("unstreamed", id(baseline)), (baseline,), make)


def _stream_ids(dag: TaskDag, chains: tuple[tuple[int, ...], ...],
                constraints: list[Constraint]) -> list[int]:
    """Pinned chains get their id (the model keeps different pins apart), the others the free
    ids in order of their first node."""
    pin = {n: c.stream for c in constraints if isinstance(c, PinnedStream) for n in c.nodes}
    wanted: dict[int, int] = {}
    for k, chain in enumerate(chains):
        ids = {pin[dag.names[v]] for v in chain if dag.names[v] in pin}
        if ids:
            wanted[k] = min(ids)
    if wanted and max(wanted.values()) >= len(chains):
        raise Unsolvable(f"a rule pins nodes to stream {max(wanted.values())}, but the plan "
                         f"has {len(chains)} streams")
    taken = set(wanted.values())
    free = (i for i in itertools.count() if i not in taken)
    return [wanted[k] if k in wanted else next(free) for k in range(len(chains))]


def assignment_of(dag: TaskDag, chains: Sequence[Sequence[int]]) -> list[int]:
    """The stream (chain index) of every node."""
    streams = [0] * dag.size
    for k, chain in enumerate(chains):
        for v in chain:
            streams[v] = k
    return streams


def placement_of(dag: TaskDag, streams: Sequence[int]) -> Placement:
    """The placement of a stream assignment of the DAG's nodes (no attached streams)."""
    return Placement({dag.names[v]: streams[v] for v in range(dag.size)}, {})


def breaks(graph: Graph, dag: TaskDag, constraints: Sequence[Constraint],
           streams: Sequence[int]) -> bool:
    """Does the assignment break one of `constraints`? Not an `AttachedStreams`: an
    assignment places the main streams, and `optimal_allocation` gives each node its attached
    streams after them, so none breaks it (checked on the assignment alone, every one did, and
    every start and move of a graph with attached streams was refused). A `PinnedStream` as
    `optimal_allocation` numbers the streams (`pins_hold`), not by the assignment's ids."""
    pins = [c for c in constraints if isinstance(c, PinnedStream)]
    checked: list[Constraint] = [c for c in constraints
                                 if not isinstance(c, AttachedStreams | PinnedStream)]
    if pins and not pins_hold(dag, pins, streams):
        return True
    return bool(checked) and bool(broken(checked, graph, placement_of(dag, streams)))


def pins_hold(dag: TaskDag, pins: Sequence[PinnedStream], streams: Sequence[int]) -> bool:
    """Can `_stream_ids` number the assignment's streams as the pins ask: each pin's nodes on
    one stream, pins to different ids on different streams, and streams 0..k for the highest
    pin k (a merge of two other streams once left a pin to stream 1 a plan of one)?"""
    index = {n: v for v, n in enumerate(dag.names)}
    owner: dict[int, int] = {}
    for pin in pins:
        held = {streams[index[n]] for n in pin.nodes if n in index}
        if len(held) > 1 or any(owner.setdefault(s, pin.stream) != pin.stream for s in held):
            return False
    return not owner or len(set(streams)) > max(owner.values())


def chains_of_assignment(streams: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The streams of an assignment, each in T-order, ordered by their first node."""
    members: dict[int, list[int]] = {}
    for v, k in enumerate(streams):
        members.setdefault(k, []).append(v)
    return tuple(tuple(m) for _, m in sorted(members.items(), key=lambda i: i[1][0]))


WHOLE_PLAN = (StreamCap, DedicatedStream, PinnedStream)  # rule forms a move of a node they do
# not name can break: it can leave a member the opener of its stream (a stream's opener is its
# first node), join a dedicated stream, or leave fewer streams than a pin's id needs


def rule_guard(graph: Graph, dag: TaskDag, constraints: list[Constraint]
               ) -> Callable[[Sequence[int], Sequence[int]], bool]:
    """Do the constraints a move can break still hold: those naming a moved node, and on
    every move those that also depend on nodes they do not name (`WHOLE_PLAN`)?"""
    by_node: dict[int, list[Constraint]] = {}
    index = {n: i for i, n in enumerate(dag.names)}
    always = [c for c in constraints if isinstance(c, WHOLE_PLAN)]
    for c in constraints:
        for name in constraint_nodes(c):
            if name in index and not isinstance(c, WHOLE_PLAN):
                by_node.setdefault(index[name], []).append(c)

    def allowed(trial: Sequence[int], moved: Sequence[int]) -> bool:
        touched = always + list({id(c): c for w in moved for c in by_node.get(w, [])}.values())
        if not touched:
            return True
        return not breaks(graph, dag, touched, trial)

    return allowed
