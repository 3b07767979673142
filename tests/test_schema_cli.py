"""`streamalloc schema KIND`: the JSON Schemas of the files you write (graph, rules) and of the
files the tool writes (plan, vars, emulation, compare, show)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from streamalloc.cli import main
from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
from streamalloc.rules.schema import RULES_SCHEMA
from streamalloc.schemas import SCHEMAS

ALL = {"graph": GRAPH_SCHEMA, "rules": RULES_SCHEMA, **SCHEMAS}


@pytest.mark.parametrize("kind", ["plan", "vars", "emulation", "compare", "show", "graph",
                                  "rules"])
def test_schema_prints_the_json_schema(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", kind]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert printed == ALL[kind] and not err
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed["$id"].startswith("https://streamalloc.dev/schema/")


@pytest.mark.parametrize(("kind", "fmt", "doc"), [
    ("plan", "streamalloc.plan/v1", "docs/plan-format.md"),
    ("vars", "streamalloc.vars/v1", "docs/vars-format.md"),
    ("emulation", "streamalloc.emulation/v1", "docs/emulation-report.md"),
    ("compare", "streamalloc.compare/v1", "docs/compare-format.md"),
    ("show", "streamalloc.show/v1", "docs/show-format.md"),
])
def test_output_schemas_name_their_format_and_document(kind: str, fmt: str, doc: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", kind]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["properties"]["format"] == {"const": fmt}
    assert fmt in printed["description"] and doc in printed["description"]


def test_an_unknown_kind_is_a_usage_error_listing_the_kinds(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["schema", "trace"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    for kind in ALL:
        assert kind in err


def test_schema_output_is_byte_identical_across_runs(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for _ in range(2):
        assert main(["schema", "plan"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
