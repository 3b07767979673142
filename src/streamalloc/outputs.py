"""Output files are written completely or not at all (a failed command leaves no file)."""

from __future__ import annotations

from pathlib import Path

from streamalloc.errors import UsageError


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename; an unwritable path is a usage error (exit 2)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write the output file: {exc.strerror or exc}") from None


def write_atomic(path: Path, text: str) -> None:
    """`write_bytes_atomic` for UTF-8 text."""
    write_bytes_atomic(path, text.encode("utf-8"))
