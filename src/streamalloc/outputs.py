"""Output files are written completely or not at all (a failed command leaves no file), and the
progress line of long runs goes to a terminal only."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import msgspec

from streamalloc.background import fork_safe_thread
from streamalloc.errors import UsageError


class Staged(msgspec.Struct, frozen=True):
    """An output written whole to its temporary file beside `path`, not yet in place: a
    command stages its outputs while it checks what they hold, then commits or discards them."""

    path: Path
    tmp: Path

    @classmethod
    def of(cls, path: str | Path) -> Staged:
        """The staging of `path`: its temporary file is `path` + ".tmp", beside it."""
        path = Path(path)
        return cls(path, path.with_name(path.name + ".tmp"))

    def commit(self) -> None:
        """Put the file in place (a rename: the old file, if any, is replaced whole)."""
        try:
            self.tmp.replace(self.path)
        except OSError as exc:
            self.discard()
            raise _unwritable(self.path, exc) from None

    def discard(self) -> None:
        """Remove the temporary file."""
        self.tmp.unlink(missing_ok=True)


def stage_bytes(path: str | Path, chunks: Iterable[bytes]) -> Staged:
    """Write `chunks` to `path`'s temporary file (`path` + ".tmp"); an unwritable path is a
    usage error (exit 2), and leaves no temporary file."""
    staged = Staged.of(path)
    try:
        with staged.tmp.open("wb") as out:
            out.writelines(chunks)
    except OSError as exc:
        staged.discard()
        raise _unwritable(path, exc) from None
    return staged


def stage_json(path: str | Path, document: Any, plain: Collection[str] = ()) -> Staged:
    """`stage_bytes` of `json.dumps(document, indent=1) + "\n"` (`json_text`, `plain` as
    there), piece by piece: a million-node plan never exists as one text."""
    from streamalloc.json_text import indented_json
    return stage_bytes(path, chain(indented_json(document, plain=plain), [b"\n"]))


def _unwritable(path: str | Path, exc: OSError) -> UsageError:
    return UsageError(f"{path}: cannot write the output file: {exc.strerror or exc}")


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write via a temporary file and rename; an unwritable path is a usage error (exit 2)."""
    stage_bytes(path, [data]).commit()


def write_atomic(path: str | Path, text: str) -> None:
    """`write_bytes_atomic` for UTF-8 text."""
    write_bytes_atomic(path, text.encode("utf-8"))


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
            self._began = time.monotonic()
            self._thread = fork_safe_thread(self._show, self._wait)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _wait(self) -> bool:
        """Wait until the next line is due; True when the block has ended."""
        return self._done.wait(self.every if self._shown else self.after)

    def _show(self) -> None:
        self.stream.write(f"\rstreamalloc {self.label}: {time.monotonic() - self._began:.0f} s"
                          "\x1b[K")
        self.stream.flush()
        self._shown = True
