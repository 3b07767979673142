"""Benchmark: load and partition every real model, and synthetic graphs up to 100k nodes.

Run `python bench/bench_load.py [--sizes 10000,100000]`. Prints one row per input with node
count, load seconds (best of --repeat runs) and partition seconds. Not a test: numbers go into
issue notes and catch regressions by eye.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import onnx

from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import partition_model
from streamalloc.ir.serialize import dump_json, dump_yaml
from streamalloc.ir.synthetic import layered_graph
from streamalloc.report.table import format_table
from streamalloc.rules.labelling import default_labels

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def real_models() -> list[Path]:
    """The 17 real models: ONNX light models, transformer ONNX graphs, GE dumps."""
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return (sorted(light.glob("*.onnx")) + sorted((DATA / "onnx").glob("*.onnx"))
            + sorted((DATA / "ge_dumps").glob("*.txt")))


def best_of(repeat: int, work: Callable[[], object]) -> tuple[float, object]:
    """Fastest wall time of `repeat` runs and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def row(label: str, path: Path, repeat: int) -> list[object]:
    """Load and partition one file."""
    load_s, graph = best_of(repeat, lambda: load_graph(path))
    part_s, parts = best_of(repeat, lambda: partition_model(graph, default_labels(graph)))
    subgraphs = sum(len(p.subgraphs) for p in parts.values())
    return [label, graph.node_count(), subgraphs, f"{load_s:.3f}", f"{part_s:.3f}"]


def main() -> None:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = [row(p.name, p, args.repeat) for p in real_models() if p.exists()]
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",") if s):
            graph = layered_graph(size, label_every=7)
            for suffix, dump in ((".json", dump_json), (".yaml", dump_yaml)):
                path = Path(tmp) / f"layered_{size}{suffix}"
                path.write_text(dump(graph), encoding="utf-8")
                rows.append(row(path.name, path, 1))
    print(format_table(["input", "nodes", "subgraphs", "load_s", "partition_s"], rows))


if __name__ == "__main__":
    main()
