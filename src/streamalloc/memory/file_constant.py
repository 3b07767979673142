"""FileConstant external weights: finding a weight's file, reading it, exporting weights.

A FileConstant's file is found in one of three ways, in this order (GE's FileConstantUtils):

1. IR attribute `file_path`: the file itself, read from offset 0;
2. IR attribute `file_id`, mapped to a file by option `ge.exec.value_bins`
   (`{"value_bins": [{"value_bin_id": ID, "value_bin_file": PATH}, ...]}`), from offset 0;
3. private attribute `location` (set by the parser or by weight export) with `offset` and
   `length`; `location:offset` (`file_constant_path`) is also what the manager deduplicates
   FileConstants by (spec 5).

The bytes read are `length` when positive, else the tensor's byte size. Relative paths resolve
against the directory the caller names (the model's directory).

Export (`ge.externalWeight`): mode "1" writes each weight to its own file, mode "2" all weights
into one file at increasing offsets (each aligned to 512 bytes); either way the Const / Constant
nodes become FileConstant nodes with `location`, `offset`, `length`. Identical weights are written
once and share a file and offset, so the manager's path reuse gives them one block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streamalloc.memory.codes import (
    FILE_CONSTANT,
    Status,
    VarGraphError,
    VarOptionsInvalid,
    align512,
    fail,
)
from streamalloc.memory.desc import VarOp, raw_tensor_bytes

FILE_PATH = "file_path"
FILE_ID = "file_id"
LOCATION = "location"
OFFSET = "offset"
LENGTH = "length"
VALUE_BINS_OPTION = "ge.exec.value_bins"
EXTERNAL_WEIGHT_OPTION = "ge.externalWeight"
COMBINED_FILE = "weight_combined.bin"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class FileLocation:
    """Where a FileConstant's bytes are: path, offset, length, and which way found it."""

    path: str
    offset: int
    length: int
    how: str


def file_id_map(options: Mapping[str, str]) -> dict[str, str]:
    """`ge.exec.value_bins` as file id -> path (empty when the option is unset)."""
    text = options.get(VALUE_BINS_OPTION, "")
    if not text:
        return {}
    try:
        bins = json.loads(text)["value_bins"]
        return {str(b["value_bin_id"]): str(b["value_bin_file"]) for b in bins}
    except (ValueError, KeyError, TypeError) as exc:
        fail(Status.PARAM_INVALID, f"option {VALUE_BINS_OPTION} is not "
             '{"value_bins": [{"value_bin_id": ..., "value_bin_file": ...}]}: '
             f"{exc}", VarOptionsInvalid)


def locate(op: VarOp, options: Mapping[str, str] | None = None) -> FileLocation:
    """The file of a FileConstant op by the three ways above; FAILED when none applies."""
    size = raw_tensor_bytes(op.outputs[0]) if op.outputs else None
    length = op.int_attr(LENGTH) or (size or 0)
    path = op.str_attr(FILE_PATH)
    if path:
        return FileLocation(path, 0, length, FILE_PATH)
    file_id = op.str_attr(FILE_ID)
    if file_id:
        ids = file_id_map(options or {})
        if file_id not in ids:
            fail(Status.FAILED, f"FileConstant {op.name!r}: file_id {file_id!r} is not in option "
                                f"{VALUE_BINS_OPTION} (known: {sorted(ids) or 'none'})",
                 VarGraphError)
        return FileLocation(ids[file_id], 0, length, FILE_ID)
    location = op.str_attr(LOCATION)
    if not location:
        fail(Status.FAILED, f"FileConstant {op.name!r} names no file: set attr {FILE_PATH}, "
                            f"{FILE_ID} (with option {VALUE_BINS_OPTION}) or {LOCATION}",
             VarGraphError)
    return FileLocation(location, op.int_attr(OFFSET), length, LOCATION)


def file_constant_path(op: VarOp | None) -> str:
    """`"<location>:<offset>"` of a FileConstant op, "" for other ops or an empty location."""
    if op is None or op.type != FILE_CONSTANT:
        return ""
    location = op.str_attr(LOCATION)
    return f"{location}:{op.int_attr(OFFSET)}" if location else ""


def read_weight(where: FileLocation, base_dir: Path | None = None) -> bytes:
    """The bytes of a located weight; VarGraphError when the file is missing or too short."""
    path = Path(where.path)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        with path.open("rb") as handle:
            handle.seek(where.offset)
            data = handle.read(where.length)
    except OSError as exc:
        fail(Status.FAILED, f"{path}: cannot read the weight file: {exc.strerror or exc}",
             VarGraphError)
    if len(data) != where.length:
        fail(Status.FAILED, f"{path}: expected {where.length} bytes at offset {where.offset}, "
                            f"the file has only {len(data)}", VarGraphError)
    return data


def export_mode(options: Mapping[str, str]) -> int:
    """`ge.externalWeight`: 0 (off), 1 (one file per weight) or 2 (one combined file)."""
    text = options.get(EXTERNAL_WEIGHT_OPTION, "") or "0"
    if text not in ("0", "1", "2"):
        fail(Status.PARAM_INVALID, f"option {EXTERNAL_WEIGHT_OPTION} is {text!r}; expected "
                                   '"0", "1" (a file per weight) or "2" (one combined file)',
             VarOptionsInvalid)
    return int(text)


@dataclass
class WeightWriter:
    """Lays weights out in files for one export; identical bytes are stored once."""

    directory: Path
    mode: int
    files: dict[str, bytearray]
    seen: dict[bytes, FileLocation]

    @classmethod
    def create(cls, directory: Path, mode: int) -> WeightWriter:
        """An empty writer for mode 1 or 2."""
        assert mode in (1, 2)
        return cls(directory, mode, {}, {})

    def place(self, name: str, data: bytes) -> FileLocation:
        """Where `data` (the weight of node `name`) goes."""
        if data in self.seen:
            return self.seen[data]
        if self.mode == 1:
            path = self._unique(f"{_UNSAFE.sub('_', name)}.bin")
            self.files[path] = bytearray(data)
            where = FileLocation(path, 0, len(data), LOCATION)
        else:
            path = str(self.directory / COMBINED_FILE)
            blob = self.files.setdefault(path, bytearray())
            offset = align512(len(blob))
            blob.extend(bytes(offset - len(blob)) + data)
            where = FileLocation(path, offset, len(data), LOCATION)
        self.seen[data] = where
        return where

    def _unique(self, filename: str) -> str:
        path, k = self.directory / filename, 0
        while str(path) in self.files:
            k += 1
            path = self.directory / f"{Path(filename).stem}_{k}.bin"
        return str(path)

    def write(self) -> tuple[str, ...]:
        """Write every file (each completely or not at all); returns the paths."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path, data in self.files.items():
            tmp = Path(path + ".tmp")
            tmp.write_bytes(bytes(data))
            tmp.replace(path)
        return tuple(self.files)
