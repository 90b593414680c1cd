r"""When will the prompt set stop teaching? Per-prompt pass-rate trends, extrapolated.

Trend model (a logistic regression over the whole run): prompt x's pass rate at
step s is ``p_x(s) = sigmoid(alpha_x + beta t)``, ``t = (s - s_first) / (s_last - s_first)``,
with one intercept per prompt and one shared slope beta (how fast the policy
moves every prompt on the logit scale). A group at step s has S ~ Binomial(K, p_x(s)).
Each prompt also gets half a success and half a failure at its mean step (a
Jeffreys-style pseudo-observation) so that a prompt never or always solved has a
finite intercept. The fit is Newton's method on the joint log-likelihood, whose
information matrix is an arrow (diagonal in the alphas, one row for beta), solved
through its Schur complement; ``se_beta`` is the Schur complement's inverse square root.

The forecast effective group rate at step s is the mean over the prompts seen
of :func:`grpo_lab.sims.outcomes.p_useful` (p_x(s), K) (prompts drawn uniformly).
The forecast crossing is the first step after the run at which it falls below
the threshold (default :data:`DEFAULT_THRESHOLD`, seed 000's warning level),
searched up to :data:`HORIZON` run lengths ahead; the interval repeats the search
with beta at its 95% bounds (alphas re-fitted for each). **Backtest**: the same
fit on the first half of the steps, forecasting the second half, against the
observed per-step effective rate (mean absolute error, mean signed error) and,
when the observed rolling rate crosses the threshold in the second half, the
error in the crossing step.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, ndtri

from ..outcomes import p_useful
from ..replay import rolling_mean
from .groups import RunGroups
from .predictive import LEVEL, band, dispersion

__all__ = ["DEFAULT_THRESHOLD", "HORIZON", "fit_trend", "trend_rate", "forecast", "observed_rate", "band_at",
           "trend_predictive"]

DEFAULT_THRESHOLD = 0.5  #: effective group rate at which the forecast warns (seed 000's level)
HORIZON = 10.0  #: how many run lengths past the last step the crossing is searched for
SEARCH_POINTS = 40  #: grid points of that search (then bisection to half a step)
NEWTON_STEPS = 30  #: most Newton iterations of the trend fit (it converges in well under this)
TOL = 1e-6  #: Newton stops when no logit parameter moves by more than this
SERIES_POINTS = 100  #: steps at which the fitted series is evaluated (interpolated between them)
MAX_STEP = 5.0  #: largest Newton step on any logit parameter
Z95 = 1.959963984540054  #: standard normal 97.5% quantile
MIN_STEPS = 3  #: fewer distinct steps than this: no forecast
ROLLING = 10  #: steps in the rolling mean of the observed rate (as the replay's default)
PREDICTIVE_DRAWS = 41  #: slope quantiles of the projection's predictive band


def _scale(step, s0, s1):
    return (np.asarray(step, float) - s0) / max(s1 - s0, 1)


def _newton(S, K, pid, t, n_prompts, beta=None, alpha0=None):
    """Fit intercepts (and beta unless given), from ``alpha0`` if given. Returns alpha (n_prompts,), beta, se_beta."""
    cnt = np.bincount(pid, minlength=n_prompts).astype(float)
    tbar = np.bincount(pid, weights=t, minlength=n_prompts) / np.maximum(cnt, 1)
    alpha = np.zeros(n_prompts) if alpha0 is None else np.nan_to_num(alpha0).copy()
    fixed = beta is not None
    b = 0.0 if beta is None else float(beta)
    se = np.nan
    for _ in range(NEWTON_STEPS):
        mu = expit(alpha[pid] + b * t)
        mu0 = expit(alpha + b * tbar)
        r, w = S - K * mu, K * mu * (1 - mu)
        w0 = mu0 * (1 - mu0)
        g_a = np.bincount(pid, weights=r, minlength=n_prompts) + (0.5 - mu0)
        D = np.bincount(pid, weights=w, minlength=n_prompts) + w0
        if fixed:
            da, db = g_a / D, 0.0
        else:
            c = np.bincount(pid, weights=w * t, minlength=n_prompts) + w0 * tbar
            g_b = float(r @ t + (0.5 - mu0) @ tbar)
            e = float(w @ (t * t) + w0 @ (tbar * tbar))
            schur = e - float(c @ (c / D))
            if schur <= 0:  # every group at one step: the slope is not identified; keep it at 0
                schur, g_b = np.inf, 0.0
            db = (g_b - float(c @ (g_a / D))) / schur
            da = (g_a - c * db) / D
            se = 1.0 / np.sqrt(schur) if np.isfinite(schur) else np.nan
        alpha += np.clip(da, -MAX_STEP, MAX_STEP)
        b += float(np.clip(db, -MAX_STEP, MAX_STEP))
        if np.max(np.abs(da)) < TOL and abs(db) < TOL:
            break
    return alpha, b, se


def fit_trend(groups: RunGroups, mask=None) -> dict:
    """Fit the trend model on the groups in ``mask`` (all by default).

    Returns ``{alpha (per prompt, NaN where unseen), beta, se_beta, seen (bool per prompt), s0, s1, K}``:
    t = 0 at step s0 and 1 at s1, the first and last step fitted.
    """
    m = np.ones(groups.n, bool) if mask is None else np.asarray(mask, bool)
    step, S, pid = groups.step[m], groups.successes[m].astype(float), groups.prompt_id[m]
    s0, s1 = int(step.min()), int(step.max())
    t = _scale(step, s0, s1)
    alpha, beta, se = _newton(S, groups.K, pid, t, groups.n_prompts)
    seen = np.bincount(pid, minlength=groups.n_prompts) > 0
    return {"alpha": np.where(seen, alpha, np.nan), "beta": beta, "se_beta": se, "seen": seen,
            "s0": s0, "s1": s1, "K": groups.K, "_data": (S, pid, t)}


def trend_rate(trend: dict, steps, beta: float | None = None, alpha=None) -> np.ndarray:
    """Forecast effective group rate at ``steps``: mean over seen prompts of P(useful | p_x(s), K)."""
    a = (trend["alpha"] if alpha is None else alpha)[trend["seen"]]
    b = trend["beta"] if beta is None else beta
    t = _scale(steps, trend["s0"], trend["s1"])
    out = np.empty(len(t))
    for i in range(0, len(t), 200):  # bounded memory: 200 steps x prompts at a time
        p = expit(a[None, :] + b * t[i:i + 200, None])
        out[i:i + 200] = p_useful(p, trend["K"]).mean(axis=1)
    return out


def _series(trend: dict, steps) -> np.ndarray:
    """:func:`trend_rate` at up to SERIES_POINTS of ``steps``, linearly interpolated between them."""
    steps = np.asarray(steps, float)
    if len(steps) <= SERIES_POINTS:
        return trend_rate(trend, steps)
    at = np.linspace(steps[0], steps[-1], SERIES_POINTS)
    return np.interp(steps, at, trend_rate(trend, at))


def _crossing(trend, threshold, beta=None, alpha=None):
    """(first step after s1, to HORIZON run lengths, where the rate < threshold, the rate at s1).

    The step is None when the rate never falls below the threshold within the horizon, and
    also when it is already below at s1 (nothing left to forecast)."""
    span = max(trend["s1"] - trend["s0"], 1)
    steps = np.linspace(trend["s1"], trend["s1"] + HORIZON * span, SEARCH_POINTS)
    rate = trend_rate(trend, steps, beta, alpha)
    below = np.flatnonzero(rate < threshold)
    if not below.size or below[0] == 0:
        return None, float(rate[0])
    lo, hi = float(steps[below[0] - 1]), float(steps[below[0]])  # rate(lo) >= threshold > rate(hi)
    while hi - lo > 0.5:
        mid = (lo + hi) / 2
        if trend_rate(trend, [mid], beta, alpha)[0] < threshold:
            hi = mid
        else:
            lo = mid
    return float(np.ceil(hi - 1e-9)), float(rate[0])


def observed_rate(groups: RunGroups) -> tuple[np.ndarray, np.ndarray]:
    """(steps, effective group rate per step): the share of groups with 0 < S < K at each step."""
    steps, inv = np.unique(groups.step, return_inverse=True)
    mixed = (groups.successes > 0) & (groups.successes < groups.K)
    return steps, np.bincount(inv, weights=mixed) / np.bincount(inv)


def _first_cross(steps, rate, threshold):
    below = np.flatnonzero(rate < threshold)
    return int(steps[below[0]]) if below.size else None


def forecast(groups: RunGroups, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """The forecast, its interval and its backtest (see the module docstring).

    Returns ``threshold``, ``beta``, ``se_beta``, ``rate_now`` (model, at the last step),
    ``observed_rate_now`` (rolling mean of the last :data:`ROLLING` steps), ``already_below``, ``status``,
    ``crossing_step`` with ``crossing_interval`` ([lo, hi]; None = beyond the horizon),
    ``horizon_step``, ``series`` (observed and fitted per step, groups, all-pass and all-fail shares per step), ``projection`` (steps, rate and
    ``predictive``: :func:`trend_predictive`), ``backtest``
    and ``_trend`` (the fit itself, for :mod:`.skip`; not for printing).
    """
    steps, obs = observed_rate(groups)
    roll = rolling_mean(obs, ROLLING)
    trend = fit_trend(groups)
    cross, now = _crossing(trend, threshold)
    bounds, refits = [], []
    S, pid, t = trend["_data"]
    for b in (trend["beta"] - Z95 * trend["se_beta"], trend["beta"] + Z95 * trend["se_beta"]):
        if not np.isfinite(b):
            bounds.append(None)
            continue
        alpha, _, _ = _newton(S, groups.K, pid, t, groups.n_prompts, beta=b, alpha0=trend["alpha"])
        refits.append((b, alpha))
        bounds.append(_crossing(trend, threshold, beta=b, alpha=alpha)[0])
    finite = [x for x in bounds if x is not None]
    interval = [min(finite), None if None in bounds else max(finite)] if cross is not None and finite else [None, None]
    if len(steps) < MIN_STEPS:
        status = f"no trend to extrapolate from {len(steps)} step{'s' if len(steps) != 1 else ''}"
        cross, interval = None, [None, None]
    elif now < threshold:
        status = "already below the threshold at the last step (model)"
    elif cross is None:
        status = f"stays above the threshold for {HORIZON:g} run lengths if the trend holds"
    else:
        status = f"crosses the threshold near step {cross:.0f} if the trend holds"
    span = max(trend["s1"] - trend["s0"], 1)
    proj_steps = np.linspace(trend["s1"], trend["s1"] + (min(HORIZON, 3.0) * span), 60)
    fitted = _series(trend, steps)
    at = np.searchsorted(steps, groups.step)
    n_rows = np.bincount(at, minlength=len(steps)).astype(float)
    unanimous = {k: np.bincount(at, weights=groups.successes == v, minlength=len(steps)) / n_rows
                 for k, v in (("all_pass", groups.K), ("all_fail", 0))}
    out = {
        "_trend": trend,
        "threshold": float(threshold), "model": "logit p_x(s) = alpha_x + beta (s - s_first) / (s_last - s_first)",
        "beta": trend["beta"], "se_beta": trend["se_beta"],
        "status": status, "rate_now": now, "observed_rate_now": float(roll[-1]),
        "already_below": bool(roll[-1] < threshold), "observed_crossing_step": _first_cross(steps, roll, threshold),
        "crossing_step": cross, "crossing_interval": interval,
        "horizon_step": float(trend["s1"] + HORIZON * span),
        "series": {"step": steps, "observed": obs, "observed_rolling": roll, "fitted": fitted, "groups": n_rows,
                   **unanimous},
        "projection": {"step": proj_steps, "rate": trend_rate(trend, proj_steps),
                       "predictive": trend_predictive(trend, refits, proj_steps, n_rows, dispersion(obs, n_rows, fitted, 1))},
        "backtest": backtest(groups, threshold, steps, obs, roll),
    }
    return out


def band_at(groups: RunGroups, mask, steps, median: bool = False) -> dict:
    """The trend fitted on the groups in ``mask``, and its :func:`trend_predictive` band at ``steps`` (a step of the
    fitted stretch's median groups; the dispersion of the fitted steps)."""
    trend = fit_trend(groups, mask)
    S, pid, t = trend["_data"]
    refits = []
    for b in (trend["beta"] - Z95 * trend["se_beta"], trend["beta"] + Z95 * trend["se_beta"]):
        if np.isfinite(b):
            refits.append((b, _newton(S, groups.K, pid, t, groups.n_prompts, beta=b, alpha0=trend["alpha"])[0]))
    m = np.asarray(mask, bool)
    sub = RunGroups(groups.K, groups.successes[m], groups.step[m], groups.prompt_id[m], groups.n_prompts)
    fitted_steps, obs = observed_rate(sub)
    n_rows = np.bincount(np.searchsorted(fitted_steps, sub.step), minlength=len(fitted_steps)).astype(float)
    phi = dispersion(obs, n_rows, _series(trend, fitted_steps), 1)
    return trend_predictive(trend, refits, steps, n_rows, phi, median=median)


def trend_predictive(trend: dict, refits, steps, n_rows, phi: float, draws: int = PREDICTIVE_DRAWS,
                     median: bool = False) -> dict:
    """The :data:`.predictive.LEVEL` predictive band of the effective rate a step of the run's median groups will
    log at ``steps``: the slope's uncertainty as ``draws`` normal quantiles z of beta = beta_hat + z se, the rate
    at each interpolated quadratically in z through the fits at z = -1.96, 0, +1.96 (``refits``: (beta, alphas)
    with the intercepts refitted), mixed with the step's binomial noise over-dispersed by ``phi``
    (:mod:`.predictive`). With no finite bound the point fit alone."""
    steps = np.asarray(steps, float)
    r0 = trend_rate(trend, steps)
    n = float(np.median(n_rows[n_rows > 0])) if np.any(n_rows > 0) else float("nan")
    if len(refits) == 2:
        lo, hi = (trend_rate(trend, steps, b, a) for b, a in refits)
        z = ndtri((np.arange(draws) + 0.5) / draws)[:, None] / Z95
        P = np.clip(r0 + z * (hi - lo) / 2 + z * z * (hi + lo - 2 * r0) / 2, 0.0, 1.0)
    else:
        P = r0[None, :]
    return {**band(P, n, LEVEL, phi, median), "groups": n, "dispersion": phi, "parameter_draws": int(len(P))}


def backtest(groups: RunGroups, threshold: float, steps=None, obs=None, roll=None) -> dict:
    """Fit on the first half of the steps, forecast the second half, compare with what the run did."""
    if steps is None:
        steps, obs = observed_rate(groups)
        roll = rolling_mean(obs, ROLLING)
    if len(steps) < 4:
        return {"available": False, "reason": f"only {len(steps)} steps (need 4 to split in halves)"}
    cut = steps[len(steps) // 2 - 1]
    trend = fit_trend(groups, groups.step <= cut)
    later = steps > cut
    pred = _series(trend, steps[later])
    err = pred - obs[later]
    roll_err = pred - roll[later]
    obs_cross = _first_cross(steps[later], roll[later], threshold) if roll[:len(steps) // 2][-1] >= threshold else None
    pred_cross, _ = _crossing(trend, threshold)
    return {
        "available": True, "fit_until_step": int(cut), "compared_steps": int(later.sum()),
        "mae": float(np.mean(np.abs(err))), "mean_error": float(np.mean(err)),
        "mae_rolling": float(np.mean(np.abs(roll_err))),
        "observed_crossing_step": obs_cross, "predicted_crossing_step": pred_cross,
        "crossing_error_steps": (pred_cross - obs_cross) if (obs_cross is not None and pred_cross is not None)
        else None,
        "series": {"step": steps[later], "predicted": pred},
    }
