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
