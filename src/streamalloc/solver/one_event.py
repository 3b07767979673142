"""Can one event join the two streams of a connected set of nodes within a makespan limit?

With one event (or notify) a connected component of the dependencies spans two physical streams
at most, and every dependency between them runs one way, from S1 to S2, ordered by that event
from node u of S1 to node v of S2. So S1 holds every producer of its nodes (it is closed under
predecessors) and S2 every consumer of its own. The *senders* (the nodes of S1 with a consumer
on S2) and their producers, D, run on S1 up to u; the *receivers* (the nodes of S2 with a
producer on S1) and their consumers, U, run on S2 from v on. A stream runs one task at a time,
so the plan runs at least t(D) + the event's latency + t(U), and each stream's tasks, its Send
or its Recv included, fit in the limit, as do their units in a physical stream. This model asks
whether some split satisfies all of that; where none does, every plan of the component within
the limit needs two events or more. It states t(D) + t(U) as the component's time less that of
the nodes off the chain: on S1 reaching no sender (closed under successors), on S2 reached by
no receiver (closed under predecessors). Implications alone then tie the sets to the split,
which CP-SAT propagates well: stated as "a sender's producers are in D", T5 small's model was
still undecided after 120 deterministic seconds; stated so, it is proven at once.

Under the parallel options, Llama tiny's tasks take 1.1 times the makespan limit and T5 small's
1.003 times, with 1,761 task units against 997 per stream: both need two streams, and one event
cannot join them (proven in 0.01 and 0.05 s): the optimal mode's 2 events are the fewest.
"""

from __future__ import annotations

from collections.abc import Sequence

from ortools.sat.python import cp_model

from streamalloc.solver.dag import TaskDag
from streamalloc.solver.run import interruptible_solve

TIME_SCALE = 1000  # integer time units per us: sums of the floors never exceed the floor of
# the sum, so the scaled constraints are no tighter than the real ones


def one_event_fits(dag: TaskDag, members: Sequence[int], times: Sequence[float],
                   units: Sequence[int], *, capacity: int | None, limit_us: float,
                   record_us: float, wait_us: float, time_limit: float) -> bool | None:
    """Whether two streams joined by one event may run the nodes `members` of `dag` (one
    component of its dependencies) within `limit_us`: False when CP-SAT proves that no split
    can, True when it finds one that passes these necessary conditions (not a plan), None
    when it does neither within `time_limit` deterministic seconds. `times`: each node's
    task time on its stream; `units`: its task units (`capacity`: a physical stream's, None
    for no split); `record_us` and `wait_us`: the Send's and the Recv's latency."""
    inside = set(members)
    cp = cp_model.CpModel()
    first = {v: cp.new_bool_var(f"s1_{v}") for v in members}  # on S1, the sending stream
    # off the chain of D and U: on S1 reaching no sender, or on S2 reached by no receiver
    after = {v: cp.new_bool_var(f"a_{v}") for v in members}
    before = {v: cp.new_bool_var(f"b_{v}") for v in members}
    for v in members:
        cp.add_implication(after[v], first[v])
        cp.add_implication(before[v], first[v].negated())
    for u, v in dag.edges:
        if u in inside and v in inside:
            cp.add_implication(first[v], first[u])  # S1 is closed under predecessors
            cp.add_implication(after[u], after[v])  # everything after stays on S1
            cp.add_implication(before[v], before[u])  # everything before stays on S2
    scaled = {v: _scaled(times[v]) for v in members}
    limit = _scaled(limit_us)
    cp.add(sum(scaled[v] * first[v] for v in members) + _scaled(record_us) <= limit)
    cp.add(sum(scaled[v] * (1 - first[v]) for v in members) + _scaled(wait_us) <= limit)
    # t(D) + t(U): the component's time less that of the nodes off the chain
    cp.add(sum(scaled[v] * (1 - after[v] - before[v]) for v in members)
           + _scaled(record_us) + _scaled(wait_us) <= limit)
    if capacity is not None and all(units[v] <= capacity for v in members):
        # (a task larger than a stream has one to itself: then only the times bind)
        cp.add(sum(units[v] * first[v] for v in members) <= capacity)
        cp.add(sum(units[v] * (1 - first[v]) for v in members) <= capacity)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.num_workers = 1  # a proof, not a search: one worker, reproducible
    status = interruptible_solve(solver, cp)
    if status == cp_model.INFEASIBLE:
        return False
    return True if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def _scaled(us: float) -> int:
    """`us` in integer time units, rounded down."""
    return int(us * TIME_SCALE)
