"""Shared test fixtures: golden-file comparison (`golden`, over the streamalloc pytest plugin,
which registers `--update-goldens`); hypothesis profiles ("ci", derandomized, when the
environment variable CI is set; "dev" otherwise)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from streamalloc.pytest_plugin import check_golden, update_goldens

GOLDENS = Path(__file__).parent / "goldens"

# CI (which runs with CI=true) must not fail on one run and pass on the next: the same
# examples every run, no deadline on a loaded runner, and the reproduction blob printed on
# failure. Locally, examples stay random (and saved in the example database). A test's own
# @settings still win over the profile.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if "CI" in os.environ else "dev")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """Compare text with a golden file, or rewrite it under the plugin's --update-goldens."""
    update = update_goldens(request.config)

    def check(path: Path, actual: str) -> None:
        __tracebackhide__ = True
        check_golden(path, actual, update=update)

    return check
