"""Events per real model: GE's elimination (`--sync ge`) against the minimal one (`--sync minimal`).

For each of the 17 real models under the parallel options, GE-mode allocation: physical
streams and events (event_count + notify_count) of both strategies, and the time of each.

    python bench/sync_minimal_table.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from real_models import real_models

from streamalloc import api
from streamalloc.ir.loaders import load_graph
from streamalloc.sync.result import SyncPlan

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def timed(graph: api.Graph, allocation: api.Allocation, sync: str) -> tuple[SyncPlan, float]:
    """The plan of one strategy and the seconds it took."""
    start = time.perf_counter()
    result = api.synchronize(graph, allocation, sync=sync)
    return result, time.perf_counter() - start


def row(model: Path) -> str:
    """One table row: model, nodes, physical streams (ge / minimal), events, times."""
    graph = api.with_options(load_graph(model), PARALLEL)
    allocation = api.allocate(graph)
    ge, t_ge = timed(graph, allocation, "ge")
    minimal, t_min = timed(graph, allocation, "minimal")
    streams = f"{ge.physical_stream_count}/{minimal.physical_stream_count}"
    events = [p.event_count + p.notify_count for p in (ge, minimal)]
    return (f"{model.stem[:36]:36} {graph.node_count():>6} {streams:>7} {events[0]:>6} "
            f"{events[1]:>8} {events[0] - events[1]:>6} {t_ge:>7.3f} {t_min:>8.3f}")


def main() -> None:
    """Print the table."""
    print(f"{'model':36} {'nodes':>6} {'streams':>7} {'ge':>6} {'minimal':>8} {'saved':>6} "
          f"{'t_ge s':>7} {'t_min s':>8}")
    for model in real_models():
        print(row(model))


if __name__ == "__main__":
    main()
