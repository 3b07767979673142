"""A lower bound of the events (events + notifies) of every plan the optimal mode may write.

The dependencies the sync layer orders join the streamed nodes into components. Within one,
every cross-stream dependency is ordered by a chain of events (or notifies), so the physical
streams a component's nodes use are joined by events: spanning them takes one fewer event
than there are streams. A stream shared by several components joins them, so over the whole
graph the events are at least the physical streams less the components. A plan needs at
least as many streams as

* the task capacity asks for: the split gives a stream at most `max_task_per_stream` less
  the reserved units of node tasks, or one larger task alone (sync tasks only add to them),
  so the streams are at least the bins a packing of the tasks needs (`optimal/bins.py`:
  L2 per component, and for the whole graph also the pattern model, one CP-SAT solve);
* the makespan limit asks for (under `--concurrency ge`): a stream runs one task at a time,
  so its tasks' times add up to at most the limit.

A plan with exactly that many events joins its physical streams in a forest, which runs the
tasks between a source and a sink one after the other; where those take longer than the
makespan limit, every plan needs one event more (`optimal/event_forest.py`). Where the
bound is one event and a component needs two streams, one event joins them only if
the split between them passes the conditions of `solver.one_event` (one closed under
predecessors, its senders' producers and its receivers' consumers running one after the other
within the limit); where CP-SAT proves that none does, the bound is two.

Under `--concurrency full` Nimble's minimum bounds the events too. The bound holds where
nothing but events orders streams: a graph that activates streams (control flow, labels, a
loop activator), has attached streams or declares event sharing has none (None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx

from streamalloc.facts import ACTIVATOR_ATTRS, ACTIVATOR_TYPES, RESERVED_UNITS, UNLIMITED_DEPTH
from streamalloc.ir.attached import has_attached_info
from streamalloc.ir.graph import Graph, Node
from streamalloc.optimal.bins import bins, martello_toth
from streamalloc.optimal.event_forest import serialized_over
from streamalloc.optimal.options import EPS_US
from streamalloc.runtime_emu.cost_table import CostTable
from streamalloc.runtime_emu.node_tasks import graph_node_tasks
from streamalloc.solver.dag import TaskDag
from streamalloc.solver.one_event import one_event_fits
from streamalloc.sync.limits import limits_of
from streamalloc.sync.multiplexing import ATTR as EVENT_SHARING
from streamalloc.sync.split import NO_SPLIT_TYPES
from streamalloc.sync.tasks import main_units

ACTIVATING_TYPES = ACTIVATOR_TYPES | {"StreamMerge"} | NO_SPLIT_TYPES
ACTIVATING_ATTRS = (*ACTIVATOR_ATTRS, EVENT_SHARING)
EPS = 1e-9  # the time term's tolerance: a stream filled to the limit is still one stream
ONE_EVENT_NODES = 5_000  # the one-event check runs on components up to this size,
ONE_EVENT_COMPONENTS = 8  # the largest this many of those that need two streams (one that
# cannot do with one event is enough; a graph of many small ones would pay a solve each)
ONE_EVENT_TIME = 0.5  # deterministic seconds per component; on the 18 inputs of bench/ under
# the parallel options each check took at most 0.1 s of wall time at slacks 0-50%


def events_bound(graph: Graph, dag: TaskDag, *, limit_us: float | None, costs: CostTable,
                 nimble: int | None = None) -> int | None:
    """The fewest events any plan of the streamed nodes of `dag` needs, running within
    `limit_us` (None: no limit); None where events are not the only ordering."""
    if not events_only(graph):
        return None
    components = _components(dag)
    units = [main_units(graph, graph.node(n)) for n in dag.names]
    tasks = graph_node_tasks(graph, costs)  # the emulator's: launch and run of each task
    times = [tasks[n][1] for n in dag.names]
    capacity = node_capacity(graph)

    def streams(members: Sequence[int], *, patterns: bool = False) -> int:
        need = 1 if members else 0
        if capacity is not None:
            sizes = [units[v] for v in members]
            need = max(need, bins(sizes, capacity) if patterns  # (one CP-SAT solve a call)
                       else martello_toth(sizes, capacity))
        if limit_us is not None and limit_us > 0:
            need = max(need, math.ceil(sum(times[v] for v in members) / limit_us - EPS))
        return need

    need = [streams(c) for c in components]
    whole = streams(range(dag.size), patterns=True) - len(components)
    each = max((n - 1 for n in need), default=0)
    bound = max(0, whole, each, nimble or 0)
    if limit_us is None or bound != whole or bound == 0:
        return bound
    if serialized_over(dag, times, limit_us + EPS_US):
        return bound + 1  # no forest runs within the limit (`optimal/event_forest.py`)
    if bound != 1:
        return bound
    two = sorted((c for c, n in zip(components, need, strict=True)
                  if n == 2 and len(c) <= ONE_EVENT_NODES),
                 key=lambda c: (-len(c), c[0]))[:ONE_EVENT_COMPONENTS]
    if any(one_event_fits(dag, c, times, units, capacity=capacity, limit_us=limit_us + EPS_US,
                          record_us=min(costs.event_record_us, costs.notify_record_us),
                          wait_us=min(costs.event_wait_us, costs.notify_wait_us),
                          time_limit=ONE_EVENT_TIME) is False for c in two):
        return 2
    return bound


def events_only(graph: Graph) -> bool:
    """Do only events and notifies order streams, and count one each? Not where a node
    activates streams, has subgraphs or attached streams, or shares event ids."""
    return not any(_orders_otherwise(node) for node in graph.all_nodes())


def _orders_otherwise(node: Node) -> bool:
    return bool(node.subgraphs) or node.type in ACTIVATING_TYPES or has_attached_info(node) \
        or any(node.has_attr(a) for a in ACTIVATING_ATTRS)


def _components(dag: TaskDag) -> list[list[int]]:
    """The streamed nodes joined by dependencies, each component ascending."""
    joined = nx.Graph()
    joined.add_nodes_from(range(dag.size))
    joined.add_edges_from(dag.edges)
    return sorted(sorted(c) for c in nx.connected_components(joined))


def node_capacity(graph: Graph) -> int | None:
    """Units of node tasks a physical stream holds at most (None: no split); the huge
    stream's in single-stream mode."""
    if graph.option(UNLIMITED_DEPTH) == "true":
        return None
    limits = limits_of(graph)
    most = limits.max_task_per_huge_stream if graph.option("ge.enableSingleStream") == "true" \
        else limits.max_task_per_stream
    return max(1, most - RESERVED_UNITS)
