"""The runnable examples in the emulator's docstrings (pytest collects tests/ only)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import streamalloc.runtime_emu as package

MODULES = sorted(m.name for m in pkgutil.iter_modules(package.__path__, package.__name__ + "."))


@pytest.mark.parametrize("name", [package.__name__, *MODULES])
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
