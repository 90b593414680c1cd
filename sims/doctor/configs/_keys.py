"""Shared checks of the per-trainer config readers: integers, floats and nested keys, each refusal one line."""

from __future__ import annotations

from ...errors import InputError

__all__ = ["as_int", "as_float", "get"]


def as_int(value, what: str, lo: int = 1) -> int:
    """``value`` as an integer >= ``lo``; InputError (one line) otherwise (booleans and non-integral floats too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < lo:
        raise InputError(f"trainer config: {what} must be an integer >= {lo}, got {value!r}")
    return int(value)


def as_float(value, what: str) -> float:
    """``value`` as a finite float; InputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        raise InputError(f"trainer config: {what} must be a number, got {value!r}")
    return float(value)


def get(d: dict, path: str, default=None):
    """``d['a']['b']`` for ``path`` 'a.b'; ``default`` where a step is missing or not a mapping."""
    node = d
    for p in path.split("."):
        if not isinstance(node, dict) or p not in node:
            return default
        node = node[p]
    return node
