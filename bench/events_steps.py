"""Wall time of the events objective on training steps, stage by stage.

The five training steps of docs/optimal.md ("Budgets and determinism"): SqueezeNet, Inception
v1, ShuffleNet and DenseNet-121 (the onnx package's light models) and BERT base
(tests/data), each `streamalloc train-step` under the parallel options and GE's rules. Per
step, in this process, one after another: the streamed nodes, the wall seconds of the plans at
the bounds, CP-SAT (and its deterministic seconds), the polish, the choice after the search and
the whole run, and the events of the plan against the events bound. The stages are timed by
wrapping the search's phase functions (`optimal/search.py`), so the plans are the command
line's. Writes bench/results/events_steps.json and .md (all steps only: `--only` prints).

    python bench/events_steps.py [--time-limit S] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))  # run as a script: bench/ alone is on the path

from real_models import DATA, LIGHT  # noqa: E402

from bench.inputs import named  # noqa: E402
from streamalloc import api  # noqa: E402
from streamalloc.ir.loaders import load_graph  # noqa: E402
from streamalloc.ir.training import training_step  # noqa: E402
from streamalloc.optimal import OptimalOptions, allocate_optimal, search, task_dag  # noqa: E402

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
STEPS = {"SqueezeNet": LIGHT / "light_squeezenet.onnx",
         "Inception v1": LIGHT / "light_inception_v1.onnx",
         "ShuffleNet": LIGHT / "light_shufflenet.onnx",
         "BERT base": DATA / "onnx" / "bert_base.onnx",
         "DenseNet-121": LIGHT / "light_densenet121.onnx"}
STAGES = {"plans at the bounds": ("unsearched", "aside_first"), "CP-SAT": ("solved",),
          "polish": ("polish_both_ways",), "choice": ("chosen",)}
RESULTS = ROOT / "bench" / "results"


@contextmanager
def stage_clock() -> Iterator[dict[str, float]]:
    """Wall seconds spent in each of the search's phase functions while the block runs."""
    spent: dict[str, float] = {}
    originals = {name: getattr(search, name) for names in STAGES.values() for name in names}

    def timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return run

    for name, func in originals.items():
        setattr(search, name, timed(name, func))
    try:
        yield spent
    finally:
        for name, func in originals.items():
            setattr(search, name, func)


def measure(name: str, model: Path, time_limit: float) -> dict[str, Any]:
    """One step's row."""
    graph = api.with_options(training_step(load_graph(model)), PARALLEL)
    streamed = task_dag(graph, api.allocate(graph)).size
    with stage_clock() as spent:
        start = time.perf_counter()
        _, report = allocate_optimal(graph, None, OptimalOptions(time_limit=time_limit))
        total = time.perf_counter() - start
    stages = {stage: round(sum(spent.get(n, 0.0) for n in names), 1)
              for stage, names in STAGES.items()}
    return {"step": name, "streamed_nodes": streamed, **stages,
            "deterministic_s": report.deterministic_time, "total": round(total, 1),
            "events": report.events_final, "events_bound": report.events_bound,
            "phase": report.phase}


def table(rows: list[dict[str, Any]], time_limit: float) -> str:
    """The Markdown table of docs/optimal.md."""
    lines = [f"`--time-limit {time_limit:g}`, wall seconds per step:", "",
             "| training step | streamed nodes | plans at the bounds | CP-SAT (deterministic s) "
             "| polish | choice | total | events (bound) |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['step']} | {r['streamed_nodes']:,} | {r['plans at the bounds']} | "
              f"{r['CP-SAT']} ({r['deterministic_s']:g}) | {r['polish']} | {r['choice']} | "
              f"{r['total']} | {r['events']} ({r['events_bound']}) |" for r in rows]
    return "\n".join(lines) + "\n"


def chosen(only: str) -> list[str]:
    """The steps `--only` names (all for ""); a part naming none is an error."""
    return named(list(STEPS), [o.strip() for o in only.split(",") if o.strip()], "step")


def main() -> None:
    """Measure the steps, print the table and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--only", default="",
                        help="comma-separated name substrings, any case (as python -m bench "
                             "--only): measure those steps, print, and write no results")
    args = parser.parse_args()
    names = chosen(args.only)
    rows = [measure(name, STEPS[name], args.time_limit) for name in names]
    text = table(rows, args.time_limit)
    print(text, end="")
    if len(names) < len(STEPS):  # the results files are the whole table docs/optimal.md cites
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "events_steps.json").write_text(
        json.dumps({"time_limit": args.time_limit, "rows": rows}, indent=1) + "\n")
    (RESULTS / "events_steps.md").write_text(text)


if __name__ == "__main__":
    main()
