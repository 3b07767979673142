"""matplotlib, an optional dependency, imported on use for the PNG outputs (Gantt, compare)."""

from __future__ import annotations

from typing import Any

from streamalloc.errors import UsageError


def pyplot(option: str) -> Any:
    """matplotlib.pyplot on the headless Agg backend; UsageError naming `option` without it."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError(f"{option} needs matplotlib, which is not installed: pip install "
                         "'streamalloc[plot]'") from None
    matplotlib.use("Agg")  # no display needed; must come before pyplot is imported
    import matplotlib.pyplot as plt

    return plt
