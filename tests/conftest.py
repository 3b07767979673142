"""Shared test fixtures: golden-file comparison with `pytest --update-goldens`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

GOLDENS = Path(__file__).parent / "goldens"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite golden files with the current output")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """Compare text with a golden file, or rewrite it under --update-goldens."""
    update = request.config.getoption("--update-goldens")

    def check(path: Path, actual: str) -> None:
        if update or not path.exists():
            if not update:
                pytest.fail(f"golden file {path} is missing; run pytest --update-goldens")
            path.write_text(actual, encoding="utf-8")
            return
        assert actual == path.read_text(encoding="utf-8"), f"output differs from {path}"

    return check
