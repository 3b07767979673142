"""The benchmark's inputs, written to graph files the CLI reads.

* `real`: the 17 real models of `tests/real_models.py` (ONNX light models, transformer ONNX
  graphs, GE dumps), as shipped, with the parallel options of bench/compare_real_models.py;
* `training`: the ResNet-50 training step (`training_step` of light_resnet50.onnx);
* `transformer`: training steps of transformer stacks of 12 and 48 layers (bench/stacks.py; the
  package has no transformer generator);
* `generated`: `layered_graph(n)` with `ge.streamMaxParallelNum=AIcoreEngine:4` and
  `streamalloc.max_streams=8192` in the file, so the command is exactly
  `streamalloc allocate g.json -o plan.json`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from streamalloc.api import with_options, write_graph
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.synthetic import layered_graph
from streamalloc.ir.training import training_step

from .stacks import transformer_training_step

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the list of the 17 real models

from real_models import LIGHT, real_models  # noqa: E402

PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}
# 1M nodes split into about 3100 streams at the runtime's depth of 1024 tasks: over the default
# stream limit of 2024, so the generated files raise it (it binds nothing below 1M)
GENERATED = {"ge.streamMaxParallelNum": "AIcoreEngine:4", "streamalloc.max_streams": "8192"}


@dataclass(frozen=True)
class BenchInput:
    """One graph file and how to run it: `sets` go on the command line as `--set K=V`."""

    name: str
    kind: str
    path: Path
    nodes: int
    sets: Mapping[str, str] = field(default_factory=dict)

    def set_args(self) -> list[str]:
        """`--set K=V` arguments, sorted by key."""
        return [arg for key in sorted(self.sets) for arg in ("--set", f"{key}={self.sets[key]}")]


@dataclass(frozen=True)
class Selection:
    """Which inputs a preset runs: real models by short name (None: all), the ResNet-50 training
    step or not, transformer stack depths, generated graph sizes; `only`: name substrings, any
    case (`specs` stops the run where one names no input)."""

    real: tuple[str, ...] | None
    training: bool
    stacks: tuple[int, ...]
    sizes: tuple[int, ...]
    only: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spec:
    """An input before it is written: `make(workdir)` writes it (if generated) and describes it."""

    name: str
    kind: str
    make: Callable[[Path], BenchInput]


def specs(selection: Selection) -> list[Spec]:
    """The selected inputs in table order: real, training, transformer, generated."""
    found = [Spec(_short(path), "real", partial(_real, path)) for path in real_models()
             if selection.real is None or _short(path) in selection.real]
    if selection.training:
        found.append(_generated("resnet50_train_step", "training", _resnet50_step))
    found += [_generated(f"transformer{n}_train_step", "transformer",
                         partial(transformer_training_step, n)) for n in selection.stacks]
    found += [_generated(f"layered_{size_name(n)}", "generated", partial(_layered, n))
              for n in selection.sizes]
    kept = set(named([s.name for s in found], selection.only, "input"))
    return [s for s in found if s.name in kept]


def named(names: Sequence[str], only: Sequence[str], what: str) -> list[str]:
    """The `names` that `--only`'s parts name (substrings, any case), all of them without
    parts; a part that names none stops the run, listing the `what`s there are."""
    parts = [o.lower() for o in only]
    unmatched = [p for p in parts if not any(p in name.lower() for name in names)]
    if unmatched:
        raise SystemExit(f"--only: {', '.join(unmatched)} names no {what}; the {what}s: "
                         f"{', '.join(names)}")
    return [name for name in names if not parts or any(p in name.lower() for p in parts)]


def _resnet50_step() -> Graph:
    return training_step(load_graph(LIGHT / "light_resnet50.onnx"))


def _layered(nodes: int) -> Graph:
    return with_options(layered_graph(nodes), GENERATED)


def _generated(name: str, kind: str, graph: Callable[[], Graph]) -> Spec:
    def make(workdir: Path) -> BenchInput:
        built = graph()
        path = workdir / f"{name}.json"
        write_graph(built, path)
        return BenchInput(name, kind, path, built.node_count(),
                          {} if kind == "generated" else PARALLEL)

    return Spec(name, kind, make)


def _real(path: Path, _workdir: Path) -> BenchInput:
    return BenchInput(_short(path), "real", path, load_graph(path).node_count(), PARALLEL)


def _short(path: Path) -> str:
    """`light_resnet50.onnx` -> `resnet50`; GE dumps keep their number and stage."""
    stem = path.stem.removeprefix("light_").removeprefix("ge_proto_")
    return f"ge_{stem}" if path.stem.startswith("ge_proto_") else stem


def size_name(nodes: int) -> str:
    """10000 -> 10k, 1000000 -> 1M."""
    if nodes % 1_000_000 == 0:
        return f"{nodes // 1_000_000}M"
    return f"{nodes // 1000}k" if nodes % 1000 == 0 else str(nodes)
