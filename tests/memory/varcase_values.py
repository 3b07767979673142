"""Turn the vocabulary of the acceptance cases (spec appendix A) into API values.

Descriptors `{shape, format, dtype, size, attrs}`, ops `{name, type, outputs, weights, attrs,
output_offsets}`, init tensors `{desc, data}` with data written in words ("ten float32 values 1.0
(40 bytes)"), memory types by name, `none`, and symbols (`X`, `L`, ...). Definitions are resolved
lazily because some refer to symbols that steps produce (`logic_base + 2048*i`).
"""

from __future__ import annotations

import ast
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any

from streamalloc.memory import InitValue, MemType, VarDesc, VarOp, Weight
from streamalloc.memory.codes import dtype_code, format_code

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9, "ten": 10}
_VALUES = re.compile(r"^(\w+) float32 values ([\d.]+) \((\d+) bytes\)$")
_BYTES = re.compile(r"^(\d+) bytes$")
_TEMPLATE = re.compile(r"^for (\w+) in (\d+)\.\.(\d+): (\{.*\})$")
_RANGE = re.compile(r"^([A-Za-z_]+)(\d+)\.\.([A-Za-z_]+)(\d+)$")


def is_none(value: Any) -> bool:
    """`none` in a case is the null address / absent object (YAML reads it as a string)."""
    return value is None or value == "none"


def parse_data(text: str) -> bytes:
    """Bytes of an init tensor described in words."""
    match = _VALUES.match(text)
    if match:
        count = WORDS.get(match[1]) or int(match[1])
        data = struct.pack("<f", float(match[2])) * count
        assert len(data) == int(match[3]), text
        return data
    match = _BYTES.match(text)
    assert match, f"unsupported data description {text!r}"
    return bytes(int(match[1]))


def parse_mem_type(value: Any) -> int:
    """A memory type written by name (HBM, RDMA_HBM, ...) or number."""
    return int(value) if isinstance(value, int) else MemType[str(value)]


class Evaluator:
    """Arithmetic over symbols: `+ - *`, parentheses, calls and attributes of given names."""

    def __init__(self, names: Callable[[str], Any]) -> None:
        self.names = names

    def eval(self, text: str) -> Any:
        """Evaluate an expression such as `E + (L - manager(0).var_mem_logic_base)`."""
        return self._node(ast.parse(text, mode="eval").body)

    def _node(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.names(node.id)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self._node(node.left), self._node(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._node(node.operand)
        if isinstance(node, ast.Attribute):
            return getattr(self._node(node.value), node.attr)
        if isinstance(node, ast.Call):
            return self._node(node.func)(*[self._node(a) for a in node.args])
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        raise AssertionError(f"unsupported expression {ast.unparse(node)!r}")

    def _subscript(self, node: ast.Subscript) -> Any:
        target = self._node(node.value)
        key = node.slice
        # `map[global_step2_0]`: a bare name inside brackets is a literal key
        index = key.id if isinstance(key, ast.Name) else self._node(key)
        return target[index]


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
}


class Definitions:
    """The case's `definitions`, resolved on use against the run's symbols."""

    def __init__(self, raw: Mapping[str, Any], symbol: Callable[[str], Any]) -> None:
        self.raw: dict[str, Any] = {}
        self.symbol = symbol
        self.ops: dict[str, VarOp] = {}  # ops changed by steps (set_output_offsets)
        for name, value in raw.items():
            template = _TEMPLATE.match(value) if isinstance(value, str) else None
            if template:
                self._expand(template)
            else:
                self.raw[name] = value

    def _expand(self, match: re.Match[str]) -> None:
        var, low, high, body = match[1], int(match[2]), int(match[3]), match[4]
        for i in range(low, high + 1):
            text = body.replace(f"<{var}>", str(i))
            text = re.sub(r"\[([^\[\]]*\b" + var + r"\b[^\[\]]*)\]",
                          lambda m, i=i: "[" + repr(re.sub(rf"\b{var}\b", str(i), m[1])) + "]",
                          text)
            item = _yaml(text)
            self.raw[item["name"]] = item

    def names(self, text: str) -> list[str]:
        """`var0..var9, other` -> the definition names."""
        out: list[str] = []
        for part in (p.strip() for p in text.split(",")):
            match = _RANGE.match(part)
            if match:
                out += [f"{match[1]}{i}" for i in range(int(match[2]), int(match[4]) + 1)]
            else:
                out.append(part)
        return out

    def desc(self, value: Any) -> VarDesc:
        """A descriptor from a definition name or an inline mapping."""
        if isinstance(value, str):
            return self.desc(self.raw[value])
        attrs = value.get("attrs") or {}
        init = self.init_value(attrs["_init_value"]) if "_init_value" in attrs else None
        shape = tuple(value.get("shape") or ())
        fmt = format_code(value.get("format"))
        return VarDesc(shape=shape, format=fmt, dtype=dtype_code(value.get("dtype")),
                       origin_format=fmt, origin_shape=shape, size=int(value.get("size", 0)),
                       init_value=init)

    def init_value(self, value: Any) -> InitValue:
        """An init tensor from a name or mapping."""
        if isinstance(value, str):
            return self.init_value(self.raw[value])
        return InitValue(self.desc(value["desc"]), parse_data(value["data"]))

    def op(self, value: Any) -> VarOp | None:
        """An op from a definition name, an inline mapping, or None."""
        if is_none(value):
            return None
        if isinstance(value, str):
            return self.ops.get(value) or self.op(self.raw[value])
        weights = value.get("weights")
        weight = None if weights is None else Weight(
            dtype_code(weights.get("dtype")), tuple(weights.get("shape") or ()),
            None if is_none(weights.get("bytes")) else bytes(weights["bytes"]))
        offsets = tuple(self.number(o) for o in value.get("output_offsets") or ())
        attrs = {k: tuple(v) if isinstance(v, list) else v
                 for k, v in (value.get("attrs") or {}).items()}
        return VarOp(value["name"], value["type"],
                     tuple(self.desc(d) for d in value.get("outputs") or ()),
                     weight, attrs, offsets)

    def number(self, value: Any) -> Any:
        """An integer, `none`, a symbol or an arithmetic expression over symbols."""
        if is_none(value):
            return None
        if isinstance(value, int):
            return value
        return Evaluator(self.symbol).eval(str(value))


def _yaml(text: str) -> Any:
    import yaml
    return yaml.safe_load(text)
