"""Independent plan verifier: happens-before, deadlock freedom, GE's id rules, device limits.

Written without the `sync` package, so that a bug there cannot hide itself here.
`verify_plan(graph, plan)` returns a `VerifyReport` (`ok`, the first violations with kind
and message, counts per kind, statistics, `exit_code`, `text()`, `raise_for_failure()`);
`verify_command(GRAPH, PLAN)` is `streamalloc verify` and returns (report text, exit code).
Exit codes: 0 valid; 5 wrong plan (`PlanVerifyError`); 4 only limits exceeded
(`LimitExceeded`; a wrong plan wins over a limit); 3 unreadable or malformed graph or plan
file, or a non-integer limit option (`InputError`, naming the file and the field).

What is checked (violation kinds in brackets):

1. Structure. The plan names this graph [graph-mismatch]. Stream lists exist for every id
   0..physical_stream_count-1 [stream-gap] and for no id beyond physical_stream_count +
   attached_stream_count [stream-id-range]. Every node of the root and of every subgraph
   has a `nodes` entry [missing-node-entry] and no entry names a non-node
   [unknown-node-entry]; `stream` < logical_stream_count and `physical_stream` in range
   [stream-id-range]. A node with physical_stream >= 0 is listed [node-not-listed] in that
   stream's list [node-on-wrong-stream]; a node with -1 is listed nowhere
   [streamless-node-listed]. Every listed name is a graph node or a declared sync node
   [unknown-task] and is listed once [duplicate-task]. Sync nodes are declared once
   [duplicate-sync-node], do not take a graph node's name [sync-name-clash], are listed
   [sync-node-not-listed] on their declared stream [sync-node-wrong-stream]. One physical
   stream holds nodes of one logical stream [physical-mixes-logical].
2. Sync ids, per space (Send/Recv: event, SendNotify/RecvNotify: notify). No id >= the
   count [event-id-range, notify-id-range]; every id 0..count-1 has a Send or Recv, except
   one contiguous block of as many ids as the graph's attached sync resources reserve (sync
   spec 4.5, which GE numbers without Send/Recv) [event-id-gap, notify-id-gap]. Every id
   has one Send and one Recv [event-unpaired, event-multiple-recv, event-multiple-send, and
   the notify- forms]; the only shared id is
   multi-dims reuse: Sends in different subgraph instances of one Case node, each paired
   with the one Recv of its branch (a Send belongs to the graph node it follows on its
   stream, a Recv to the one it precedes). Every id has an `events` entry and no more
   entries than Sends; an entry's Send is on send_stream and its Recv on recv_stream, and
   its `send` (`recv`) node runs in the logical stream of that stream (the same physical
   stream or another split piece of it), unless the node has attached streams, whose work is
   not listed [event-entry]; when the node is on that stream, the Send comes after it (the
   Recv before it) [event-placement].
3. Activation. Activators are listed tasks of nodes that can start streams (StreamActive and
   StreamSwitch, a node GE makes an activator by attribute, a generated StreamActive)
   [activation] that do not activate their own stream [activation-own-stream]; activated
   streams have a list [activation].
4. Limits (graph options, defaults 2024 / 65535 / 1024 / 1024 / 8192):
   the streams requested (the physical ones, and the attached ones without a task list: one
   that holds sync tasks is a physical stream) < streamalloc.max_streams (the runtime's
   stream slots, slot 0 the caller's) [limit-streams]; event_count <= max_events
   [limit-events]; notify_count <= max_notifies [limit-notifies]; per stream, task units +
   7 profiling units <= max_task_per_stream, or max_task_per_huge_stream for huge streams
   [limit-tasks] (units: see `limits`).
5. Deadlock freedom. Vertices: the listed tasks. Edges: program order on each stream; each
   Send to the Recv it pairs with; each activator to the first task of each stream it
   starts. A stream nobody activates starts with the model; the loop activator
   (`is_loop_active`) restarts streams and adds no edge, and so does an activator that comes
   after the stream's first graph node in T-order when an earlier one starts the stream
   (without one, the later activators start it: an activated stream runs only once
   activated). A cycle (a Recv before its own Send on one
   stream, streams waiting on each other, a stream whose activator waits for it) is
   reported with the streams, tasks and ids involved and the number of tasks that can
   never run [deadlock].
6. Dependencies. Every data and control edge of every graph between two tasks (also
   through stream-less nodes), and GE's subgraph boundaries (parent's producers before the
   subgraph's input-less entry nodes, the first `_subgraph_end_node` before the parent's
   consumers), must be ordered: same stream, producer first; different streams, a path of
   the happens-before graph [dependency]. Exempt as in GE: NextIteration back edges,
   Enter/RefEnter into anything but StreamActive, edges inside FFTS subgraphs.

Cost: linear in tasks, cross edges and graph edges, plus O(streams) numpy work per
event and activation (no all-pairs closure); see `happens_before`.
"""

from streamalloc.verify.command import verify_command
from streamalloc.verify.plan_input import plan_view, read_plan
from streamalloc.verify.plan_view import PlanView
from streamalloc.verify.report import VerifyReport, VerifyStats, Violation
from streamalloc.verify.verifier import verify_plan

__all__ = ["PlanView", "VerifyReport", "VerifyStats", "Violation", "plan_view", "read_plan",
           "verify_command", "verify_plan"]
