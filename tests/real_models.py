"""The 17 real models the project must handle: ONNX light models, transformers, GE dumps."""

from __future__ import annotations

from pathlib import Path

import onnx

GOLDEN_DIR = Path(__file__).parent / "goldens" / "real_models"
# Copies of ../shared/data (unchanged) so that a fresh clone tests the same files.
DATA = Path(__file__).parent / "data"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def real_models() -> list[Path]:
    """All real model files, in a fixed order."""
    return (sorted(LIGHT.glob("light_*.onnx")) + sorted((DATA / "onnx").glob("*.onnx"))
            + sorted((DATA / "ge_dumps").glob("ge_proto_*.txt")))
