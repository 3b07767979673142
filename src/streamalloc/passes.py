"""The pass protocol of both allocators' drivers and the sync layer, and the instrument that
observes a run.

A pass is an immutable object (a frozen dataclass or msgspec struct) with a `name`, its typed
options as fields and one `apply(ctx, plan) -> PassResult`: `ctx` is what the pass reads and never
changes during a run, `plan` the state it transforms. It returns the new plan and whether it
changed, and never mutates the plan it was given (xDSL `ModulePass`, torch.fx `PassResult`). Drivers
fold their passes over the plan and report every application to an optional `PassObserver` as a
`PassRecord`, whose `text()` renders the canonical text of the whole state after the pass on demand;
`PassPrinter` is the observer behind `allocate --print-after` and `--dump-dir`.

The protocol sits in the base layer (docs/architecture.md) because the allocators and the sync
layer all use it: the heuristic must not import sync (a layer above it), and sync must not
depend on one allocator. It imports nothing of streamalloc but `errors`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TextIO, TypeVar, runtime_checkable

import msgspec

from streamalloc.errors import UsageError

P = TypeVar("P")
C_contra = TypeVar("C_contra", contravariant=True)

__all__ = ["Pass", "PassObserver", "PassPrinter", "PassRecord", "PassResult", "outcome"]


@dataclass(frozen=True, slots=True)
class PassResult(Generic[P]):
    """What a pass returns: the new plan and whether it differs from the one it got."""

    plan: P
    changed: bool


def outcome(old: P, new: P) -> PassResult[P]:
    """The result of a pass that turned `old` into `new` (changed: they differ in value)."""
    return PassResult(new, new is not old and new != old)


@runtime_checkable
class Pass(Protocol[C_contra, P]):
    """The shape of every pass (see the module docstring)."""

    @property
    def name(self) -> str:
        """The pass's name: the rule's name for a heuristic pass, the stage name for sync."""
        ...

    def apply(self, ctx: C_contra, plan: P) -> PassResult[P]:
        """The new plan and whether it changed; `plan` itself is never mutated."""
        ...


class PassRecord(msgspec.Struct, frozen=True):
    """One application of a pass, as a driver reports it to its observer.

    `graph` names the graph a per-graph heuristic pass ran on ("" for passes over the whole
    model and for sync stages); `plan` is the pass's new plan; `render` makes the canonical
    text of the whole state after the pass (only called when an observer wants it).
    """

    name: str
    graph: str
    changed: bool
    plan: object
    render: Callable[[], str]

    def text(self) -> str:
        """The canonical text of the state after the pass."""
        return self.render()

    def header(self) -> str:
        """`// after NAME (changed|unchanged)`, with ` on graph G` for a per-graph pass."""
        where = f" on graph {self.graph}" if self.graph else ""
        return f"// after {self.name} ({'changed' if self.changed else 'unchanged'}){where}\n"


class PassObserver(Protocol):
    """An instrument the drivers call after every pass, in run order."""

    def after_pass(self, record: PassRecord) -> None:
        """Called once per pass application."""
        ...


_DUMP_NAME = re.compile(r"^[0-9]{2,}-.+\.txt$")


class PassPrinter:
    """Prints the header and text after the passes named in `names` (None: every pass) to
    `stream`, and writes every pass's header and text to `dump_dir/NN-<name>.txt`, numbered in
    run order. Dumps of an earlier run in `dump_dir` (files named like ours) are removed first;
    files are written as the passes run, so a failing run leaves the dumps up to the failure."""

    def __init__(self, names: Collection[str] | None, stream: TextIO | None = None,
                 dump_dir: Path | None = None) -> None:
        self.names = None if names is None else frozenset(names)
        self.stream = stream
        self.dump_dir = dump_dir
        self.count = 0
        if dump_dir is not None:
            if dump_dir.exists() and not dump_dir.is_dir():
                raise UsageError(f"dump directory {dump_dir} exists and is not a directory")
            dump_dir.mkdir(parents=True, exist_ok=True)
            for old in dump_dir.iterdir():
                if old.is_file() and _DUMP_NAME.match(old.name):
                    old.unlink()

    def after_pass(self, record: PassRecord) -> None:
        """Print and dump one pass's result, as selected."""
        self.count += 1
        show = self.stream is not None and (self.names is None or record.name in self.names)
        if not show and self.dump_dir is None:
            return
        text = record.header() + record.text()
        if show and self.stream is not None:
            self.stream.write(text)
        if self.dump_dir is not None:
            (self.dump_dir / f"{self.count:02d}-{record.name}.txt").write_text(
                text, encoding="utf-8")
