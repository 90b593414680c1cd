r"""The tie share's own trend, for rewards that are not binary (:mod:`.rewards`).

With rewards other than 0 and 1 there is no pass rate and no all-pass / all-fail split: what the trainer logs
is the share of groups whose K rewards all tie (zero std: TRL's ``frac_reward_zero_std``), and the groups
that train are the others (the mixed share, 1 - tie). The model is a logistic trend of the tie share,

    logit pi(s) = a + b t,   t = (s - s_first) / (s_last - s_first),

the count of tied groups at a row of n groups Binomial(n, pi(s)); maximum likelihood by Newton's method on
(a, b) (two parameters: the information matrix is 2 x 2), standard errors from its inverse. The expiry is
the first future step at which the fitted mixed share 1 - pi falls below the threshold (the same grid and
horizon as :func:`.scalars_forecast.future_grid`), its 95% interval over :data:`DRAWS` draws of (a, b) from
the fit's normal approximation (its covariance scaled by the Pearson over-dispersion, quasi-likelihood), and the projection carries the 90% predictive band of the logged mixed
share (each draw's 1 - pi mixed with the row's binomial noise over-dispersed by the fit's Pearson statistic,
:mod:`.predictive`). No population, no pass rate: those statements do not apply.

Edge cases: rows without a finite tie share or groups are left out; fewer than 3 rows raise InputError; a
tie share of 0 or 1 at every row gives a fit at the Newton cap (``at_bound``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..errors import InputError
from .forecast import DEFAULT_THRESHOLD
from .predictive import LEVEL, band, dispersion

__all__ = ["fit_tie_trend", "tie_expiry", "tie_predict", "DRAWS", "MODEL"]

DRAWS = 400  #: parameter draws of the intervals and the band
MODEL = "tie share: logit pi = a + b t"  #: the fit's ``model`` (what :mod:`.scalars_forecast` dispatches on)
NEWTON = 50  #: Newton iterations at most
BOUND = 30.0  #: |a|, |b| beyond this: at the bound (the tie share at 0 or 1 at every row)
Z95 = 1.959963984540054


def _rows(step, n, tie):
    step, n, tie = (np.asarray(v, float) for v in (step, n, tie))
    ok = np.isfinite(step) & np.isfinite(n) & (n > 0) & np.isfinite(tie)
    return step[ok], n[ok], np.clip(tie[ok], 0.0, 1.0)


def fit_tie_trend(step, n, tie) -> dict:
    """ML fit of the logistic trend of the tie share (see the module docstring)."""
    s, n, y = _rows(step, n, tie)
    if len(s) < 3:
        raise InputError(f"the tie-share trend needs at least 3 rows with a zero-std share and their groups, got {len(s)}")
    s0, s1 = float(s[0]), float(s[-1])
    t = (s - s0) / max(s1 - s0, 1.0)
    k = y * n
    x = np.array([float(np.log((k.sum() + 0.5) / (n.sum() - k.sum() + 0.5))), 0.0])
    X = np.stack([np.ones_like(t), t], 1)
    for _ in range(NEWTON):
        pi = expit(X @ x)
        g = X.T @ (k - n * pi)
        H = (X * (n * pi * (1 - pi))[:, None]).T @ X + 1e-9 * np.eye(2)
        dx = np.linalg.solve(H, g)
        x = np.clip(x + np.clip(dx, -5, 5), -BOUND, BOUND)
        if np.max(np.abs(dx)) < 1e-8:
            break
    pi = expit(X @ x)
    H = (X * (n * pi * (1 - pi))[:, None]).T @ X
    try:
        cov = np.linalg.inv(H) if np.linalg.cond(H) < 1e12 else np.full((2, 2), np.nan)
    except np.linalg.LinAlgError:
        cov = np.full((2, 2), np.nan)
    se = np.sqrt(np.abs(np.diag(cov)))
    return {"model": MODEL, "a": float(x[0]), "b": float(x[1]), "theta": x, "cov": cov,
            "se_a": float(se[0]), "se_b": float(se[1]),
            "intervals": {"b": [float(x[1] - Z95 * se[1]), float(x[1] + Z95 * se[1])]},
            "at_bound": bool(np.any(np.abs(x) >= BOUND - 1e-9)), "steps": [int(s0), int(s1)], "n_params": 2,
            "series": {"step": s, "groups": n, "observed_tie": y, "fitted_tie": pi},
            "dispersion": dispersion(1 - y, n, 1 - pi, 2)}


def _draws(fit, n_draws, seed):
    if not np.all(np.isfinite(fit["cov"])):
        return fit["theta"][None, :]
    rng = np.random.default_rng(seed)
    cov = fit["cov"] * max(fit["dispersion"], 1.0)  # quasi-likelihood: over-dispersed rows, wider parameters
    return np.clip(rng.multivariate_normal(fit["theta"], cov, size=n_draws, method="eigh"), -BOUND, BOUND)


def tie_predict(fit: dict, steps, n, n_draws: int = DRAWS, seed: int = 0, level: float = LEVEL,
                median: bool = False) -> dict:
    """Fitted mixed share (1 - tie) at ``steps``, its parameter draws and the ``level`` predictive band of a row
    of ``n`` groups."""
    s0, s1 = fit["steps"]
    t = (np.asarray(steps, float) - s0) / max(s1 - s0, 1.0)
    X = np.stack([np.ones_like(t), t], 1)
    P = 1 - expit(_draws(fit, n_draws, seed) @ X.T)  # draws x steps, mixed share
    return {"mixed": 1 - expit(X @ fit["theta"]), "draws": P,
            "predictive": {**band(P, n, level, fit["dispersion"], median), "groups": float(np.median(n)),
                           "dispersion": fit["dispersion"], "parameter_draws": int(len(P))}}


def tie_expiry(fit: dict, threshold: float = DEFAULT_THRESHOLD, n_draws: int = DRAWS, seed: int = 0) -> dict:
    """The expiry of the mixed share under the tie trend, in the shape of :func:`.scalars_forecast.expiry_forecast`."""
    from .scalars_forecast import expiry_from_curves, future_grid

    grid = future_grid(fit)
    pr = tie_predict(fit, grid, float(np.median(fit["series"]["groups"])), n_draws, seed)
    now = float(1 - fit["series"]["fitted_tie"][-1])
    return {**expiry_from_curves(grid, pr["mixed"], pr["draws"], now, threshold, "trend", pr["predictive"]),
            "model": "tie share"}
