"""Reading a cell of the doctor's samplers table back (tests): its value, its Monte Carlo SE and its interval."""

from __future__ import annotations

__all__ = ["figure"]


def figure(cell: str) -> tuple[str, str | None, list[str] | None]:
    """A samplers cell "value [\u00b1 se] [[lo, hi]]" split into its value, Monte Carlo SE and interval texts (the
    value keeps its words: "beyond the run (1,519 steps)")."""
    value, _, rest = cell.partition(" [")
    value, _, se = value.partition(" \u00b1 ")
    return value, se or None, rest.rstrip("]").split(", ") if rest else None
