"""Shared test fixtures: golden-file comparison with `pytest --update-goldens`; hypothesis
profiles ("ci", derandomized, when the environment variable CI is set; "dev" otherwise)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

GOLDENS = Path(__file__).parent / "goldens"

# CI (which runs with CI=true) must not fail on one run and pass on the next: the same
# examples every run, no deadline on a loaded runner, and the reproduction blob printed on
# failure. Locally, examples stay random (and saved in the example database). A test's own
# @settings still win over the profile.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if "CI" in os.environ else "dev")


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
