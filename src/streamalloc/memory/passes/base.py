"""What every variable pass shares: its shape, its result, the session state it runs in.

A pass is a frozen dataclass with a `name` (GE's pass, kebab-case), typed options as fields and
one `apply(graph, ctx=None) -> PassResult`; it never writes into the input graph. `ctx` is the
session: its manager, rebuild control and graph id. Passes that need the session raise TypeError
without one.

`RebuildStateCtrl` is GE's GraphRebuildStateCtrl: how often a variable changed format, which
graphs must rebuild. A variable may change its format only while its change count is below 1
(spec 15): the first graph that fuses a variable's format conversions decides its format for the
whole session; later graphs re-insert the stored road instead. Marking a change flags every graph
that uses the variable (and the graph being compiled, until its build ends) as needing a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from streamalloc.ir.graph import Graph
from streamalloc.memory.codes import MAX_VAR_CHANGES, REF_VAR_SRC

if TYPE_CHECKING:
    from streamalloc.memory.manager import VarManager

VARIABLE_LIKE = frozenset({"Variable", "VariableV2"})
VAR_LIKE = VARIABLE_LIKE | {"RefData"}  # what the prepare pass treats as a variable
RESOURCE_TYPES = VARIABLE_LIKE | {"VarHandleOp"}  # what a graph's resources are
STREAM_LABEL = "_stream_label"

__all__ = [
    "REF_VAR_SRC", "RESOURCE_TYPES", "STREAM_LABEL", "VARIABLE_LIKE", "VAR_LIKE", "PassResult",
    "RebuildStateCtrl", "VarPass", "VarPassContext", "require_context",
]


class RebuildStateCtrl:
    """Change counts per variable name and the rebuild flags of graphs."""

    def __init__(self) -> None:
        self.change_counts: dict[str, int] = {}
        self.graph_resources: dict[int, dict[str, None]] = {}
        self.needs_rebuild: dict[int, None] = {}
        self.compiling: int | None = None

    def add_graph(self, graph_id: int, graph: Graph | None = None,
                  names: Iterable[str] = ()) -> None:
        """Record the variables a graph uses (its Variable/VariableV2/VarHandleOp nodes + names)."""
        found = [n.name for n in graph.all_nodes() if n.type in RESOURCE_TYPES] if graph else []
        resources = self.graph_resources.setdefault(graph_id, {})
        resources.update(dict.fromkeys([*found, *names]))

    def remove_graph(self, graph_id: int) -> None:
        """Forget a graph's resources and rebuild flag."""
        self.graph_resources.pop(graph_id, None)
        self.needs_rebuild.pop(graph_id, None)

    def start_build(self, graph_id: int) -> None:
        """The graph now compiling (it is flagged too when it changes a variable)."""
        self.compiling = graph_id

    def is_var_permit_to_change_formats(self, name: str) -> bool:
        """True while the variable changed fewer than MAX_VAR_CHANGES (1) times."""
        return self.change_counts.get(name, 0) < MAX_VAR_CHANGES

    def set_state_changed(self, name: str) -> None:
        """Count a format change and flag the graphs using the variable."""
        self.change_counts[name] = self.change_counts.get(name, 0) + 1
        for graph_id, resources in self.graph_resources.items():
            if name in resources:
                self.needs_rebuild[graph_id] = None
        if self.compiling is not None:
            self.needs_rebuild[self.compiling] = None

    def is_graph_need_rebuild(self, graph_id: int) -> bool:
        """Whether a variable the graph uses changed since it was built."""
        return graph_id in self.needs_rebuild

    def set_graph_build_end(self, graph_id: int) -> None:
        """The graph's build ended: clear its flag."""
        self.needs_rebuild.pop(graph_id, None)
        if self.compiling == graph_id:
            self.compiling = None


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


class VarPass(Protocol):
    """The shape of every variable pass (see the module docstring)."""

    name: ClassVar[str]

    def apply(self, graph: Graph, ctx: VarPassContext | None = None) -> PassResult:
        """The new graph and whether it changed."""
        ...


def require_context(ctx: VarPassContext | None, pass_name: str) -> VarPassContext:
    """The session context of a pass that needs one; TypeError (a caller's mistake) without."""
    if ctx is None:
        raise TypeError(f"variable pass {pass_name!r} reads and updates the session: call "
                        "apply(graph, VarPassContext(manager))")
    return ctx
