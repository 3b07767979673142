"""Golden cases for GE's engine partitioning: one graph per case under goldens/partition/.

Each `<case>.yaml` is a graph whose comment header says which spec example or rule it pins;
`<case>.expected` is what `streamalloc show` prints for it (nodes and engine subgraphs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streamalloc.ir.loaders import load_graph
from streamalloc.ir.partition import partition_model
from streamalloc.report.graph_report import graph_summary

CASES = sorted((Path(__file__).parent / "goldens" / "partition").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_partition_golden(case: Path, golden: Callable[[Path, str], None]) -> None:
    graph = load_graph(case)
    golden(case.with_suffix(".expected"), graph_summary(graph, partition_model(graph)))
