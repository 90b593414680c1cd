r"""Predictive bands for a logged share: what the next rows of the log will read, not where the mean lies.

A row of the log reports a share over n groups (the groups per row). Under the fitted model with parameters
theta the share's count is Binomial(n, pi(s; theta)); the fit's uncertainty is carried by parameter draws
theta_1..theta_D from its normal approximation. The predictive law of the logged share at step s is the
mixture (1/D) sum_d Binomial(n_eff, pi(s; theta_d)) / n_eff, and the band at level L is its (1 - L)/2 and
(1 + L)/2 quantiles (:func:`band`), found exactly on the count lattice by bisection on the mixture's cdf
(``scipy.special.bdtr``).

**Over-dispersion.** Real rows scatter more than the binomial: prompts repeat, rollouts of a prompt are
correlated, the drift is not exactly the model's. :func:`dispersion` is the Pearson statistic of the fitted
rows, phi = sum (x - n pi)^2 / (n pi (1 - pi)) / (rows - parameters), floored at 1; the band then uses
n_eff = n / phi groups (the quasi-binomial variance phi n pi (1 - pi) of the count; named in the output), and the
callers draw the parameters from the fit's covariance times phi (quasi-likelihood). On rows that follow the model
phi is near 1 and the band is the binomial mixture. What the band does not hold: a drift whose shape the model
lacks (the back-test, :mod:`.backtest`, measures how far that carries on the run's own history).

Edge cases: n < 1 or NaN rows give NaN bounds; n_eff is at least 1 (a dispersion above n leaves one effective
group a row: the band is then the Bernoulli mixture's); pi is clipped to [0, 1]; no draws: the point fit alone.
"""

from __future__ import annotations

import numpy as np
from scipy.special import bdtr

__all__ = ["LEVEL", "band", "dispersion", "quantiles"]

LEVEL = 0.9  #: level of every predictive band the doctor prints
BISECT_MAX = 64  #: bisection steps (enough for n up to 2^64)


def quantiles(p_draws, n, qs) -> np.ndarray:
    """Quantiles ``qs`` of the share X / n, X ~ (1/D) sum_d Binomial(n, p_d), per column.

    ``p_draws``: (D, G) success probabilities (D draws, G steps); ``n``: groups per step (scalar or (G,),
    rounded to an integer >= 1). Returns (len(qs), G) shares; NaN where n is not finite or below 1.
    """
    P = np.clip(np.atleast_2d(np.asarray(p_draws, float)), 0.0, 1.0)
    G = P.shape[1]
    n_arr = np.broadcast_to(np.asarray(n, float), (G,))
    ok = np.isfinite(n_arr) & (n_arr >= 1)
    N = np.where(ok, np.maximum(np.round(np.where(ok, n_arr, 1.0)), 1.0), 1.0)
    out = np.full((len(qs), G), np.nan)
    for j, q in enumerate(qs):
        lo = np.full(G, -1.0)  # cdf(lo) < q (cdf(-1) = 0)
        hi = N.copy()  # cdf(hi) = 1 >= q
        for _ in range(BISECT_MAX):
            if np.all(hi - lo <= 1):
                break
            mid = np.floor((lo + hi) / 2)
            cdf = np.mean(bdtr(np.maximum(mid, 0.0).astype(np.int64)[None, :], N.astype(np.int64)[None, :], P), axis=0)
            cdf = np.where(mid < 0, 0.0, cdf)
            below = cdf < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        out[j] = np.where(ok, hi / N, np.nan)
    return out


def dispersion(observed, n, fitted, n_params: int) -> float:
    """Pearson over-dispersion phi >= 1 of logged shares ``observed`` over ``n`` groups against ``fitted``
    (see the module docstring); 1 where fewer rows than parameters + 1 are usable."""
    x, n, pi = (np.asarray(v, float) for v in (observed, n, fitted))
    ok = np.isfinite(x) & np.isfinite(n) & (n > 0) & np.isfinite(pi) & (pi > 1e-9) & (pi < 1 - 1e-9)
    df = int(ok.sum()) - int(n_params)
    if df < 1:
        return 1.0
    r = (x[ok] - pi[ok]) ** 2 * n[ok] / (pi[ok] * (1 - pi[ok]))
    return float(max(1.0, r.sum() / df))


def band(p_draws, n, level: float = LEVEL, phi: float = 1.0, median: bool = False) -> dict:
    """``{"level", "lo", "hi"}`` (and ``"median"``) of the logged share per column of ``p_draws`` (D x G) over
    ``n`` groups per row, the count's variance inflated by ``phi`` (n_eff = n / phi)."""
    n = np.asarray(n, float)
    n_eff = np.where(n >= 1, np.maximum(n / max(float(phi), 1.0), 1.0), n)  # at least one effective group a row
    qs = [(1 - level) / 2, (1 + level) / 2] + ([0.5] if median else [])
    q = quantiles(p_draws, n_eff, qs)
    out = {"level": float(level), "lo": q[0], "hi": q[1]}
    if median:
        out["median"] = q[2]
    return out
