"""Run CP-SAT on the chain model (`solver.model`) reproducibly and read the streams back: the
solver's settings, a Ctrl-C that interrupts the search, and the chains the chosen arcs make."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ortools.sat.python import cp_model, cp_model_helper

from streamalloc.solver.model import Model

PRESOLVE_MAX_VARIABLES = 20_000  # above this many variables CP-SAT solves without presolve
PRESOLVE_MIN_TIME = 1.0  # and below this deterministic limit (s), which presolve alone overruns
HINT_CHECK_TIME = 0.1  # deterministic s to check a hint with every variable fixed: propagation


@dataclass(frozen=True)
class SolveOutput:
    """Chains (streams) in T-order of their first node, and CP-SAT's report."""

    chains: tuple[tuple[int, ...], ...]
    status: str
    objective: float
    bound: float
    deterministic_time: float
    split_pairs: int


def solve(model: Model, *, time_limit: float, seed: int, workers: int,
          window: bool = False, presolve: bool = True) -> SolveOutput:
    """Run CP-SAT with a deterministic time limit and extract the streams. A `window`'s model
    (`solver.windows`) runs with CP-SAT's older linear propagation: on those models the newer
    one spends twice the wall time for the same deterministic time (a 1k-node window of a
    layered graph: 27.4 s against 12.1 s for 1.67 s). `presolve=False` starts the search from
    the hint at once (a presolve of 2 s loses it: GPT-2's model finds nothing in 2 s with it,
    and its hint, then a better solution, without it)."""
    if workers > 1 and not _hint_holds(model.cp):
        model.cp.clear_hints()
    solver = configured_solver(time_limit, seed, workers)
    solver.parameters.new_linear_propagation = not window
    if not presolve or len(model.cp.proto.variables) > PRESOLVE_MAX_VARIABLES \
            or time_limit < PRESOLVE_MIN_TIME:
        # CP-SAT's presolve runs past the deterministic limit: seconds on a real model (T5:
        # 4.7 s of wall time for a 0.5 s limit), minutes on a large one (a 10k-node graph: 238 s
        # for 1.0 s, 20 s without it); size and limit decide, so the plan stays reproducible
        solver.parameters.cp_model_presolve = False
    status = interruptible_solve(solver, model.cp)
    name = solver.status_name(status)
    deterministic = round(solver.response_proto.deterministic_time, 3)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolveOutput((), name, 0.0, 0.0, deterministic, 0)
    chosen = {key for key, var in model.arc.items() if solver.value(var)}
    splits = sum(solver.value(v) for v in model.split.values())
    return SolveOutput(chains_of(model.data.dag.size, chosen), name, solver.objective_value,
                       solver.best_objective_bound, deterministic, splits)


def _hint_holds(cp: cp_model.CpModel) -> bool:
    """Whether the hint is a solution (every variable fixed to its hinted value). OR-Tools 9.15
    aborts the whole process (`Check failed: heuristics.fixed_search != nullptr`) when several
    interleaved workers load an infeasible model with a hint; in 300 random models it never did
    without one, nor with a hint that holds (its model is feasible). So several workers only
    get a hint that holds; one worker repairs a broken hint, as before."""
    check = cp_model.CpSolver()
    check.parameters.fix_variables_to_their_hinted_value = True
    check.parameters.num_workers = 1
    check.parameters.cp_model_presolve = False
    check.parameters.max_deterministic_time = HINT_CHECK_TIME
    return check.solve(cp) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def configured_solver(time_limit: float, seed: int, workers: int) -> cp_model.CpSolver:
    """A solver whose result depends only on the model, `seed` and `workers`: a deterministic
    time limit, and several workers interleaved."""
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.random_seed = seed
    solver.parameters.num_workers = workers
    solver.parameters.interleave_search = True  # deterministic with several workers too
    return solver


def interruptible_solve(solver: cp_model.CpSolver, cp: cp_model.CpModel
                        ) -> cp_model_helper.CpSolverStatus:
    """`solver.solve(cp)`, with Ctrl-C interrupting the run. CP-SAT's own SIGINT handler would
    end the search quietly and the command would write a plan; instead the search runs in a
    worker thread, the main thread gets the KeyboardInterrupt, stops the search and re-raises."""
    solver.parameters.catch_sigint_signal = False
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(solver.solve, cp)
        try:
            return future.result()
        except KeyboardInterrupt:
            solver.stop_search()
            raise


def chains_of(n: int, arcs: set[tuple[int, int]] | Mapping[tuple[int, int], object]
              ) -> tuple[tuple[int, ...], ...]:
    """The streams an arc set makes, each in T-order, ordered by their first node."""
    succ = {u: v for u, v in arcs}
    has_pred = {v for _, v in arcs}
    chains = []
    for head in range(n):
        if head in has_pred:
            continue
        chain = [head]
        while chain[-1] in succ:
            chain.append(succ[chain[-1]])
        chains.append(tuple(chain))
    return tuple(chains)
