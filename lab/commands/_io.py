"""Output helpers shared by the subcommands: strict JSON and plain text tables."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Iterable

from grpo_lab.sims.jsonable import jsonable


def print_json(obj: Any) -> None:
    json.dump(jsonable(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def column_format(values: Iterable, digits: int = 6) -> str:
    """One format for a column of numbers: fixed with ``digits`` decimals when every finite non-zero value lies in
    [1e-4, 1e6) in size (0.656100, 0.000100), else scientific with ``digits - 2`` (6.561000e-01 ... 1.0000e-08), so
    that no column mixes 0.6561, 0.430467 and 1e-08."""
    vals = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v)) and float(v) != 0]
    if all(1e-4 <= v < 1e6 for v in vals):
        return f".{digits}f"
    return f".{max(digits - 2, 1)}e"


def print_table(rows: Iterable[dict], columns: list[str], formats: dict[str, str] | None = None,
                left: Iterable[str] = ()) -> None:
    """Print rows as an aligned text table (columns right-aligned, those in ``left`` left-aligned)."""
    formats = formats or {}
    rows = list(rows)

    def cell(row, col):
        v = row[col]
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "-"
        return format(v, formats.get(col, "")) if col in formats else str(v)

    body = [[cell(r, c) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(columns)]
    left = set(left)

    def line(cells):
        return "  ".join(v.ljust(w) if c in left else v.rjust(w) for c, v, w in zip(columns, cells, widths)).rstrip()

    print(line(columns))
    for b in body:
        print(line(b))
