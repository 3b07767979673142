"""The layering of docs/architecture.md, checked over the imports of every module.

`LAYERS` is the table the document shows: each top-level module or sub-package of
`streamalloc` sits in one layer and may import only the layers listed in `may_import` (never
a layer above its own), and a module of its own layer only where `SIBLINGS` allows it. Imports
are read with `ast` from every file under src/streamalloc, lazy imports inside functions and
`TYPE_CHECKING` blocks included. The document is checked against the table, so the two cannot
drift apart.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "streamalloc"
DOC = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Layer:
    """One row of the layer table: its number, name, modules and the layers it may import."""

    level: int
    name: str
    modules: tuple[str, ...]
    may_import: tuple[int, ...]


BELOW_ALLOCATORS = (0, 1, 2, 3)
LAYERS = (
    Layer(0, "base", ("__init__", "errors", "validation", "json_text", "outputs", "plan_fields",
                      "facts", "passes", "schemas", "collector", "recent", "arrays",
                      "mappings", "background"), ()),
    Layer(1, "graph IR", ("ir",), (0,)),
    Layer(2, "rules", ("rules",), (0, 1)),
    Layer(3, "allocation result", ("allocation",), (0, 1, 2)),
    Layer(4, "allocators", ("heuristic", "preset", "solver"), BELOW_ALLOCATORS),
    Layer(5, "sync", ("sync",), BELOW_ALLOCATORS),
    Layer(6, "verify", ("verify",), (0, 1, 2)),
    Layer(7, "memory and report", ("memory", "report"), (*BELOW_ALLOCATORS, 5, 6)),
    Layer(8, "emulator", ("runtime_emu",), (*BELOW_ALLOCATORS, 5, 6, 7)),
    Layer(9, "composition", ("optimal", "graph_checks", "api"), tuple(range(9))),
    Layer(10, "commands", ("commands", "cli", "__main__", "pytest_plugin"), tuple(range(10))),
)
# Imports within one layer that are allowed: (importer, imported module or a prefix of it).
SIBLINGS = frozenset({
    ("outputs", "errors"), ("outputs", "json_text"), ("outputs", "background"),
    ("plan_fields", "errors"),
    ("plan_fields", "json_text"), ("plan_fields", "schemas.parts"),
    ("passes", "errors"), ("schemas", "errors"), ("schemas", "validation"),
    ("memory", "report.table"),
    ("api", "optimal"), ("api", "graph_checks"),
    ("cli", "commands"),
    ("__main__", "cli"),
})
LAYER_OF = {module: layer for layer in LAYERS for module in layer.modules}


@dataclass(frozen=True)
class Import:
    """One import of a streamalloc module: where it is and the dotted name it imports."""

    where: str
    importer: str  # top-level module or sub-package of the importing file
    target: str  # dotted name below streamalloc: "sync.passes", "api", "__init__"

    @property
    def top(self) -> str:
        """The top-level module or sub-package imported."""
        return self.target.split(".")[0]


def _exists(dotted: str) -> bool:
    path = PACKAGE.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _names(node: ast.Import | ast.ImportFrom, parts: tuple[str, ...]) -> Iterator[str]:
    """The dotted names below streamalloc that one import statement imports."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("streamalloc."):
                yield alias.name.removeprefix("streamalloc.")
        return
    if node.level:  # relative: from the file's own package, or `level - 1` packages up
        base = ["streamalloc", *parts[:-1]]
        base = base[:len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    if module != "streamalloc" and not module.startswith("streamalloc."):
        return
    below = module.removeprefix("streamalloc").removeprefix(".")
    for alias in node.names:
        # `from streamalloc import api` imports the module api; `__version__` is __init__
        full = f"{below}.{alias.name}" if below else alias.name
        yield full if _exists(full) else (below or "__init__")


def _top(relative: Path) -> str:
    first = relative.parts[0]
    return first.removesuffix(".py") if len(relative.parts) == 1 else first


def imports() -> list[Import]:
    """Every import of a streamalloc module by a file under src/streamalloc."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += [Import(f"{relative}:{node.lineno}", _top(relative), name)
                          for name in dict.fromkeys(_names(node, relative.parts))]
    return found


def top_level_modules() -> set[str]:
    """The top-level modules and sub-packages (any directory holding Python files)."""
    found = {p.stem for p in PACKAGE.glob("*.py")}
    found |= {p.name for p in PACKAGE.iterdir()
              if p.is_dir() and p.name != "__pycache__" and any(p.rglob("*.py"))}
    return found


def _allowed_sibling(item: Import) -> bool:
    return any(item.importer == importer and (item.target == prefix
                                              or item.target.startswith(prefix + "."))
               for importer, prefix in SIBLINGS)


def _describe(item: Import) -> str:
    here, there = LAYER_OF[item.importer], LAYER_OF[item.top]
    return (f"{item.where}: {item.importer} (L{here.level} {here.name}) imports streamalloc."
            f"{item.target} (L{there.level} {there.name}); L{here.level} may import "
            f"{_levels(here.may_import) or 'nothing'} and the siblings SIBLINGS lists")


def test_every_module_has_a_layer() -> None:
    modules = top_level_modules()
    missing = sorted(modules - LAYER_OF.keys())
    assert not missing, (f"modules without a layer: {missing}; add them to LAYERS here and to "
                         "the table of docs/architecture.md")
    stale = sorted(LAYER_OF.keys() - modules)
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_layers_are_well_formed() -> None:
    assert [layer.level for layer in LAYERS] == list(range(len(LAYERS)))
    for layer in LAYERS:
        assert all(level < layer.level for level in layer.may_import), layer
    for importer, prefix in SIBLINGS:
        assert LAYER_OF[importer] is LAYER_OF[prefix.split(".")[0]], (importer, prefix)


def test_no_upward_or_unlisted_import() -> None:
    bad = []
    for item in imports():
        here, there = LAYER_OF.get(item.importer), LAYER_OF.get(item.top)
        if here is None or there is None or item.importer == item.top:
            continue  # an unlayered module fails test_every_module_has_a_layer
        ok = _allowed_sibling(item) if there is here else there.level in here.may_import
        if not ok:
            bad.append(_describe(item))
    assert not bad, "imports against the layering (docs/architecture.md):\n" + "\n".join(bad)


def test_no_import_cycle_between_packages() -> None:
    graph = nx.DiGraph()
    graph.add_edges_from((i.importer, i.top) for i in imports() if i.importer != i.top)
    cycles = sorted(sorted(cycle) for cycle in nx.simple_cycles(graph))
    assert not cycles, f"import cycles between packages: {cycles}"


def test_verify_is_independent_of_sync_and_the_allocators() -> None:
    forbidden = {"sync", "heuristic", "preset", "solver", "allocation", "runtime_emu", "memory",
                 "report", "api", "optimal", "commands", "cli"}
    seen = sorted({i.top for i in imports() if i.importer == "verify"} & forbidden)
    assert not seen, f"verify imports {seen}: a bug there could hide itself in verify"


def test_the_scanner_sees_lazy_and_package_imports() -> None:
    found = {(i.importer, i.target) for i in imports()}
    assert ("cli", "api") in found  # `from streamalloc import __version__, api`
    assert ("cli", "__init__") in found
    assert ("memory", "report.table") in found  # lazy, inside plan_text


# --- the document ---------------------------------------------------------------------------

def _levels(levels: tuple[int, ...]) -> str:
    """`(0, 1, 2, 3, 5)` -> `L0-L3, L5`."""
    runs: list[list[int]] = []
    for level in levels:
        if runs and level == runs[-1][-1] + 1:
            runs[-1].append(level)
        else:
            runs.append([level])
    return ", ".join(f"L{r[0]}" if len(r) == 1 else f"L{r[0]}-L{r[-1]}" for r in runs)


def _doc_rows(heading: str) -> list[list[str]]:
    """The body rows of the first table after `heading` in docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the header and the --- line


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_document_shows_the_layer_table() -> None:
    rows = _doc_rows("## Layers")
    assert [r[0] for r in rows] == [f"L{layer.level}" for layer in LAYERS]
    for row, layer in zip(rows, LAYERS, strict=True):
        assert row[1] == layer.name, (row[0], row[1])
        assert sorted(_ticked(row[2])) == sorted(layer.modules), (row[0], row[2])
        assert row[4] == (_levels(layer.may_import) or "-"), (row[0], row[4])


def test_document_lists_the_allowed_siblings() -> None:
    rows = _doc_rows("### Imports within a layer")
    assert {(_ticked(r[0])[0], _ticked(r[1])[0]) for r in rows} == SIBLINGS
