"""Reading a cell of the doctor's samplers table back (tests): its value and its interval."""

from __future__ import annotations

import re

__all__ = ["point_and_interval"]


def point_and_interval(cell: str) -> tuple[str, str | None]:
    """A cell split into its value (with its words) and its trailing " [lo, hi]" (None without one); a Monte Carlo
    SE (" \u00b1 se") is dropped."""
    m = re.fullmatch(r"(.*?)(?: \u00b1 [\d.]+%?)?(?: \[([^\]]*)\])?", cell)
    return m[1], m[2]
