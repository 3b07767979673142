"""What every variable pass shares: its result and the context it runs in."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamalloc.ir.graph import Graph
from streamalloc.memory.manager import VarManager
from streamalloc.memory.passes.rebuild_state import RebuildStateCtrl

VARIABLE_LIKE = frozenset({"Variable", "VariableV2"})
VAR_LIKE = VARIABLE_LIKE | {"RefData"}  # what the prepare pass treats as a variable
REF_VAR_SRC = "ref_var_src_var_name"
STREAM_LABEL = "_stream_label"


@dataclass(frozen=True, slots=True)
class PassResult:
    """A pass's output: the new graph (the input itself when nothing changed) and the flag."""

    graph: Graph
    changed: bool


@dataclass
class VarPassContext:
    """The session state the passes read and update: its manager, rebuild control, graph id."""

    manager: VarManager
    rebuild: RebuildStateCtrl = field(default_factory=RebuildStateCtrl)
    graph_id: int = 0
