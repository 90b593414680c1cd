"""Argument validation shared by the core's public functions."""

from __future__ import annotations

import numpy as np

from .errors import InputError


def as_prob(p, name: str = "p") -> np.ndarray:
    """Return ``p`` as a float array, raising InputError unless every entry is in [0, 1]."""
    try:
        arr = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [0, 1], got {p!r}") from None
    if np.any(np.isnan(arr)) or np.any((arr < 0) | (arr > 1)):
        raise InputError(f"{name} must lie in [0, 1] (got {_show(arr)})")
    return arr


def as_group_size(K, name: str = "K", minimum: int = 1) -> np.ndarray:
    """Return ``K`` as an int64 array, raising InputError unless every entry is an integer >= minimum."""
    try:
        arr = np.asarray(K, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an integer >= {minimum}, got {K!r}") from None
    if np.any(~np.isfinite(arr)) or np.any(arr != np.round(arr)) or np.any(arr < minimum):
        raise InputError(f"{name} must be an integer >= {minimum} (got {_show(arr)})")
    return arr.astype(np.int64)


def as_rho(rho, name: str = "rho") -> np.ndarray:
    """Return ``rho`` as a float array, raising InputError unless every entry is in [0, 1)."""
    try:
        arr = np.asarray(rho, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [0, 1), got {rho!r}") from None
    if np.any(np.isnan(arr)) or np.any((arr < 0) | (arr >= 1)):
        raise InputError(f"{name} must lie in [0, 1) (got {_show(arr)})")
    return arr


def positive(x, name: str) -> float:
    """Return ``x`` as a float, raising InputError unless it is finite and > 0."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a positive number, got {x!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive number, got {x!r}")
    return v


def band(lo, hi) -> tuple[float, float]:
    """Validate a difficulty-filter band ``0 <= lo <= hi <= 1``."""
    lo_a, hi_a = as_prob(lo, "band low"), as_prob(hi, "band high")
    lo_f, hi_f = float(lo_a), float(hi_a)
    if lo_f > hi_f:
        raise InputError(f"filter band must have LO <= HI (got {lo_f:g} > {hi_f:g})")
    return lo_f, hi_f


def _show(arr: np.ndarray) -> str:
    flat = np.ravel(arr)
    if flat.size == 1:
        return f"{flat[0]:g}"
    return f"{flat.size} values, e.g. {', '.join(f'{v:g}' for v in flat[:3])}"
