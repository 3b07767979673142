"""The graph options the tool reads: one table, with each option's valid values and effect.

This is the single source of README's "Options" table (a test compares them). `check_options`
is what every command runs once on a graph it reads, after the file's options, a plan's and
`--set` are merged: an unknown `streamalloc.*` key, a near-miss of a known key (a typo such as
`ge.streamMaxParalelNum`) or a value outside an option's valid values is an `OptionError`
(exit 3) naming the key meant or listing the valid values. Other unknown keys (real GE option
maps carry many this tool does not read) give one `InputWarning`.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec

from streamalloc.errors import InputWarning, OptionError

if TYPE_CHECKING:
    from streamalloc.ir.graph import Graph

# A check returns None when the value is valid, else what is wrong (without the option's name).
Check = Callable[[str, "Graph"], "str | None"]


class OptionSpec(msgspec.Struct, frozen=True):
    """One option: its key, its valid values as README shows them (default first), its effect,
    and the check of a value."""

    key: str
    values: str
    effect: str
    check: Check


def _choices(*valid: str) -> tuple[str, Check]:
    shown = ", ".join(f'`"{v}"`' for v in valid)

    def check(value: str, graph: Graph) -> str | None:
        del graph
        return None if value in valid else f"valid: {', '.join(repr(v) for v in valid)}"
    return shown, check


def _at_least(low: int, expected: str) -> Check:
    """A check for an integer of `low` or more; `expected`: what the error says is wanted."""
    def check(value: str, graph: Graph) -> str | None:
        del graph
        return None if value.isdigit() and int(value) >= low else f"expected {expected}"
    return check


_positive = _at_least(1, "a positive integer")
# the runtime's stream pool keeps slot 0 for the caller's stream: one slot runs nothing
_stream_slots = _at_least(2, "an integer of 2 or more (the runtime's stream slots, slot 0 the "
                             "caller's stream)")


def _anything(value: str, graph: Graph) -> str | None:
    del value, graph
    return None


_DAG_MODE = re.compile(r"^(LoadBalance|MainStream|WeightedLoadBalance):([0-9]+)$")


def _auto_mode(value: str, graph: Graph) -> str | None:
    del graph
    found = _DAG_MODE.match(value)
    if value in ("", "cv") or (found and 1 <= int(found.group(2)) <= 64):
        return None
    return ("valid: '', 'cv', or STRATEGY:N with STRATEGY one of LoadBalance, MainStream, "
            "WeightedLoadBalance and N in 1..64")


def _max_parallel(value: str, graph: Graph) -> str | None:
    engines = sorted(graph.engines.engines)
    for item in filter(None, (part.strip() for part in value.split(","))):
        engine, sep, num = item.rpartition(":")
        if not sep or not engine or not num.isdigit() or int(num) < 1:
            return (f"item {item!r}: expected ENGINE:N with N a positive integer, e.g. "
                    "'AIcoreEngine:4'")
        if engine not in graph.engines.engines:
            return f"item {item!r}: no engine {engine!r}; engines: {', '.join(engines)}"
    return None


def _value_bins(value: str, graph: Graph) -> str | None:
    del graph
    if not value:
        return None
    try:
        bins = json.loads(value)["value_bins"]
        for item in bins:
            str(item["value_bin_id"]), str(item["value_bin_file"])
    except (ValueError, KeyError, TypeError) as exc:
        return ('expected {"value_bins": [{"value_bin_id": ..., "value_bin_file": ...}]} '
                f"({type(exc).__name__}: {exc})")
    return None


def _spec(key: str, values: tuple[str, Check] | str, effect: str,
          check: Check | None = None) -> OptionSpec:
    if isinstance(values, tuple):
        return OptionSpec(key, values[0], effect, values[1])
    assert check is not None
    return OptionSpec(key, values, effect, check)


OPTIONS: tuple[OptionSpec, ...] = (
    _spec("ge.enableSingleStream", _choices("", "true", "false"),
          '`"true"`: single-stream mode (rule set `ge-static-single-stream`; stream 0 huge when '
          "the model needs it); otherwise multi-stream"),
    _spec("ge.streamMaxParallelNum", '`""`, `"ENGINE:N,ENGINE:N"` (N >= 1, ENGINE an engine of '
          "the graph)", "how many streams dependency assignment opens per engine and graph; "
          "engines not listed: 1", _max_parallel),
    _spec("ge.hcomParallel", _choices("0", "1", ""),
          '`"1"`: successors of fused AllReduce nodes (`fusion` > 0) move to new streams (rule '
          "`allreduce-parallel`)"),
    _spec("ge.exec.memoryOptimizationPolicy", _choices("", "MemoryPriority"),
          "`MemoryPriority`: a subgraph may continue a predecessor's stream even when the "
          "predecessor feeds another subgraph of its engine"),
    _spec("ge.autoMultistreamParallelMode", '`""`, `"cv"`, `"LoadBalance:N"`, `"MainStream:N"`, '
          '`"WeightedLoadBalance:N"` (N 1..64); `"default"` as a graph attribute only',
          "`cv`: vector nodes get `VectorEngine` in partitioning; the three `STRATEGY:N` modes: "
          "GE's DAG allocator (rule `mini-dag`) puts each graph's nodes on at most N streams "
          "(NetOutput, RTS label and labelled nodes apart: see below). The root graph attribute "
          "of the same name wins over the option", _auto_mode),
    _spec("MINIDAG_PROFILING_PATH", '`""`, a path',
          "an `op_summary` CSV of measured op times: the DAG allocator's weighted strategy (GE "
          "reads it from the environment)", _anything),
    _spec("ge.topoSortingMode", _choices("", "0", "1", "2", "3"),
          "G-order: `\"0\"` GE's breadth-first sort, `\"1\"` its depth-first sort, `\"2\"`/`\"3\"` "
          "the given order (`\"3\"` also merges consecutive clusters); `\"\"`: see `node_order` "
          "([docs/graph-format.md](docs/graph-format.md))"),
    _spec("ge.event", _choices("", "notify"),
          '`"notify"`: cross-stream sync uses notifies instead of events'),
    _spec("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", _choices("", "0", "1"),
          'dynamic-shape graphs: `"1"` runs GE\'s dynamic multi-stream allocator, otherwise one '
          "stream (GE reads it from the environment)"),
    _spec("ac_parallel_enable", _choices("", "0", "1"),
          'dynamic-shape graphs: `"1"` puts AI CPU subgraphs that cannot continue a '
          "predecessor's stream on the AI CPU stream; otherwise only GetNext-like AI CPU ops get "
          "it"),
    _spec("streamalloc.max_streams", "`2024`, an integer of 2 or more",
          "the runtime's stream slots; a plan's physical + attached streams (each once) stay "
          "below it (slot 0 is the caller's stream)", _stream_slots),
    _spec("streamalloc.max_events", "`65535`, a positive integer", "events a plan may use",
          _positive),
    _spec("streamalloc.max_notifies", "`1024`, a positive integer", "notifies a plan may use",
          _positive),
    _spec("streamalloc.max_task_per_stream", "`1024`, a positive integer",
          "task units per physical stream (with 7 profiling units); the split keeps 27 free",
          _positive),
    _spec("streamalloc.max_task_per_huge_stream", "`8192`, a positive integer",
          "task units of a huge stream (single-stream mode)", _positive),
    _spec("streamalloc.unlimited_stream_depth", _choices("", "true", "false"),
          '`"true"`: a runtime with unlimited stream depth: no physical split, no per-stream '
          "task limit"),
    _spec("streamalloc.device_memory_size", "unset, bytes (a positive integer)",
          "the device memory size for the variable plan: limits derived from it and the logical "
          "variable base moved to 128 GiB, as GE does when configured (unset: a 32 GiB device, "
          "base 32 GiB)", _positive),
    _spec("ge.evaluateGraphResourceMode", _choices("", "0", "1"),
          'variable manager: `"1"` lifts the memory limits of its checks'),
    _spec("ge.variableUse1gHugePage", _choices("", "0", "1", "2"),
          'variable manager: `"1"` 1 GiB pages only, `"2"` 1 GiB pages first, else normal pages'),
    _spec("ge.exec.variable_acc", _choices("", "True", "False"),
          'variable passes (Python API): `"False"` turns variable format fusion off'),
    _spec("ge.AllowMultiGraphParallelCompile", _choices("", "0", "1"),
          'variable passes: `"1"` turns variable format fusion off'),
    _spec("ge.externalWeight", _choices("0", "1", "2", ""),
          "variable passes: export constant weights to files, one per weight (`\"1\"`) or one "
          "combined file (`\"2\"`)"),
    _spec("ge.exec.value_bins", '`""`, JSON',
          'variable passes: `{"value_bins": [{"value_bin_id": ..., "value_bin_file": ...}]}`, '
          "the files of FileConstants", _value_bins),
)
OPTION_SPECS: Mapping[str, OptionSpec] = {spec.key: spec for spec in OPTIONS}
OWN_PREFIX = "streamalloc."


def options_markdown() -> str:
    """README's "Options" table, from `OPTIONS`."""
    lines = ["| option | values (default first) | effect |", "|---|---|---|"]
    lines += [f"| `{s.key}` | {s.values} | {s.effect} |" for s in OPTIONS]
    return "\n".join(lines) + "\n"


def edit_distance(a: str, b: str, cap: int | None = None) -> int:
    """Levenshtein distance; with a `cap`, any distance above it is `cap + 1` (the rows stop
    once every entry passes the cap: a row's least entry never decreases)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        if cap is not None and min(current) > cap:
            return cap + 1
        previous = current
    return previous[-1] if cap is None else min(previous[-1], cap + 1)


def near_miss(key: str) -> str | None:
    """The known option `key` is most likely a typo of (case or an edit distance <= 2)."""
    best: tuple[int, str] | None = None
    for known in OPTION_SPECS:
        if abs(len(known) - len(key)) > 2:
            continue
        distance = edit_distance(key.lower(), known.lower(), cap=2)
        if key.lower() == known.lower():
            distance = 0
        if distance <= 2 and (best is None or distance < best[0]):
            best = (distance, known)
    return best[1] if best else None


def check_options(graph: Graph, also: Iterable[str] = (),
                  settings: Mapping[str, str] | None = None, settings_from: str = "--set"
                  ) -> None:
    """Check the graph's options against `OPTIONS` (see the module docstring); `also` are
    further keys the command reads (the options a rule file's `when:` gates read). A message
    names `settings_from` for the keys of `settings` (the command line's `--set`, or a sweep
    point's options), else the graph file."""
    extra = frozenset(also)
    given = settings or {}
    unknown: dict[str, list[str]] = {}
    for key in sorted(graph.options):
        value = graph.options[key]
        where = settings_from if key in given else graph.source or graph.name
        spec = OPTION_SPECS.get(key)
        if spec is None and key in extra:
            continue
        if spec is None:
            meant = near_miss(key)
            if meant is not None:
                raise OptionError(f"{where}: unknown option {key!r}; did you mean {meant!r}?")
            if key.startswith(OWN_PREFIX):
                own = [k for k in OPTION_SPECS if k.startswith(OWN_PREFIX)]
                raise OptionError(f"{where}: unknown option {key!r}; the {OWN_PREFIX}* options "
                                  f"are: {', '.join(own)}")
            unknown.setdefault(where, []).append(key)
            continue
        problem = spec.check(value, graph)
        if problem is not None:
            raise OptionError(f"{where}: option {key} is {value!r}; {problem}")
    for where, keys in unknown.items():
        warnings.warn(f"{where}: {len(keys)} option(s) this tool does not read, ignored: "
                      f"{', '.join(keys)}", InputWarning, stacklevel=2)
