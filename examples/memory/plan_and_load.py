"""Plan a graph's variable memory, print it, load it into emulated device memory.

    python examples/memory/plan_and_load.py [GRAPH]
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamalloc.ir.loaders import load_graph
from streamalloc.memory.device import EmulatedMemory
from streamalloc.memory.loading import load_into_device
from streamalloc.memory.plan import plan_text, variable_plan


def main(path: str) -> None:
    """Plan, print, load and report."""
    plan = variable_plan(load_graph(path))
    print(plan_text(plan))
    memory = EmulatedMemory(rdma_pool_size=1 << 20)
    loaded = load_into_device(plan, memory, weight_dir=Path(path).parent)
    print(loaded.summary())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_name("train_vars.yaml")))
