"""Field checks for plan files (docs/plan-format.md), shared by the verifier and the emulator.

Errors read `FILE: field F: expected X, found Y (docs/plan-format.md)` (exit 3). A plan file is
first validated against the plan schema (`schemas.check_document`); these checks type what the
readers keep, and also guard plans given as dicts (the allocator's own, tests).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamalloc.errors import InputError
from streamalloc.json_text import decode_json
from streamalloc.schemas.parts import ID_MAX

PLAN_DOC = "docs/plan-format.md"


class PlanFields:
    """Type checks whose errors read `FILE: field F: expected X, found Y`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str, found: Any) -> InputError:
        try:
            shown = json.dumps(found)
        except (TypeError, ValueError):
            shown = type(found).__name__
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return InputError(f"{self.source}: field {where}: expected {expected}, found {shown} "
                          f"({PLAN_DOC})")

    def int_(self, value: Any, where: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(where, f"an integer >= {minimum}", value)
        return value

    def optional_int(self, value: Any, where: str) -> int | None:
        return None if value is None else self.int_(value, where)

    def text(self, value: Any, where: str, *, empty: bool = False) -> str:
        if not isinstance(value, str) or not (value or empty):
            raise self.fail(where, "a string" if empty else "a non-empty string", value)
        return value

    def obj(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, "a JSON object", value)
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, "a JSON list", value)
        return value

    def stream_key(self, key: Any, where: str) -> int:
        if not (isinstance(key, str) and key.isdigit() and len(key) <= len(str(ID_MAX))
                and str(int(key)) == key and int(key) <= ID_MAX):
            raise self.fail(where, f'a stream id key such as "0", at most {ID_MAX}', key)
        return int(key)

    def int_list(self, value: Any, where: str) -> tuple[int, ...]:
        return tuple(self.int_(s, f"{where}[{i}]") for i, s in enumerate(self.array(value, where)))


def read_plan_json(path: Path) -> Any:
    """The parsed JSON of a plan file; unreadable files and bad JSON are input errors."""
    return plan_json(path, read_plan_bytes(path))


def read_plan_bytes(path: Path) -> bytes:
    """The bytes of a plan file (read once: a caller that decodes them twice, as `emulate`
    does, sees one file even when it is a pipe or changes meanwhile)."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the plan file: {exc.strerror or exc}") from None


def plan_json(path: Path, data: bytes) -> Any:
    """The parsed JSON of the bytes of plan file `path`; text that is not UTF-8 or not JSON is
    an input error (its line counted as a text file's, whatever its line ends)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read the plan file: {exc}") from None
    try:
        return decode_json(text)
    except json.JSONDecodeError as exc:
        before = text[:exc.pos].replace("\r\n", "\n").replace("\r", "\n")
        line = before.count("\n") + 1
        raise InputError(f"{path}:{line}: not valid JSON ({exc.msg}); a plan file is the JSON "
                         f"object described in {PLAN_DOC}") from None
