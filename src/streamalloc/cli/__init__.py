"""The `streamalloc` program: run one command (`main`) and exit at once (`console_main`);
Ctrl-C, a closed pipe, our errors and bugs each end with their exit code and one line on
stderr (README, "Exit codes"). The parser is in `cli.parser`, the commands' handlers in
`cli.handlers`, what they read from the arguments in `cli.arguments`."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Sequence
from typing import NoReturn, TextIO

from streamalloc.cli.parser import build_parser
from streamalloc.errors import InputWarning, StreamallocError
from streamalloc.outputs import Progress


class _WarningPrinter:
    """Input warnings as one line on stderr, each text once per command (`compare` runs ge
    mode several times per graph, and each run would say it again); others as Python prints
    them (warnings' `showwarning` signature)."""

    def __init__(self) -> None:
        self.shown: set[str] = set()

    def __call__(self, message: Warning | str, category: type[Warning],  # noqa: PLR0917
                 filename: str, lineno: int, file: TextIO | None = None,
                 line: str | None = None) -> None:
        del file
        if not issubclass(category, InputWarning):
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
        elif str(message) not in self.shown:
            self.shown.add(str(message))
            print(f"streamalloc: warning: {message}", file=sys.stderr)


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the flush at exit is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a reader that went away
INTERRUPTED = 130  # 128 + SIGINT


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (README, "Exit codes")."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = _WarningPrinter()
        return _run(args)


def single_threaded_blas() -> None:
    """Start numpy's OpenBLAS with one thread, unless the user chose a number: no command
    multiplies matrices, and the thread OpenBLAS starts per CPU spins for a while after
    numpy is imported (0.1-0.2 s of CPU), on the CPU where a command's own child process runs
    (`allocate`'s outputs, `emulate`'s verifier, `sweep`'s jobs)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def buffered_stdout() -> None:
    """Under PYTHONUNBUFFERED (or `python -u`) stdout writes each string straight to the file
    descriptor, and a write that the reader's leaving cuts short is no error: `streamalloc
    show big.yaml | head -1` exited 0. A buffer in between makes it a BrokenPipeError again
    (exit 141); the commands print their tables at the end, so nothing is shown later."""
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper) and isinstance(out.buffer, io.FileIO):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(out.buffer), encoding=out.encoding,
                                      errors=out.errors, line_buffering=out.line_buffering)


def console_main() -> NoReturn:
    """The `streamalloc` program: `main`, then exit at once. Letting the interpreter free a
    100k-node graph's millions of objects one by one takes about half a second after the work
    is done; the operating system takes the memory back at once (mypy ends the same way).
    Every command closed its files; the two standard streams are flushed here."""
    from streamalloc import collector
    single_threaded_blas()
    buffered_stdout()
    collector.hold_until_exit()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # a reader that went away has had its BROKEN_PIPE exit code already
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


class _Interrupt:
    """Ctrl-C seen: a KeyboardInterrupt inside an extension module's import comes out as an
    ImportError ("initialization failed"), so the handler remembers the signal itself."""

    seen = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        del signum, frame
        cls.seen = True
        raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    _Interrupt.seen = False
    previous = None
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, _Interrupt.handler)
    try:
        return _run_command(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _run_command(args: argparse.Namespace) -> int:
    try:
        if args.command in ("compare", "sweep"):  # they count graphs or points themselves
            code = int(args.run(args))
        else:
            with Progress(args.command, sys.stderr):
                code = int(args.run(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader closed its end (`| head`): stop quietly
        _quiet_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt:
        if args.debug:
            _say(traceback.format_exc().rstrip())
        _say("streamalloc: interrupted")
        return INTERRUPTED
    except StreamallocError as exc:
        if args.debug:
            _say(traceback.format_exc().rstrip())
        _say(f"streamalloc: error: {exc}")
        return exc.exit_code
    except Exception as exc:  # a bug: say so, and keep the traceback behind --debug
        if _Interrupt.seen:  # Ctrl-C during an import
            _say("streamalloc: interrupted")
            return INTERRUPTED
        if args.debug:
            _say(traceback.format_exc().rstrip())
        _say(f"streamalloc: internal error ({type(exc).__name__}): {exc}; rerun with --debug "
             "and report it")
        return 1


def _say(text: str) -> None:
    """One message on stderr; where stderr's reader went away (`2>&1 | head -1`) it is lost,
    and the exit code is still the command's own, not an internal error."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr, flush=True)
