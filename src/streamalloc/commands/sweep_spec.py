"""Sweep specs (`streamalloc.sweep-spec/v1`, docs/sweep-format.md): the cross product of graphs,
rule sets, graph options, modes and solver settings that `streamalloc sweep SPEC.yaml` runs.

Every key takes one value or a list of values; a list is an axis of the grid. The points come
in one fixed order, whatever runs them: graph, rule set, options (axes in the order of the keys),
mode, then solver settings, which only the optimal mode crosses (a `ge` point has none). Errors
name the spec file, the line and the field (exit 3).
"""

from __future__ import annotations

import glob
import itertools
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamalloc import api
from streamalloc.commands.compare import MODES
from streamalloc.errors import InputError
from streamalloc.ir.loaders.located import line_of, load_mapping
from streamalloc.rules import builtin_names
from streamalloc.runtime_emu.cost_table import load_cost_table
from streamalloc.schemas import describe, expected, field_name
from streamalloc.validation import SchemaCheck

if TYPE_CHECKING:
    import jsonschema

SPEC_FORMAT = "streamalloc.sweep-spec/v1"
MAX_POINTS = 1_000_000  # points one sweep may make
DOC = "docs/sweep-format.md"
DEFAULT_RULES = "default"  # GE's own rule set for each graph, as without --rules


def _axis(schema: Mapping[str, Any]) -> dict[str, Any]:
    """One value, or a non-empty list of them (an axis of the grid)."""
    return {"anyOf": [dict(schema), {"type": "array", "minItems": 1, "items": dict(schema)}]}


_NAME = {"type": "string", "minLength": 1}
SOLVER_SETTINGS: Mapping[str, dict[str, Any]] = {
    "objective": {"type": "string", "enum": ["events", "makespan"]},
    "concurrency": {"type": "string", "enum": ["ge", "full"]},
    "makespan_slack": {"type": "number", "minimum": 0},
    "time_limit": {"type": "number", "minimum": 0},
    "seed": {"type": "integer", "minimum": 0},
    "workers": {"type": "integer", "minimum": 1},
    "event_budget": {"type": "integer", "minimum": 0},
}
SPEC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://streamalloc.dev/schema/sweep-spec-v1.json",
    "title": "streamalloc sweep spec",
    "description": f"format {SPEC_FORMAT}: the cross product `streamalloc sweep` runs ({DOC}); "
                   "every key takes a value or a list of values (an axis)",
    "type": "object", "additionalProperties": False,
    "required": ["format", "graphs"],
    "properties": {
        "format": {"const": SPEC_FORMAT},
        "graphs": _axis(_NAME),
        "rules": _axis(_NAME),
        "options": {"type": "object",
                    "additionalProperties": _axis({"type": ["string", "integer", "number"]})},
        "modes": _axis({"type": "string", "enum": list(MODES)}),
        "solver": {"type": "object", "additionalProperties": False,
                   "properties": {k: _axis(v) for k, v in SOLVER_SETTINGS.items()}},
        "cost": _NAME,
    },
}
_CHECK = SchemaCheck(SPEC_SCHEMA)

Settings = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: one graph in one mode with one rule set, options and solver settings.

    Small and picklable (a process or a Ray worker runs it): it names files, and the worker
    reads them. `file` is the graph as the spec names it, `path` where to read it.
    """

    index: int
    file: str
    path: str
    rules: str  # a shipped rule set, a rule file, or DEFAULT_RULES
    rules_path: str | None  # what to load (None: GE's rule set for the graph)
    options: tuple[tuple[str, str], ...]
    mode: str
    solver: Settings
    cost: str | None


@dataclass(frozen=True)
class SweepSpec:
    """A checked spec: every file found, every list an axis."""

    source: str
    graphs: tuple[tuple[str, str], ...]  # (as named, where to read)
    rules: tuple[tuple[str, str | None], ...]  # (as named, what to load)
    options: tuple[tuple[str, tuple[str, ...]], ...]
    modes: tuple[str, ...]
    solver: tuple[tuple[str, tuple[Any, ...]], ...]
    cost: str | None

    def point_count(self) -> int:
        """How many points `points` makes, without making them."""
        solver = math.prod(len(values) for _, values in self.solver)
        per_options = sum(solver if mode == "optimal" else 1 for mode in self.modes)
        return len(self.graphs) * len(self.rules) * per_options * \
            math.prod(len(values) for _, values in self.options)

    def points(self) -> list[SweepPoint]:
        """Every point of the cross product, in the order the spec lists."""
        found: list[SweepPoint] = []
        for (file, path), (rules, rules_path), options in itertools.product(
                self.graphs, self.rules, _grid(self.options)):
            for mode in self.modes:
                for solver in _grid(self.solver) if mode == "optimal" else [()]:
                    found.append(SweepPoint(len(found), file, path, rules, rules_path,
                                            options, mode, solver, self.cost))
        return found


def _grid(axes: Sequence[tuple[str, tuple[Any, ...]]]) -> Iterator[tuple[tuple[str, Any], ...]]:
    keys = [key for key, _ in axes]
    for values in itertools.product(*(values for _, values in axes)):
        yield tuple(zip(keys, values, strict=True))


def load_spec(path: str) -> SweepSpec:
    """Read and check a sweep spec; InputError (exit 3) naming the file, line and field."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such sweep spec") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the sweep spec: {exc}") from None
    document = _parse(text, path)
    error = _CHECK.first_error(document)
    if error is not None:
        where = f"{path}:{line_of(document, _place(error))}"
        raise InputError(f"{where}: {_what(error)} ({DOC})")
    for key, value in document.get("solver", {}).items():
        for v in _listed(value):  # the schema's bounds let NaN through, and infinities count
            if isinstance(v, float) and not math.isfinite(v):
                raise InputError(f"{path}:{line_of(document, ['solver', key])}: field "
                                 f"solver.{key}: expected a finite number, found {v} ({DOC})")
    base = Path(path).resolve().parent
    located = _Located(path, document)
    spec = SweepSpec(
        path, _graphs(document["graphs"], base, located),
        _rules(document.get("rules", DEFAULT_RULES), base, located),
        tuple((k, tuple(_option(v) for v in _listed(value)))
              for k, value in document.get("options", {}).items()),
        tuple(dict.fromkeys(_listed(document.get("modes", list(MODES))))),
        tuple((k, tuple(_listed(value))) for k, value in document.get("solver", {}).items()),
        _cost(document.get("cost"), base, located))
    if spec.point_count() > MAX_POINTS:  # counted before the grid is made: 40 axes of 2
        # values once ran out of memory building 2^40 points
        raise InputError(f"{path}: the spec makes {spec.point_count():,} points, more than "
                         f"{MAX_POINTS:,}; split it into several sweeps ({DOC})")
    return spec


def _what(error: jsonschema.ValidationError) -> str:
    """`field F: expected X, found Y`; for a value that is neither one value nor a list of them,
    what one value is."""
    if error.validator == "anyOf" and isinstance(error.schema, Mapping):
        one = error.schema["anyOf"][0]
        return (f"field {field_name(error)}: expected {expected(one)}, or a list of them, "
                f"found {json.dumps(error.instance)[:60]}")
    return describe(error, "\0", SPEC_SCHEMA).replace("field \0", "the sweep spec")


def _place(error: jsonschema.ValidationError) -> list[Any]:
    """Where an error is in the document: an unknown key's own line, not its mapping's."""
    place = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        place += sorted(k for k in error.instance if k not in known)[:1]
    return place


@dataclass(frozen=True)
class _Located:
    """The spec file and its parsed document, for messages that name a line."""

    source: str
    document: Any

    def error(self, where: list[Any], message: str) -> InputError:
        field = where[0] + "".join(f"[{step}]" for step in where[1:])
        line = line_of(self.document, where)
        return InputError(f"{self.source}:{line}: field {field}: {message} ({DOC})")


def _parse(text: str, source: str) -> Any:
    return load_mapping(text, source, InputError, f"'format' and 'graphs' ({DOC})")


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _option(value: str | float) -> str:
    """Graph options are strings (as --set gives them); YAML reads `1` as a number."""
    return value if isinstance(value, str) else str(value)


def _graphs(value: Any, base: Path, located: _Located) -> tuple[tuple[str, str], ...]:
    """Each entry a file or a glob relative to the spec; a glob's matches in sorted order."""
    found: dict[str, str] = {}  # where to read -> as named; a file named twice runs once
    single = not isinstance(value, list)
    for i, entry in enumerate(_listed(value)):
        where = ["graphs"] if single else ["graphs", i]
        if glob.has_magic(entry):
            matches = sorted(glob.glob(str(base / entry), recursive=True))
            if not matches:
                raise located.error(where, f"no file matches {entry!r} (relative to {base})")
            for match in matches:
                found.setdefault(os.path.abspath(match), os.path.relpath(match, base))
        elif (base / entry).is_file():
            found.setdefault(os.path.abspath(base / entry), entry)
        else:
            raise located.error(where, f"no graph file {entry!r} (relative to {base})")
    return tuple((file, path) for path, file in found.items())


def _rules(value: Any, base: Path, located: _Located) -> tuple[tuple[str, str | None], ...]:
    """Shipped rule set names, rule files relative to the spec, or `default` (GE's for each
    graph); each loaded once here, so that a broken rule file stops the sweep before it runs."""
    found: list[tuple[str, str | None]] = []
    single = not isinstance(value, list)
    for i, entry in enumerate(_listed(value)):
        if entry == DEFAULT_RULES:
            found.append((entry, None))
            continue
        if entry in builtin_names():
            found.append((entry, entry))
            continue
        path = base / entry
        if not path.is_file():
            raise located.error(["rules"] if single else ["rules", i],
                                f"no shipped rule set or rule file {entry!r}; shipped: "
                                f"{DEFAULT_RULES}, {', '.join(builtin_names())}")
        api.load_rule_set(path)
        found.append((entry, os.path.abspath(path)))
    return tuple(dict.fromkeys(found))


def _cost(value: str | None, base: Path, located: _Located) -> str | None:
    if value is None:
        return None
    path = base / value
    if not path.is_file():
        raise located.error(["cost"], f"no cost table {value!r} (relative to {base})")
    load_cost_table(str(path))
    return os.path.abspath(path)
