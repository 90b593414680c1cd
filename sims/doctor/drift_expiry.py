r"""The mixed share ahead from a measured drift: the expiry (its crossing of the threshold) and its predictive band.

One function of a :func:`.drift.measure_drift` result, whatever the evidence was (group counts, or the per-step
shares of :mod:`.drift_shares`): the futures the stall risk draws (:func:`.stall_risk.drift_futures`: the (variant,
shape) pair by the leave-future-out chooser's weight, the population from its approximation, the shifts re-measured
under it, the shape refitted and its path of h drawn over the future steps) read as the mixed share
u(s) = 1 - P(0 | h(s)) - P(K | h(s)) of each drawn population's table (:func:`.drift.population_table`).

* **Projection**: the pointwise median of the drawn u per future step; the **expiry** is its first step below the
  threshold, its 95% interval the 2.5% and 97.5% quantiles of each draw's first crossing (a draw that never
  crosses within the grid: beyond the horizon), as :func:`.scalars_forecast.expiry_from_curves` words it.
* **Now**: the fitted mixed share at the last logged row: each drawn shape's fitted mean of h there (:func:`.drift.
  predict`) through its population's table, averaged over the draws.
* **Predictive band** (:mod:`.predictive`): the draws' u mixed with a row's binomial noise over the groups a row
  logs, over-dispersed by phi, the Pearson statistic of the logged rows' mixed share against the same fitted
  mixed share at each row (:func:`.predictive.dispersion`, :data:`FIT_PARAMS` parameters; floored at 1): n / phi
  effective groups. Deviation from the drift maps' band (:func:`.scalars_forecast.predictive_mixed`): the
  parameters' covariance is not scaled by phi, as the shapes' own fits already scale theirs by their misfit to the
  per-step shifts (:func:`.drift.fit_shape`'s ``scale``), and the walk and jump carry their own future noise.

Edge cases: rows with no finite mixed share or no groups are left out of phi (no such row: phi = 1); a grid step
beyond the drift's :data:`.drift.H_GRID` clips h at its ends (np.interp).
"""

from __future__ import annotations

import numpy as np

from .drift import H_GRID, predict
from .predictive import LEVEL, band, dispersion
from .stall_risk import DRAWS, drift_futures

__all__ = ["FIT_PARAMS", "mixed_draws", "drift_expiry", "drift_band"]

#: parameters counted against the rows' Pearson statistic: the population's two (a, b) and a two-parameter drift
FIT_PARAMS = 4


def mixed_draws(drift: dict, evidence, steps, row_steps=None, draws: int = DRAWS, seed: int = 0) -> dict:
    """``{"draws": U (D, len(steps)), "fitted": (len(row_steps),)}``: the drawn mixed share at future ``steps``
    (after the last logged step) and the fitted mixed share at the logged ``row_steps`` (module docstring),
    ``evidence`` what ``drift`` was measured on (its ``counts``)."""
    rng = np.random.default_rng(seed)
    s0 = float(drift["steps"][0])
    tau_f = np.asarray(steps, float) - s0
    tau_r = np.asarray(drift["steps"][-1:] if row_steps is None else row_steps, float) - s0
    U, fitted, n = [], np.zeros(len(tau_r)), 0
    for tab, fit, paths in drift_futures(drift, evidence, drift["settings"], tau_f, draws, rng):
        U.append(np.interp(paths, H_GRID, tab["u"]))
        fitted += len(paths) * np.interp(predict(fit, tau_r)[0], H_GRID, tab["u"])
        n += len(paths)
    return {"draws": np.clip(np.concatenate(U), 0.0, 1.0), "fitted": fitted / max(n, 1)}


def _band(U, fitted, rows: dict, groups, level: float, median: bool = False) -> dict:
    """:func:`.predictive.band` of the draws ``U`` over ``groups`` a row, phi the logged ``rows``' Pearson statistic
    against ``fitted`` (at ``rows["step"]``), with ``groups``, ``dispersion``, ``parameter_draws``."""
    phi = dispersion(rows["mixed"], rows["groups"], fitted, FIT_PARAMS)
    return {**band(U, groups, level, phi, median), "groups": groups, "dispersion": phi, "parameter_draws": int(len(U))}


def drift_band(drift: dict, evidence, steps, groups, rows: dict, level: float = LEVEL, draws: int = DRAWS,
               seed: int = 0, median: bool = False) -> dict:
    """The ``level`` predictive band of the mixed share logged at future ``steps`` over ``groups`` groups a row
    (scalar or per step), ``rows`` the logged rows ``{"step", "mixed", "groups"}`` phi is measured on (module
    docstring): :func:`.predictive.band`'s dict with ``groups``, ``dispersion``, ``parameter_draws``."""
    m = mixed_draws(drift, evidence, steps, rows["step"], draws, seed)
    return _band(m["draws"], m["fitted"], rows, groups, level, median)


def drift_expiry(drift: dict, evidence, grid, threshold: float, rows: dict, groups: float, draws: int = DRAWS,
                 seed: int = 0, predictive: bool = True, level: float = LEVEL, keep_draws: bool = False) -> dict:
    """The expiry dict of :func:`.scalars_forecast.expiry_from_curves` (``threshold``, ``mixed_now``, ``step``,
    ``interval``, ``status``, ``horizon_step``, ``projection`` {step, mixed, predictive}) from the measured
    ``drift`` on the future ``grid``; ``rows`` the logged rows (``step``, ``mixed``, ``groups``: phi and the fitted
    share now), ``groups`` a future row's groups; ``predictive`` False: no band (None). Adds ``model`` ("drift
    shapes"), ``shapes`` (the chooser's weights) and ``fitted`` {step, mixed}: the fitted mixed share at the logged
    rows (what phi is measured against; the report draws it); ``keep_draws``: ``draws``, the drawn mixed share
    (draws x grid), too (the scalars stall forecast reads the same futures)."""
    from .scalars_forecast import expiry_from_curves

    grid = np.asarray(grid, float)
    row_steps = np.concatenate([np.asarray(rows["step"], float), [float(drift["steps"][-1])]])
    m = mixed_draws(drift, evidence, grid, row_steps, draws, seed)
    U, fitted = m["draws"], m["fitted"]
    pred = _band(U, fitted[:-1], rows, float(groups), level) if predictive else None
    out = expiry_from_curves(grid, np.median(U, axis=0), U, float(fitted[-1]), threshold, "drift", pred)
    return {**out, "model": "drift shapes", "shapes": drift["weights"]["weights"],
            "fitted": {"step": row_steps[:-1], "mixed": fitted[:-1]}, **({"draws": U} if keep_draws else {})}
