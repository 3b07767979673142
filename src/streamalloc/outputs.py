"""Output files are written completely or not at all (a failed command leaves no file), and the
progress line of long runs goes to a terminal only."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

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


def write_json_atomic(path: Path, document: Any, plain: Collection[str] = ()) -> None:
    """The bytes of `json.dumps(document, indent=1) + "\n"` (`json_text`, `plain` as there),
    written piece by piece to a temporary file and renamed: a million-node plan never exists
    as one text."""
    from streamalloc.json_text import indented_json
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("wb") as out:
            out.writelines(indented_json(document, plain=plain))
            out.write(b"\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write the output file: {exc.strerror or exc}") from None


class Progress:
    """`with Progress("allocate", sys.stderr): ...` shows `streamalloc allocate: 3 s` while the
    block runs longer than `after` seconds, and clears the line at the end."""

    def __init__(self, label: str, stream: TextIO, *, after: float = 2.0,
                 every: float = 0.5) -> None:
        self.label, self.stream, self.after, self.every = label, stream, after, every
        self._done = threading.Event()
        self._shown = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.stream.isatty():
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _run(self) -> None:
        began = time.monotonic()
        if self._done.wait(self.after):
            return
        while not self._done.is_set():
            self.stream.write(f"\rstreamalloc {self.label}: {time.monotonic() - began:.0f} s"
                              "\x1b[K")
            self.stream.flush()
            self._shown = True
            self._done.wait(self.every)
