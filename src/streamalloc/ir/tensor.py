"""Tensor descriptions: what a loader knows about one input or output of a node."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import msgspec

from streamalloc.ir.dtypes import DTYPE_BITS

if TYPE_CHECKING:
    from streamalloc.ir.attrs import AttrValue


def _no_attrs() -> Mapping[str, AttrValue]:
    return MappingProxyType({})


class TensorDesc(msgspec.Struct, frozen=True):
    """Shape (None = unknown; -1 = unknown dim), dtype name, format string and GE tensor attrs."""

    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    format: str | None = None
    attrs: Mapping[str, AttrValue] = msgspec.field(default_factory=_no_attrs)

    def elements(self) -> int | None:
        """Number of elements, or None when the shape is unknown or dynamic."""
        if self.shape is None or any(d < 0 for d in self.shape):
            return None
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    def size_bytes(self) -> int | None:
        """Bytes of the tensor (elements x dtype width, rounded up), or None if unknown."""
        count = self.elements()
        bits = DTYPE_BITS.get(self.dtype) if self.dtype else None
        if count is None or bits is None:
            return None
        return (count * bits + 7) // 8
