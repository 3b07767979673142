"""The progress line of long runs: shown on a terminal after the delay, never on a file."""

from __future__ import annotations

import io
import time

from streamalloc.outputs import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_run_on_a_terminal_shows_progress_and_clears_it() -> None:
    stream = Terminal()
    with Progress("allocate", stream, after=0.05, every=0.02):
        time.sleep(0.3)
    text = stream.getvalue()
    assert "\rstreamalloc allocate: 0 s" in text
    assert text.endswith("\r\x1b[K")  # the line is cleared at the end


def test_a_short_run_or_a_file_shows_nothing() -> None:
    quick = Terminal()
    with Progress("allocate", quick, after=5.0):
        pass
    assert quick.getvalue() == ""
    file = io.StringIO()
    with Progress("allocate", file, after=0.0, every=0.01):
        time.sleep(0.05)
    assert file.getvalue() == ""
