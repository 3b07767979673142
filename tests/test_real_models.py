"""Every real model loads, partitions and round-trips through `streamalloc import`.

The partition of each model is pinned by a golden summary (subgraphs per engine), so a change in
the importers, the engine map or the partitioner shows up as a reviewed diff.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from real_models import GOLDEN_DIR, real_models

from streamalloc.api import with_options
from streamalloc.cli import main
from streamalloc.heuristic.driver import allocate_ge
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import partition_model
from streamalloc.rules.labelling import default_labels

MODELS = real_models()


STEMS = ["light_bvlc_alexnet", "light_densenet121", "light_inception_v1", "light_inception_v2",
         "light_resnet50", "light_shufflenet", "light_squeezenet", "light_vgg19", "light_zfnet512",
         "bert_base", "gpt2_small", "llama_tiny", "t5_small",
         "ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter",
         "ge_proto_00017_OptimizeOriginalGraph_FeGraphFusionAfter",
         "ge_proto_00026_afterUBMatch", "ge_proto_00046_afterUBMatch"]


def test_all_seventeen_models_are_present() -> None:
    assert [m.stem for m in MODELS] == STEMS
    # Exactly one partition and one allocation golden per model: none missing, none stale.
    assert sorted(p.name for p in GOLDEN_DIR.iterdir()) == sorted(
        f"{stem}{suffix}" for stem in STEMS for suffix in (".expected", ".ge.expected"))


def partition_summary(graph: Graph) -> str:
    """Nodes, subgraph count per engine and nodes left outside, per graph of the model."""
    lines = [f"model {graph.name}: {graph.node_count()} nodes, {len(graph.subgraphs)} subgraphs"]
    for name, part in partition_model(graph, default_labels(graph)).items():
        engines = Counter(sg.engine_name for sg in part.subgraphs)
        lines.append(f"graph {name}: {len(part.subgraphs)} engine subgraphs, "
                     f"{len(part.outside)} nodes outside")
        lines += [f"  {engine}: {count}" for engine, count in sorted(engines.items())]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_model_loads_and_partitions(model: Path, golden: Callable[[Path, str], None]) -> None:
    graph = load_graph(model)
    assert graph.node_count() > 40  # zfnet512, the smallest: 42 nodes with its weights folded
    parts = partition_model(graph, default_labels(graph))
    placed = {n for p in parts.values() for sg in p.subgraphs for n in sg.nodes}
    outside = {n for p in parts.values() for n in p.outside}
    assert placed.isdisjoint(outside)
    assert placed | outside == {n.name for n in graph.all_nodes()}
    golden(GOLDEN_DIR / f"{model.stem}.expected", partition_summary(graph))


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_import_round_trip(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "graph.yaml"
    assert main(["import", str(model), "-o", str(out)]) == 0
    assert load_graph(out) == load_graph(model)


PARALLEL = {"ge.streamMaxParallelNum": "AIcoreEngine:4,DNN_VM_AICPU_ASCEND:2",
            "ge.hcomParallel": "1"}


def allocation_summary(graph: Graph) -> str:
    """Streams and nodes per stream in ge mode, with default options and with parallel ones."""
    lines = []
    for label, options in (("default", {}), ("parallel", PARALLEL)):
        allocation = allocate_ge(with_options(graph, options))
        sizes = Counter(n.stream for n in allocation.nodes.values())
        lines.append(f"{label}: {allocation.main_stream_num} logical streams, "
                     f"{allocation.total_stream_num} in total")
        lines += [f"  stream {s}: {sizes[s]} nodes" for s in sorted(sizes)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_model_allocates_in_ge_mode(model: Path, golden: Callable[[Path, str], None]) -> None:
    graph = load_graph(model)
    allocation = allocate_ge(graph)
    assert list(allocation.nodes) == [n.name for n in graph.all_nodes()]
    used = {n.stream for n in allocation.nodes.values() if n.stream >= 0}
    assert used == set(range(allocation.main_stream_num))
    golden(GOLDEN_DIR / f"{model.stem}.ge.expected", allocation_summary(graph))
