"""The variable passes, one per module, each a `VarPass` (base.py): GE's name and one `apply`.

| name | GE pass | does |
|---|---|---|
| `variable-prepare-op` | VariablePrepareOpPass | VarRefs after in-place writers (spec 16) |
| `variable-op` | VariableOpPass | variable acceleration: format fusion (spec 15) |
| `var-is-initialized-op` | VarIsInitializedOpPass | fold initialized queries (spec 17) |
| `file-constant-export` | external weight export | Const -> FileConstant (`ge.externalWeight`) |

Each returns a new graph and a changed flag; none writes into the input graph. `VAR_PASSES` is
the one table of passes by name (no registration by import side effect).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from streamalloc.ir.graph import Graph
from streamalloc.memory.passes.base import PassResult, RebuildStateCtrl, VarPass, VarPassContext
from streamalloc.memory.passes.export_weights import FileConstantExportPass
from streamalloc.memory.passes.prepare import VariablePrepareOpPass
from streamalloc.memory.passes.var_is_initialized import VarIsInitializedOpPass
from streamalloc.memory.passes.variable_op import VariableOpPass

VAR_PASSES: Mapping[str, type[VarPass]] = MappingProxyType({
    cls.name: cls for cls in (VariablePrepareOpPass, VariableOpPass, VarIsInitializedOpPass,
                              FileConstantExportPass)
})


def run_passes(graph: Graph, names: Iterable[str], ctx: VarPassContext) -> PassResult:
    """Run passes by name in the given order; unknown names are listed with the known ones."""
    changed = False
    for name in names:
        if name not in VAR_PASSES:
            raise ValueError(f"unknown variable pass {name!r}; known: {', '.join(VAR_PASSES)}")
        result = VAR_PASSES[name]().apply(graph, ctx)
        graph, changed = result.graph, changed or result.changed
    return PassResult(graph, changed)


__all__ = [
    "VAR_PASSES", "FileConstantExportPass", "PassResult", "RebuildStateCtrl",
    "VarIsInitializedOpPass", "VarPass", "VarPassContext", "VariableOpPass",
    "VariablePrepareOpPass", "run_passes",
]
