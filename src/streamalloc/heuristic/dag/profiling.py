"""Execution times for the mini DAG: GE's profiling `op_summary` CSV (spec 6 step 2).

GE reads the path from the environment variable `MINIDAG_PROFILING_PATH`; we read a graph option
of the same name, so that a result depends only on the input. A relative path is taken relative
to the graph file's folder. A node matches a row by its full name, else by its name after the
last '/'. Any match switches the merging strategy to WeightedLoadBalance (spec 6 step 3).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import msgspec

from streamalloc.errors import InputError
from streamalloc.ir.graph import Graph

PROFILING_OPTION = "MINIDAG_PROFILING_PATH"
# op_summary's own headers first, then short forms for hand-written files
NAME_COLUMNS = ("Op Name", "op_name", "name")
TIME_COLUMNS = ("Task Duration(us)", "task_duration_us", "duration_us", "time_us")


class Profile(msgspec.Struct, frozen=True):
    """Profiled execution time (µs) per op name."""

    times: Mapping[str, float] = msgspec.field(default_factory=lambda: MappingProxyType({}))

    def lookup(self, name: str) -> float | None:
        """The time of node `name`: its full name first, then the part after the last '/'.

        >>> Profile(MappingProxyType({"conv1": 3.0})).lookup("block/conv1")
        3.0
        """
        if name in self.times:
            return self.times[name]
        return self.times.get(name.rsplit("/", 1)[-1])


def load_profile(graph: Graph) -> Profile:
    """The profile named by the graph option, or an empty one when the option is unset."""
    text = graph.option(PROFILING_OPTION)
    if not text:
        return Profile()
    path = _resolve(graph, text)
    try:
        content = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise InputError(f"{graph.source}: option {PROFILING_OPTION} names {str(path)!r}, "
                         f"which cannot be read ({error.strerror}); give an op_summary CSV "
                         "file") from None
    return Profile(MappingProxyType(parse_csv(content, str(path))))


def _resolve(graph: Graph, text: str) -> Path:
    path = Path(text)
    source = Path(graph.source) if graph.source else None
    if not path.is_absolute() and source is not None and source.is_file():
        return source.parent / path
    return path


def parse_csv(content: str, source: str) -> dict[str, float]:
    """Op name -> time from CSV text; the first row of a name wins (later iterations ignored)."""
    reader = csv.DictReader(content.splitlines())
    header = [h.strip() for h in reader.fieldnames or ()]
    name_col = _column(header, NAME_COLUMNS, source)
    time_col = _column(header, TIME_COLUMNS, source)
    reader.fieldnames = header
    times: dict[str, float] = {}
    for line, row in enumerate(reader, start=2):
        name, value = (row.get(name_col) or "").strip(), (row.get(time_col) or "").strip()
        if not name or name in times:
            continue
        try:
            times[name] = float(value)
        except ValueError:
            raise InputError(f"{source}:{line}: column {time_col!r} of op {name!r} is "
                             f"{value!r}; expected a number of microseconds") from None
    return times


def _column(header: list[str], choices: tuple[str, ...], source: str) -> str:
    for choice in choices:
        if choice in header:
            return choice
    raise InputError(f"{source}:1: profiling CSV has columns {header}; expected one of "
                     f"{list(choices)} (GE's op_summary has 'Op Name' and 'Task Duration(us)')")
