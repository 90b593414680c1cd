"""How the lab displays a number, in one place, identical to the browser's ``Number.toFixed``.

The lab's readouts are computed in the browser while dragging and in Python
elsewhere; both must print the same text. JavaScript's ``toFixed`` rounds the
exact binary value half up, Python's ``format`` rounds half to even, so the
Python side rounds with :mod:`decimal` the way the browser does.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["fixed", "percent", "signed", "points"]


def fixed(x: float, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals, rounded as JavaScript's ``x.toFixed(digits)``; an en dash for NaN/inf."""
    if x is None or not math.isfinite(x):
        return "\u2013"
    q = Decimal(1).scaleb(-digits)
    d = Decimal(float(x)).copy_abs().quantize(q, rounding=ROUND_HALF_UP)
    sign = "-" if x < 0 and d != 0 else ""
    return f"{sign}{d:.{digits}f}"


def percent(x: float, digits: int = 1) -> str:
    """A share as a percentage string, e.g. 0.585 -> '58.5%' (computed as (100 * x).toFixed(digits) + '%')."""
    if x is None or not math.isfinite(x):
        return "\u2013"
    return fixed(100.0 * float(x), digits) + "%"


def signed(x: float, digits: int = 1) -> str:
    """``x`` as :func:`fixed` with its sign always written: '+0.50', '-3', '+0' (never '-0': a value that rounds
    to zero is '+0'); an en dash for None/NaN/inf."""
    s = fixed(x, digits)
    return s if s.startswith("-") or s == "\u2013" else "+" + s


def points(x: float, digits: int = 1) -> str:
    """A difference of two shares in percentage points, e.g. 0.089 -> '8.9 percentage points' (one point is one
    hundredth, so 10.8% against 1.9% differ by 8.9 points, not by 8.9%); an en dash for None/NaN/inf."""
    if x is None or not math.isfinite(x):
        return "\u2013"
    return fixed(100.0 * float(x), digits) + " percentage points"
