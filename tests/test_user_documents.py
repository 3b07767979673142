"""What a user meets refers only to what ships: no user-facing string in src/ and no user document
cites the design notes that are not in the repository (formats.md, the GE spec files, "spec
X.Y"); they cite docs/*.md instead, and every path the README and the documents mention exists.

User-facing strings are the string literals of src/ (error messages, help texts), read with
`ast`; docstrings are for developers and may keep their spec references, like comments, except
the command line's own docstring, which `--help` prints.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "streamalloc"
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
USER_DOCUMENTS = [README, *DOCS, ROOT / "examples" / "plans" / "README.md"]
EXTERNAL = re.compile(r"formats\.md|ge-sync-and-split|ge-logical-streams|ge-variable-memory"
                      r"|ge-ir-proto|shared/design|\bspec \d|\bspec's\b"
                      r"|\b(?:of|section|§) ?\d+\.\d+\.\d+", re.IGNORECASE)  # "Q1 of 2.4.5"
# Paths a document may mention: under these top-level directories or files of the repository.
PATH = re.compile(r"(?<![\w./-])((?:src|tests|docs|examples|bench|tools|\.ci)/[\w./<>*-]*"
                  r"|pyproject\.toml)")


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            found.add(id(node.body[0].value))
    return found


def user_strings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal of a module that is not a docstring (f-string parts
    included); for the command line, its module docstring too (`--help` prints it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = set() if path.parts[-2:] == ("cli", "parser.py") else _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            yield node.lineno, node.value


def test_the_scanner_sees_messages_and_skips_docstrings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Module (formats.md section 3)."""\n'
                      'def f(x):\n    """Doc (spec 6.5)."""\n'
                      '    raise ValueError(f"{x}: bad (formats.md section 3)")\n')
    hits = [(line, text) for line, text in user_strings(module) if EXTERNAL.search(text)]
    assert hits == [(4, ": bad (formats.md section 3)")]


def test_no_user_facing_string_in_src_cites_the_external_design_notes() -> None:
    bad = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
           for path in sorted(SRC.rglob("*.py")) if not path.name.endswith("_pb2.py")
           for line, text in user_strings(path) if EXTERNAL.search(text)]
    assert not bad, "cite docs/*.md instead:\n" + "\n".join(bad)


@pytest.mark.parametrize("document", USER_DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_user_document_cites_the_external_design_notes(document: Path) -> None:
    bad = [f"{document.name}:{n}: {line}"
           for n, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1)
           if EXTERNAL.search(line)]
    assert not bad, "\n".join(bad)


def _mentioned_paths(document: Path) -> set[str]:
    text = document.read_text(encoding="utf-8")
    found = {m.group(1).rstrip(".") for m in PATH.finditer(text)}
    links = {m.group(1) for m in re.finditer(r"\]\(([^)#]+?)(?:#[^)]*)?\)", text)
             if not m.group(1).startswith("http")}
    base = document.parent
    return found | {str((base / link).resolve().relative_to(ROOT)) for link in links}


def _exists(path: str) -> bool:
    pattern = re.sub(r"<[^>]*>", "*", path)  # `tests/goldens/cases/<case>.yaml`
    return any(ROOT.glob(pattern)) if "*" in pattern else (ROOT / pattern).exists()


@pytest.mark.parametrize("document", USER_DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_document_mentions_exists(document: Path) -> None:
    paths = _mentioned_paths(document)
    missing = sorted(p for p in paths if not _exists(p))
    assert not missing, f"{document.relative_to(ROOT)} mentions paths that do not exist: {missing}"


def test_the_readme_links_every_user_document() -> None:
    text = README.read_text(encoding="utf-8")
    for doc in DOCS:
        assert f"(docs/{doc.name})" in text, doc.name
    for name in ("graph-format.md", "plan-format.md", "vars-format.md", "emulation-report.md",
                 "compare-format.md", "ge-behaviour.md", "rules.md"):
        assert (ROOT / "docs" / name).is_file(), name


def test_error_messages_cite_documents_that_exist() -> None:
    cited = {m for path in SRC.rglob("*.py") for _, text in user_strings(path)
             for m in re.findall(r"docs/[\w-]+\.md", text)}
    assert cited  # the plan readers and the verifier cite docs/plan-format.md and others
    assert all((ROOT / c).is_file() for c in cited), cited


def graph_blocks(document: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each YAML block of a document that is a whole graph file."""
    lines = document.read_text(encoding="utf-8").splitlines()
    start = None
    for n, line in enumerate(lines, 1):
        if line.strip() == "```yaml":
            start = n
        elif line.strip() == "```" and start is not None:
            block = "\n".join(lines[start:n - 1]) + "\n"
            if block.startswith("format: streamalloc.graph/v1"):
                yield start, block
            start = None


def test_the_documents_graph_examples_allocate(tmp_path: Path) -> None:
    """A user copies the example graph first: it loads, and ge mode plans it (a While whose
    subgraphs hold only Data nodes would hit GE's quirk Q1 and fail its split)."""
    from streamalloc.api import plan, read_graph
    found = [(document, line, block) for document in USER_DOCUMENTS
             for line, block in graph_blocks(document)]
    assert len(found) >= 2  # the README's and docs/graph-format.md's
    for document, line, block in found:
        path = tmp_path / f"{document.stem}_{line}.yaml"
        path.write_text(block, encoding="utf-8")
        result = plan(read_graph(path))
        assert result.allocation.main_stream_num >= 1, f"{document.name}:{line}"


def test_the_readme_python_api_example_runs(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The README's "Python API" block, run as a user would paste it, from the checkout."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    block = section[section.index("```python\n") + len("```python\n"):section.index("```\n", 10)]
    monkeypatch.chdir(ROOT)
    exec(compile(block, "README.md (Python API)", "exec"), {})
    printed = capsys.readouterr().out
    assert "ChainSummary(" in printed
