"""Plain-text tables with aligned columns (numbers right-aligned)."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render rows under headers, columns padded to their widest cell.

    >>> print(format_table(["a", "n"], [["x", 1], ["yy", 22], ["z", "-"]]))
    a    n
    --  --
    x    1
    yy  22
    z    -
    """
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    # a number column may have "-" cells (no value: a mode without a solver, a run without a
    # plan); it stays right-aligned
    numeric = [any(_is_number(r[i]) for r in cells)
               and all(_is_number(r[i]) or r[i] == "-" for r in cells)
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric,
                                                                           strict=True)]
        return "  ".join(padded).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
