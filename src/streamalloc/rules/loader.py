"""Load, validate, merge and order rule files.

Errors name the file and line, the rule and key, and the valid choices (exit 3). Shipped rule
sets live in `rules/builtin/*.yaml` and are named by their stem (e.g. `ge-static-multi-stream`).
A file with `extends: BASE` adds to BASE (a rule with an inherited name replaces it; `disable:
true` removes it); a file without `extends` stands alone. A file built on `free` (its chain
of `extends` ends there) binds the optimal mode with its own rules alone; ge mode runs them
over GE's default rule set (`ge_rules_for`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streamalloc.errors import RuleSchemaError
from streamalloc.ir.graph import Graph
from streamalloc.ir.loaders.located import line_of, load_mapping
from streamalloc.rules.kinds import KINDS, MATCH_REF
from streamalloc.rules.model import FREE, Rule, RuleSet, builtin_source
from streamalloc.rules.predicates import NodePredicate, compile_match, compile_when
from streamalloc.rules.schema import RULES_SCHEMA
from streamalloc.validation import SchemaCheck, explain

_CHECK = SchemaCheck(RULES_SCHEMA)
_MAX_EXTENDS = 8


def builtin_names() -> list[str]:
    """Names of the shipped rule sets."""
    folder = resources.files("streamalloc.rules").joinpath("builtin")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _builtin_text(name: str) -> str:
    folder = resources.files("streamalloc.rules").joinpath("builtin")
    return folder.joinpath(f"{name}.yaml").read_text("utf-8")


@cache
def builtin_rules(name: str) -> RuleSet:
    """A shipped rule set by name."""
    if name not in builtin_names():
        raise RuleSchemaError(f"unknown rule set {name!r}; shipped: {', '.join(builtin_names())}")
    return _load_text(_builtin_text(name), builtin_source(name), 0)


def default_rule_set(graph: Graph) -> RuleSet:
    """The shipped rule set GE would use for this graph."""
    if graph.dynamic_shape:
        return builtin_rules("ge-dynamic-shape")
    if graph.option("ge.enableSingleStream") == "true":
        return builtin_rules("ge-static-single-stream")
    return builtin_rules("ge-static-multi-stream")


def ge_rules_for(rules: RuleSet | None, graph: Graph) -> RuleSet:
    """The rule set ge mode runs for `rules`: the optimal mode's baseline, compare's ge rows.
    GE's default for the graph where none is given or `free`; for a set built on `free`,
    GE's default less the rules it disables, with the set's rules added (one named like a GE
    rule replaces it), as if the file extended GE's default; else `rules` itself.

    >>> from streamalloc.ir.builder import GraphBuilder
    >>> builder = GraphBuilder("g")
    >>> builder.add_node("x", "Data")
    >>> ge_rules_for(builtin_rules("free"), builder.build()).name
    'ge-static-multi-stream'
    """
    if rules is None or rules.is_free:
        return default_rule_set(graph)
    if not rules.on_free:
        return rules
    base = default_rule_set(graph)
    merged = {r.name: r for r in base.rules if r.name not in rules.disabled} | \
        {r.name: r for r in rules.rules}
    return RuleSet(rules.name, base.flow, _ordered(list(merged.values()), rules.source),
                   rules.source, over_ge=True)


def rule_set(path_or_name: str | Path) -> RuleSet:
    """A shipped rule set by name, else a rule file."""
    if str(path_or_name) in builtin_names():
        return builtin_rules(str(path_or_name))
    return load_rules(path_or_name)


def load_rules(path: str | Path) -> RuleSet:
    """Load a rule file (merging what it extends)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RuleSchemaError(f"{path}: no such rule file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleSchemaError(f"{path}: cannot read the rule file: {exc}") from None
    return _load_text(text, str(path), 0)


def _load_text(text: str, source: str, depth: int) -> RuleSet:
    document = _parse(text, source)
    error = _CHECK.first_error(document)
    if error is not None:
        where = list(error.absolute_path)
        raise RuleSchemaError(f"{_at(source, document, where)}: {_what(document, where)}: "
                              f"{explain(error)}")
    base = _base(document, source, depth)
    on_free = base is not None and (base.on_free or base.source == builtin_source(FREE))
    own = [_rule(document, i, source) for i in range(len(document["rules"]))]
    disabled = _disabled_of_ge(base, own) if on_free else ()
    kept = [entry for entry in own if entry[0] is not None or entry[1] not in disabled]
    rules = _merge(base.rules if base else (), kept, document, source)
    flow = document.get("flow") or (base.flow if base else "static")
    name = document.get("name") or (base.name if base else Path(source).stem)
    unknown = " (a file built on 'free' inherits none of GE's rules: place it among their " \
        "passes by priority)" if on_free else ""
    return RuleSet(name, flow, _ordered(rules, source, unknown), source, on_free,
                   disabled=disabled)


def _disabled_of_ge(base: RuleSet | None, own: list[tuple[Rule | None, str, str]]
                    ) -> tuple[str, ...]:
    """In a file built on `free`: the names of GE's rules it disables (for ge mode, which runs
    it over GE's default rules; the search keeps none of GE's anyway), its base's included. A
    name no shipped GE rule set has is exit 3, as a disable of no inherited rule is."""
    inherited = {r.name for r in base.rules} if base else set()
    names = list(base.disabled) if base else []
    ge_names = {r.name for s in builtin_names() if s != FREE for r in builtin_rules(s).rules}
    for rule, name, origin in own:
        if rule is None and name not in inherited:
            if name not in ge_names:
                mine = ", ".join(sorted(inherited)) or "none"
                raise RuleSchemaError(
                    f"{origin}: rule {name!r} is disabled but neither an inherited rule nor "
                    f"one of GE's has that name; inherited: {mine}; GE's: "
                    f"{', '.join(sorted(ge_names))}")
            names.append(name)
    return tuple(sorted(set(names)))


def _parse(text: str, source: str) -> Any:
    return load_mapping(text, source, RuleSchemaError, "'format' and 'rules'")


def _at(source: str, document: Any, where: list[Any]) -> str:
    line = line_of(document, where)
    return f"{source}:{line}" if line else source


def _what(document: Any, where: list[Any]) -> str:
    if len(where) >= 2 and where[0] == "rules" and isinstance(where[1], int):
        rule = document["rules"][where[1]]
        name = rule.get("name") if isinstance(rule, Mapping) else None
        rest = ".".join(str(p) for p in where[2:])
        who = f"rule {name!r}" if isinstance(name, str) else f"rule #{where[1] + 1}"
        return who + (f" field {rest!r}" if rest else "")
    return f"field {'.'.join(map(str, where))!r}" if where else "the document"


def _base(document: Mapping[str, Any], source: str, depth: int) -> RuleSet | None:
    parent = document.get("extends")
    if not parent:
        return None
    if depth >= _MAX_EXTENDS:
        raise RuleSchemaError(f"{source}: 'extends' chain deeper than {_MAX_EXTENDS} files "
                              "(does it extend itself?)")
    if parent in builtin_names():
        return _load_text(_builtin_text(parent), builtin_source(parent), depth + 1)
    path = Path(source).parent / parent
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # missing, a directory, a name too long, not UTF-8,
        # a NUL in the name
        reason = "" if isinstance(exc, FileNotFoundError) else f" ({exc})"
        raise RuleSchemaError(f"{_at(source, document, ['extends'])}: extends {parent!r}: neither "
                              f"a shipped rule set ({', '.join(builtin_names())}) nor a "
                              f"readable file{reason}") from None
    return _load_text(text, str(path), depth + 1)


def _rule(document: Mapping[str, Any], index: int, source: str) -> tuple[Rule | None, str, str]:
    """(rule or None when disabled, name, origin)."""
    raw = document["rules"][index]
    origin = _at(source, document, ["rules", index])
    if raw.get("disable"):
        return None, raw["name"], origin
    if "kind" not in raw:
        raise RuleSchemaError(f"{origin}: rule {raw['name']!r}: missing 'kind'; valid kinds: "
                              f"{', '.join(sorted(KINDS))}")
    options = dict(raw.get("options") or {})
    _check_options(raw["name"], raw["kind"], options, origin)
    match = _compiled(raw.get("match"), ["rules", index, "match"], (document, source))
    option_matches = {key: _compiled(options[key], ["rules", index, "options", key],
                                     (document, source))
                      for key, schema in KINDS[raw["kind"]].options.items()
                      if schema == MATCH_REF and key in options}
    rule = Rule(
        name=raw["name"], kind=raw["kind"], priority=int(raw.get("priority", 0)),
        match=match, when=compile_when(raw.get("when")),
        options=MappingProxyType(options), option_matches=MappingProxyType(option_matches),
        match_block=MappingProxyType(raw.get("match") or {}),
        when_block=MappingProxyType(raw.get("when") or {}), after=tuple(raw.get("after", ())),
        before=tuple(raw.get("before", ())), description=raw.get("description", ""),
        origin=origin)
    return rule, raw["name"], origin


def _compiled(block: Any, where: list[Any], doc: tuple[Mapping[str, Any], str]
              ) -> NodePredicate:
    """A match block compiled now, so that a bad regular expression is a load error."""
    document, source = doc
    try:
        return compile_match(block)
    except re.error as exc:
        field = ".".join(str(p) for p in where[2:])
        raise RuleSchemaError(f"{_at(source, document, where)}: {_what(document, where[:2])} "
                              f"field {field!r}: invalid regular expression: {exc}") from None


@cache
def _options_check(kind: str) -> SchemaCheck:
    spec = KINDS[kind]
    return SchemaCheck({"type": "object", "additionalProperties": False,
                        "properties": spec.options, "required": list(spec.required),
                        "$defs": RULES_SCHEMA["$defs"]})


def _check_options(name: str, kind: str, options: Mapping[str, Any], origin: str) -> None:
    error = _options_check(kind).first_error(options)
    if error is not None:
        path = ".".join(map(str, error.absolute_path))
        field = f"options.{path}" if path else "options"
        raise RuleSchemaError(f"{origin}: rule {name!r} ({kind}) field {field!r}: "
                              f"{explain(error)}")


def _merge(base: tuple[Rule, ...], own: list[tuple[Rule | None, str, str]],
           document: Mapping[str, Any], source: str) -> list[Rule]:
    rules = {r.name: r for r in base}
    seen: dict[str, str] = {}
    for rule, name, origin in own:
        if name in seen:
            raise RuleSchemaError(f"{origin}: rule name {name!r} is used twice (first at "
                                  f"{seen[name]})")
        seen[name] = origin
        if rule is None:
            if name not in rules:
                raise RuleSchemaError(f"{origin}: rule {name!r} is disabled but no inherited rule "
                                      f"has that name; inherited: {', '.join(rules) or 'none'}")
            del rules[name]
        else:
            rules[name] = rule
    return list(rules.values())


def _ordered(rules: list[Rule], source: str, unknown: str = "") -> tuple[Rule, ...]:
    """Topological order of after/before, ties broken by (priority, name); `unknown` ends the
    message of a name no rule of the set has."""
    by_name = {r.name: r for r in rules}
    if not any(r.after or r.before for r in rules):  # the shipped rule sets: no import needed
        return tuple(sorted(rules, key=lambda r: (r.priority, r.name)))
    import networkx as nx  # a tenth of a second to import: only for rules that order others
    graph = nx.DiGraph()
    graph.add_nodes_from(by_name)
    for rule in rules:
        for other in (*rule.after, *rule.before):
            if other not in by_name:
                known = ", ".join(sorted(by_name))
                raise RuleSchemaError(f"{rule.origin}: rule {rule.name!r} orders itself against "
                                      f"unknown rule {other!r}; known: {known}{unknown}")
        graph.add_edges_from((a, rule.name) for a in rule.after)
        graph.add_edges_from((rule.name, b) for b in rule.before)
    if not nx.is_directed_acyclic_graph(graph):
        cycle = [u for u, _ in nx.find_cycle(graph)]
        raise RuleSchemaError(f"{source}: rules are ordered in a cycle: "
                              + " -> ".join([*cycle, cycle[0]]))
    return tuple(by_name[n] for n in nx.lexicographical_topological_sort(
        graph, key=lambda n: (by_name[n].priority, n)))

