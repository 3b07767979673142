"""Device limits: streams, events, notifies, and task units per physical stream.

Limits come from the graph options (formats.md section 1) with the defaults below. Task units
per stream follow the sync spec's accounting (1.4, 5.4) as far as a plan can tell it:

* if the plan has `tasks` (stream id -> units), that number is the stream's units;
* otherwise the units of the listed tasks are summed: Send 1, Recv 2 (wait + reset),
  SendNotify 1, RecvNotify 1, a generated StreamActive one per stream it activates; a graph
  node: a StreamActive one per stream it activates when it is an activator, else a positive
  `_node_sqe_num`, else a positive `_hccl_task_num` for HCCL nodes (+1 for a Recv/RecvMem
  node), else the node's `task_count`, else its engine's `default_task_count`;
* a stream is over the limit when its units + 7 profiling units exceed `max_task_per_stream`
  (GE splits at counted units + 27 reserved = 7 profiling trace points + 20 spare; the spare
  takes the split's own Send/Recv, which come after GE's count, sync spec 5.6 and 10), or
  `max_task_per_huge_stream` for huge streams: those in the plan's `huge_streams`, or
  stream 0 in single-stream mode (`ge.enableSingleStream` "true", where GE
  makes stream 0 huge when it needs to, sync spec 5.2).

Work a node issues on attached streams is not listed in the plan and is not counted.
Streams counted against `max_streams`, which must stay below it (the runtime's pool keeps slot 0
for the caller's stream): the physical streams and the attached ones without a task list. An
attached stream that carries sync tasks (its Sends and Recvs) has a list and is one of the
physical streams already: counted twice, a ge-mode plan that the sync layer fits to the limit
was rejected.
"""

from __future__ import annotations

import msgspec

from streamalloc.errors import InputError
from streamalloc.facts import LIMIT_DEFAULTS as DEFAULTS
from streamalloc.facts import PROFILING_UNITS, SYNC_UNITS, UNLIMITED_DEPTH, is_hccl
from streamalloc.ir.graph import Graph, Node
from streamalloc.verify.context import Context
from streamalloc.verify.plan_view import PlanView


class Limits(msgspec.Struct, frozen=True):
    """The device limits a plan is checked against."""

    streams: int
    events: int
    notifies: int
    tasks: int
    huge_tasks: int


def read_limits(graph: Graph) -> Limits:
    """Limits from the graph options; a non-integer value is an InputError (exit 3)."""
    values = {key: _option_int(graph, key, default) for key, default in DEFAULTS.items()}
    return Limits(*values.values())


def _option_int(graph: Graph, key: str, default: int) -> int:
    text = graph.option(key, "")
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{graph.source or graph.name}: option {key}: expected an integer, "
                         f"found {text!r}") from None


def requested_streams(plan: PlanView) -> int:
    """The streams the plan requests: ids 0..n-1 for the physical ones (n: physical_stream_count,
    or past the highest id with a task list) and the attached ones without a list (those its
    nodes name beyond them, and any more `attached_stream_count` declares)."""
    ids = max(plan.physical_stream_count, max(plan.streams, default=-1) + 1)
    named = {s for streams in plan.attached.values() for s in streams}
    unnamed = max(0, plan.attached_stream_count - len(named))
    return ids + sum(s >= ids for s in named) + unnamed


def check_limits(ctx: Context, limits: Limits) -> None:
    """Report every limit the plan exceeds, with the numbers."""
    plan = ctx.plan
    streams = requested_streams(plan)
    # max_streams counts the runtime's stream slots, and slot 0 is the caller's stream: a
    # model's request of n streams fails unless n < max_streams
    for what, count, limit, why in (
            ("streams", streams, limits.streams - 1,
             f"graph option streamalloc.max_streams: {limits.streams} slots, less the caller's "
             "stream"),
            ("events", plan.event_count, limits.events, "graph option streamalloc.max_events"),
            ("notifies", plan.notify_count, limits.notifies,
             "graph option streamalloc.max_notifies")):
        if count > limit:
            ctx.log.add(f"limit-{what}", f"the plan uses {count} {what}, the device allows "
                        f"{limit} ({why})")
    if ctx.graph.option(UNLIMITED_DEPTH) == "true":
        return
    huge, unit = _huge_streams(ctx), _Units(ctx)
    for stream, names in plan.streams.items():
        units = plan.tasks.get(stream) if plan.tasks is not None else None
        if units is None:
            units = sum(map(unit.of, names))
        limit, key = (limits.huge_tasks, "max_task_per_huge_stream") if stream in huge else \
            (limits.tasks, "max_task_per_stream")
        if units + PROFILING_UNITS > limit:
            ctx.log.add("limit-tasks", f"stream {stream} holds {units} task units, with the "
                        f"{PROFILING_UNITS} profiling units {units + PROFILING_UNITS}, over the "
                        f"limit of {limit} (graph option streamalloc.{key}); split the stream")


def _huge_streams(ctx: Context) -> frozenset[int]:
    """The plan's huge streams that may be huge: only stream 0 in single-stream mode (sync spec
    5.2); any other is reported and held to the normal limit."""
    single = ctx.graph.option("ge.enableSingleStream") == "true"
    if ctx.plan.huge_streams is None:
        return frozenset({0}) if single else frozenset()
    allowed = {0} if single else set()
    for stream in sorted(set(ctx.plan.huge_streams) - allowed):
        ctx.log.add("huge-stream", f"huge_streams lists stream {stream}, but only stream 0 of a "
                    "graph in single-stream mode (ge.enableSingleStream) is huge; it is held "
                    "to max_task_per_stream")
    return frozenset(set(ctx.plan.huge_streams) & allowed)


class _Units:
    """Task units of listed tasks (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.activations = ctx.plan.activations
        self.sync, self.nodes = ctx.sync, ctx.nodes

    def of(self, name: str) -> int:
        """Units one listed task issues on its stream."""
        node = self.nodes.get(name)
        if node is not None:
            if node.type == "StreamActive" and name in self.activations:
                return len(set(self.activations[name]))  # sync spec 5.4: one per stream
            return node_units(self.ctx.graph, node)
        sync = self.sync.get(name)
        if sync is None:
            return 0  # an unknown task, reported elsewhere
        if sync.type == "StreamActive":
            return len(set(self.activations.get(name, ())))
        return SYNC_UNITS[sync.type]


def node_units(graph: Graph, node: Node) -> int:
    """Units of a graph node on its main stream: a positive explicit count (`_node_sqe_num`,
    else `_hccl_task_num` for an HCCL node; one more for a Recv/RecvMem node), else its
    task_count, else its engine's default (sync spec 5.4)."""
    key = "_node_sqe_num" if node.has_attr("_node_sqe_num") else \
        "_hccl_task_num" if _is_hccl(node) else None
    value = node.attr(key) if key is not None else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value + (1 if node.type in ("Recv", "RecvMem") else 0)
    return own_units(graph, node)


def own_units(graph: Graph, node: Node) -> int:
    """Units of a graph node's own task records: its task_count, else its engine's default
    (a node of an engine that issues none, such as GE-local, has 0)."""
    if node.task_count is not None:
        return node.task_count
    engine = graph.engines.get(node.engine)
    return engine.default_task_count if engine is not None else 1


def _is_hccl(node: Node) -> bool:
    return is_hccl(node.type, node.engine)
