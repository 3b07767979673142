"""Small graphs written as YAML node lines, for tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders import load_graph


def graph_of(tmp_path: Path, name: str, nodes: Sequence[str]) -> Graph:
    """The graph `name` whose nodes are these YAML flow mappings (written under tmp_path)."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"format: streamalloc.graph/v1\nname: {name}\nnodes:\n"
                    + "".join(f"  - {n}\n" for n in nodes))
    return load_graph(path)


def fork_join_chain_nodes(rng: random.Random, modules: int) -> list[str]:
    """A chain of fork-joins: each module's fork feeds 2 to 3 branches of 1 to 3 tasks of
    random time and block dim, which its join reads; some branch tasks take no device work."""
    nodes, last = ["{name: x, type: Data}"], "x"
    for m in range(modules):
        fork = f"f{m}"
        nodes.append(f"{{name: {fork}, type: Relu, inputs: [{last}], "
                     f"cost_us: {rng.choice([1, 3, 5])}, attrs: {{block_dim: 32}}}}")
        ends = []
        for b in range(rng.randint(2, 3)):
            prev = fork
            for k in range(rng.randint(1, 3)):
                name = f"m{m}b{b}t{k}"
                if rng.random() < 0.1:
                    nodes.append(f"{{name: {name}, type: Reshape, inputs: [{prev}], "
                                 "task_count: 0}")
                else:
                    nodes.append(f"{{name: {name}, type: Relu, inputs: [{prev}], "
                                 f"cost_us: {rng.choice([1, 2, 5, 8])}, "
                                 f"attrs: {{block_dim: {rng.choice([4, 16, 20, 32])}}}}}")
                prev = name
            ends.append(prev)
        last = f"j{m}"
        nodes.append(f"{{name: {last}, type: Concat, inputs: [{', '.join(ends)}], "
                     f"cost_us: {rng.choice([1, 3])}}}")
    return [*nodes, f"{{name: out, type: NetOutput, inputs: [{last}]}}"]


def random_nodes(rng: random.Random, size: int) -> list[str]:
    """A random DAG: each node reads one to three earlier ones; some take no device work (a
    NOP on its stream), the others a random time and block dim (wide ones contend)."""
    nodes, names = ["{name: x, type: Data}"], []
    for i in range(size):
        inputs = ", ".join(rng.sample(names, min(len(names), rng.choice([1, 2, 2, 3]))) or ["x"])
        if rng.random() < 0.1:
            nodes.append(f"{{name: n{i}, type: Reshape, inputs: [{inputs}], task_count: 0}}")
        else:
            nodes.append(f"{{name: n{i}, type: Add, inputs: [{inputs}], "
                         f"cost_us: {rng.choice([1, 2, 3, 5, 8, 13, 20])}, "
                         f"attrs: {{block_dim: {rng.choice([1, 4, 16, 20, 32])}}}}}")
        names.append(f"n{i}")
    return [*nodes, f"{{name: out, type: NetOutput, inputs: [{', '.join(names)}]}}"]
