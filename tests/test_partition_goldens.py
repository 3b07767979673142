"""Golden cases for GE's engine partitioning, over every graph under goldens/cases/.

Each `<case>.yaml` is a graph whose comment header says which spec example or rule it pins;
`<case>.partition.expected` is what `streamalloc show` prints for it (nodes and subgraphs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import partition_model
from streamalloc.report.graph_report import graph_summary
from streamalloc.rules.labelling import default_labels

CASES = sorted((Path(__file__).parent / "goldens" / "cases").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_partition_golden(case: Path, golden: Callable[[Path, str], None]) -> None:
    graph = load_graph(case)
    parts = partition_model(graph, default_labels(graph))
    golden(case.with_suffix(".partition.expected"), graph_summary(graph, parts))
