"""`python -m bench [--quick] [--only NAMES] [--sizes 1k,10k] [--out DIR] [--update-readme]`.

Runs every input in every mode (ge, ge-minimal, optimal), each command in a fresh
`python -m streamalloc` process, and writes OUT/bench.json (`streamalloc.bench/v1`),
OUT/bench.md and OUT/scaling.png; `--update-readme` also rewrites the README's Benchmarks block.

Presets:
* default (full): the 17 real models, the ResNet-50 training step, transformer stacks of 12 and
  48 layers (training steps), generated graphs of 1k, 10k, 100k and 1M nodes; optimal mode with
  its default `--time-limit` on the models and `--time-limit 0.1` on the generated graphs, run
  up to 100k nodes (above 2,000 streamed nodes the allocator solves its model window by
  window); the 1M row says FALLBACK without running it;
* `--quick`: two small real models, a 2-layer transformer step, generated 1k and 10k, optimal
  mode with `--time-limit 2` up to 2000 nodes.

Every command is killed after `--timeout` seconds (a TIMEOUT row) and limited to
`--memory-limit-mb` of address space (an ERROR row, MemoryError, instead of swapping a shared
machine).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import streamalloc

from . import report, runner
from .inputs import ROOT, BenchInput, Selection, specs
from .suite import MODES, Settings, measure

RESULTS = ROOT / "bench" / "results"
COMMAND = "python -m bench --update-readme"


@dataclass(frozen=True)
class Preset:
    """A named selection of inputs and how to run them."""

    name: str
    selection: Selection
    settings: Settings
    generated_time_limit: float | None  # optimal --time-limit on the generated graphs


PRESETS = {
    "full": Preset("full", Selection(None, True, (12, 48), (1_000, 10_000, 100_000, 1_000_000)),
                   Settings(MODES, None, 110_000, 3600.0, 12_288), 0.1),
    "quick": Preset("quick", Selection(("squeezenet", "llama_tiny"), False, (2,),
                                       (1_000, 10_000)),
                    Settings(MODES, 2.0, 2_000, 600.0, 12_288), 2.0),
}


def parse_size(text: str) -> int:
    """`1k` -> 1000, `1M` -> 1000000, `2500` -> 2500."""
    scale = {"k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the quick preset (under a minute)")
    parser.add_argument("--only", default="",
                        help="comma-separated name substrings, any case: run only those "
                             "inputs (any real model, the training step, the preset's stacks "
                             "and sizes)")
    parser.add_argument("--sizes", help="generated graph sizes, e.g. 1k,10k,100k,1M")
    parser.add_argument("--modes", help="comma-separated among ge, ge-minimal, optimal")
    parser.add_argument("--time-limit", type=float,
                        help="optimal mode's --time-limit on every input")
    parser.add_argument("--optimal-max-nodes", type=int,
                        help="run optimal mode only up to this many nodes")
    parser.add_argument("--timeout", type=float, help="kill a command after this many seconds")
    parser.add_argument("--memory-limit-mb", type=int,
                        help="address-space limit of every command (default 12288)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    parser.add_argument("--update-readme", action="store_true",
                        help="rewrite the README's Benchmarks block (bench:begin/end markers)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: rewrite bench.md, scaling.png (and the README block) "
                             "from OUT/bench.json")
    return parser


def _preset(args: argparse.Namespace) -> Preset:
    preset = PRESETS["quick" if args.quick else "full"]
    selection, settings = preset.selection, preset.settings
    only = tuple(o for o in args.only.split(",") if o)
    if only:  # any real model and the training step, the preset's stacks and sizes
        selection = replace(selection, real=None, training=True, only=only)
    if args.sizes is not None:
        selection = replace(selection, sizes=tuple(parse_size(s) for s in args.sizes.split(",")
                                                   if s))
    if args.modes:
        modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
        unknown = sorted(set(modes) - set(MODES))
        if unknown:
            raise SystemExit(f"--modes: unknown {', '.join(unknown)}; valid: {', '.join(MODES)}")
        settings = replace(settings, modes=modes)
    generated_limit = preset.generated_time_limit
    if args.time_limit is not None:
        settings, generated_limit = replace(settings, time_limit=args.time_limit), args.time_limit
    if args.optimal_max_nodes is not None:
        settings = replace(settings, optimal_max_nodes=args.optimal_max_nodes)
    if args.timeout is not None:
        settings = replace(settings, timeout=args.timeout)
    if args.memory_limit_mb is not None:
        settings = replace(settings, memory_mb=args.memory_limit_mb)
    return replace(preset, selection=selection, settings=settings,
                   generated_time_limit=generated_limit)


def run_bench(preset: Preset, workdir: Path, progress: bool = True) -> dict[str, Any]:
    """Measure every selected input in every mode; the `streamalloc.bench/v1` document."""
    began = time.perf_counter()
    document = _document(preset)
    document["startup_s"] = round(runner.startup_s(), 3)
    rows: list[dict[str, Any]] = document["rows"]
    todo = specs(preset.selection)
    for k, spec in enumerate(todo, 1):
        item = spec.make(workdir)
        load_s = _json_load(item)
        settings = preset.settings
        if item.kind == "generated":
            settings = replace(settings, time_limit=preset.generated_time_limit)
        for mode in settings.modes:
            row = measure(item, mode, settings, workdir, load_s)
            rows.append(row)
            if progress:
                print(f"[{k}/{len(todo)}] {item.name} ({item.nodes} nodes) {mode}: "
                      f"{row['status']} allocate {row['allocate_s']} s, emulate "
                      f"{row['emulate_s']} s {row['reason']}", file=sys.stderr, flush=True)
        if item.kind != "real":
            item.path.unlink()
    document["wall_s"] = round(time.perf_counter() - began, 1)
    document["targets"] = report.targets(rows, document["startup_s"])
    return document


def _json_load(item: BenchInput) -> float | None:
    """Best of 3 `json.load` of a generated graph's file, in a fresh interpreter."""
    if item.kind != "generated":
        return None
    return round(runner.json_load(str(item.path))[0], 4)


def _document(preset: Preset) -> dict[str, Any]:
    settings = asdict(preset.settings)
    settings["generated_time_limit"] = preset.generated_time_limit
    return {"format": report.BENCH_FORMAT, "preset": preset.name,
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "version": streamalloc.__version__, "commit": _commit(),
            "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                        "platform": platform.platform(),
                        "load_average": [round(x, 2) for x in os.getloadavg()]},
            "settings": settings, "selection": asdict(preset.selection),
            "wall_s": None, "startup_s": None, "targets": {}, "rows": []}


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def write_outputs(document: dict[str, Any], out: Path, *, update_readme: bool) -> None:
    """bench.json, bench.md and scaling.png in `out`; the README block when asked."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    (out / "bench.md").write_text(report.markdown(document), encoding="utf-8")
    (out / "scaling.png").write_bytes(report.scaling_plot(document))
    if update_readme:
        readme = ROOT / "README.md"
        text = readme.read_text(encoding="utf-8")
        readme.write_text(report.update_readme(text, report.readme_block(document, COMMAND)),
                          encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and write its outputs; 0, or 1 when a row failed (ERROR/TIMEOUT)."""
    args = _parser().parse_args(argv)
    if args.report_only:
        document = json.loads((args.out / "bench.json").read_text(encoding="utf-8"))
        document["targets"] = report.targets(document["rows"], document["startup_s"])
    else:
        with tempfile.TemporaryDirectory(prefix="streamalloc-bench-") as tmp:
            document = run_bench(_preset(args), Path(tmp))
    write_outputs(document, args.out, update_readme=args.update_readme)
    print(report.markdown(document))
    failed = [r for r in document["rows"] if r["status"] in ("ERROR", "TIMEOUT")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
