r"""The fit, checked against the run window by window.

The run's steps are cut into windows of ``window`` steps (by default enough steps
for :data:`TARGET_WINDOWS` windows, and never fewer groups than
:data:`~.groups.MIN_GROUPS` in a window when the run allows; ``window=1`` fits
every step), one starting every ``stride`` steps: consecutive windows by default
(``stride = window``), rolling ones with a smaller stride. In each window a single Beta is fitted to that window's groups
(:func:`.fit.fit_beta`), and its predicted all-pass and all-fail shares at the
run's K (the fitted pmf at K and at 0) are set beside the observed shares with
their Jeffreys 95% intervals; ``inside`` says whether the prediction falls in the
interval, and ``gof`` is the window's chi-square test.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from .fit import fit_beta, share_interval
from .groups import MIN_GROUPS, RunGroups

__all__ = ["TARGET_WINDOWS", "default_window", "window_fits"]

TARGET_WINDOWS = 20  #: windows the run is cut into by default


def default_window(groups: RunGroups) -> int:
    """Steps per window: ceil(steps / TARGET_WINDOWS), raised until a window holds MIN_GROUPS groups on average."""
    steps = np.unique(groups.step)
    per_step = groups.n / len(steps)
    return int(min(len(steps), max(math.ceil(len(steps) / TARGET_WINDOWS), math.ceil(MIN_GROUPS / per_step))))


def window_fits(groups: RunGroups, window: int | None = None, stride: int | None = None) -> list[dict]:
    """One row per window: ``step_first``, ``step_last``, ``groups``, ``alpha``, ``beta``, ``mean``,
    ``observed_all_pass`` / ``observed_all_fail`` with ``..._interval``, ``predicted_all_pass`` /
    ``predicted_all_fail``, ``inside_all_pass`` / ``inside_all_fail`` and ``gof``."""
    if window is None:
        window = default_window(groups)
    stride = window if stride is None else stride
    for name, v in (("window", window), ("stride", stride)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"{name} must be a positive number of steps, got {v!r}")
    steps, inv = np.unique(groups.step, return_inverse=True)
    K = groups.K
    per_step = np.zeros((len(steps) + 1, K + 1))
    np.add.at(per_step, (inv + 1, groups.successes), 1.0)
    cum = np.cumsum(per_step, axis=0)  # cum[i] = cells of the first i steps
    rows = []
    for start in range(0, len(steps), stride):
        stop = min(start + window, len(steps))
        c = cum[stop] - cum[start]
        n = c.sum()
        if n == 0:
            continue
        f = fit_beta(c, K)
        lo_p, hi_p = share_interval(c[K], n)
        lo_f, hi_f = share_interval(c[0], n)
        rows.append({
            "step_first": int(steps[start]), "step_last": int(steps[stop - 1]),
            "groups": int(n), "alpha": f["alpha"], "beta": f["beta"], "mean": f["mean"], "at_bound": f["at_bound"],
            "observed_all_pass": float(c[K] / n), "observed_all_pass_interval": [float(lo_p), float(hi_p)],
            "observed_all_fail": float(c[0] / n), "observed_all_fail_interval": [float(lo_f), float(hi_f)],
            "predicted_all_pass": f["predicted_all_pass"], "predicted_all_fail": f["predicted_all_fail"],
            "inside_all_pass": bool(lo_p <= f["predicted_all_pass"] <= hi_p),
            "inside_all_fail": bool(lo_f <= f["predicted_all_fail"] <= hi_f),
            "gof": f["gof"],
        })
        if stop == len(steps):
            break
    return rows
