r"""When will the prompt set stop teaching? The group path's expiry: the per-prompt trend, or the measured drift.

Two models of the expiry and the choice between them (``forecast(model=...)``, :data:`EXPIRY_MODELS`), the default
:data:`GROUP_EXPIRY` the drift, which holds the trend's information as its ``prompts`` population variant
(:mod:`.drift_prompts`; issue 39 item 8, one model):

* **drift** (:func:`group_expiry`; issue 39 item 8, one doctor): the record's groups per step measured as the stall
  risk measures them (:func:`measured_drift`: :func:`.drift.measure_drift` on :func:`.stall_risk.step_counts`,
  the same inputs, so the measurement it keeps is the risk's too; where prompts repeat the ``prompts`` variant,
  each prompt's own pass rate, is among the variants the chooser weighs, :func:`.drift_prompts.prompt_evidence`,
  said in the drift's ``prompts``), then :func:`.drift_expiry.drift_expiry` on the
  scalars path's future grid (:func:`.scalars_forecast.future_grid`, :data:`HORIZON` run lengths): the median drawn
  mixed share's first step below the threshold, the 95% interval of the draws' first crossings, the fitted share
  now and at each logged step, the 90% predictive band of a step of the run's median groups (over-dispersed by the
  logged steps' Pearson statistic). The scalars path reads the same function (:func:`.drift_shares.shares_expiry`).
  A survivors-only record is measured here as if it held every group, as the trend takes it (its stall risk
  measures it as survivors, :func:`.stall_risk.risk_for_groups`: a second measurement).
* **trend** (below): the per-prompt logistic trend's crossing and band (a named alternative; the drift's
  ``prompts`` variant with the ``linear`` shape is this model in all but the fitting method).
* **choice** (the default before the ``prompts`` variant): one of the two chosen per run on its own history (:func:`.expiry_choice.choose_expiry`: fitted on the
  first half of the steps, scored by the log predictive density of the second; the drift only where its pseudo-BMA+
  weight is at least :data:`.expiry_choice.PARSIMONY`), said in ``expiry_choice``.

**One model** (item 8): the default is the drift with the ``prompts`` variant among its variants, one chooser over
(variant, shape) pairs. On the eight shipped ``runs/*-s1`` records the back-test (:func:`.backtest.backtest_trend`,
cuts at 40-70%) held in the 90% band the share of later steps given in docs/doctor.md, "One doctor: the trend inside
the drift" (against the trend's 80.1%, the drift's before the variant 77.7% and the old choice's 81.0%), with the
runs it still misses named there.

Trend model (a logistic regression over the whole run): prompt x's pass rate at
step s is ``p_x(s) = sigmoid(alpha_x + beta t)``, ``t = (s - s_first) / (s_last - s_first)``,
with one intercept per prompt and one shared slope beta (how fast the policy
moves every prompt on the logit scale). A group at step s has S ~ Binomial(K, p_x(s)).
Each prompt also gets half a success and half a failure at its mean step (a
Jeffreys-style pseudo-observation) so that a prompt never or always solved has a
finite intercept. The fit is Newton's method on the joint log-likelihood, whose
information matrix is an arrow (diagonal in the alphas, one row for beta), solved
through its Schur complement; ``se_beta`` is the Schur complement's inverse square root.

The trend's effective group rate at step s is the mean over the prompts seen of
:func:`grpo_lab.sims.outcomes.p_useful` (p_x(s), K) (prompts drawn uniformly); its predictive band
(:func:`trend_predictive`) draws the slope within its 95% bounds (alphas re-fitted for each). **Backtest**
(``forecast``'s ``backtest``): the model fitted on the first half of the steps (the drift: measured there, its
median drawn mixed share) forecasting the second half, against the observed per-step effective rate (mean
absolute error, mean signed error) and, when the observed rolling rate crosses the threshold in the second half,
the error in the crossing step.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, ndtri

from ..errors import InputError
from ..outcomes import p_useful
from ..replay import rolling_mean
from .groups import RunGroups
from .predictive import LEVEL, band, dispersion

__all__ = ["DEFAULT_THRESHOLD", "HORIZON", "PLOT_AHEAD", "fit_trend", "trend_rate", "forecast", "observed_rate",
           "measured_drift", "group_expiry", "band_at", "trend_predictive"]

DEFAULT_THRESHOLD = 0.5  #: effective group rate at which the forecast warns (seed 000's level)
HORIZON = 10.0  #: how many run lengths past the last step the crossing is searched for
PLOT_AHEAD = 3.0  #: run lengths past the last step the projection keeps (the crossing is searched to HORIZON)
SEARCH_POINTS = 40  #: grid points of the trend's crossing search (then bisection to half a step)
EXPIRY_MODELS = ("trend", "drift", "choice")  #: the group path's expiry models; "choice": chosen per run (below)
#: the group path's expiry by default: the drift with the prompts variant (one model; docs/doctor.md, "One doctor:
#: the trend inside the drift", for its back-test against the trend and the old per-run choice)
GROUP_EXPIRY = "drift"
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
            da, db = np.divide(g_a, D, out=np.zeros_like(g_a), where=D > 0), 0.0  # saturated (D = 0): stays
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


def groups_per_step(groups: RunGroups, steps) -> np.ndarray:
    """Groups logged at each of ``steps`` (the sorted steps of :func:`observed_rate`), as floats."""
    return np.bincount(np.searchsorted(steps, groups.step), minlength=len(steps)).astype(float)


def _first_cross(steps, rate, threshold):
    below = np.flatnonzero(rate < threshold)
    return int(steps[below[0]]) if below.size else None


def measured_drift(groups: RunGroups, mask=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """(steps, counts, drift) of the groups in ``mask`` (all by default): :func:`.drift.measure_drift` of their
    counts per step (:func:`.stall_risk.step_counts`) as :func:`.stall_risk.risk_for_groups` measures a record that
    holds every group, so one diagnosis measures its record once (the measurement :func:`.drift.measure_drift`
    keeps)."""
    from .drift import VARIANTS, measure_drift
    from .drift_prompts import prompt_evidence
    from .stall_risk import step_counts

    sub = groups.subset(mask)
    steps, counts = step_counts(sub)
    prompts, said = prompt_evidence(sub, steps)
    return steps, counts, {**measure_drift(counts, steps, groups.K, False, variants=VARIANTS, prompts=prompts),
                           "prompts": said}


def _rows(steps, counts, K: int) -> dict:
    """The logged steps as :mod:`.drift_expiry` reads them: ``{"step", "mixed", "groups"}``."""
    n = counts.sum(axis=1)
    return {"step": np.asarray(steps, float), "mixed": 1.0 - (counts[:, 0] + counts[:, K]) / n, "groups": n}


def group_expiry(groups: RunGroups, threshold: float, mask=None, predictive: bool = True, seed: int = 0) -> dict:
    """The expiry of the groups in ``mask`` (module docstring): :func:`.drift_expiry.drift_expiry` of their
    :func:`measured_drift` on :func:`.scalars_forecast.future_grid` of their steps, a future step of their median
    groups; its dict (``step``, ``interval``, ``status``, ``mixed_now``, ``projection``, ``fitted``, ...)."""
    from .drift_expiry import drift_expiry
    from .scalars_forecast import future_grid

    steps, counts, dr = measured_drift(groups, mask)
    rows = _rows(steps, counts, groups.K)
    grid = future_grid({"steps": (int(steps[0]), int(steps[-1]))}, HORIZON)
    return {**drift_expiry(dr, counts, grid, threshold, rows, float(np.median(rows["groups"])), seed=seed,
                           predictive=predictive), "prompts_variant": dr["prompts"]}


def _trend_expiry(groups: RunGroups, threshold: float, trend: dict, steps, obs, n_rows) -> dict:
    """The trend's expiry as :func:`.drift_expiry.drift_expiry` words it (``step``, ``interval``, ``status``,
    ``mixed_now``, ``horizon_step``, ``fitted``, ``projection``): the first step its rate falls below the threshold
    (:func:`_crossing`), the interval with beta at its 95% bounds (alphas re-fitted), the band
    :func:`trend_predictive`."""
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
    if now < threshold:
        status = "already below the threshold at the last step (model)"
    elif cross is None:
        status = f"stays above the threshold for {HORIZON:g} run lengths if the trend holds"
    else:
        status = f"crosses the threshold near step {cross:.0f} if the trend holds"
    span = max(trend["s1"] - trend["s0"], 1)
    proj_steps = np.linspace(trend["s1"], trend["s1"] + (min(HORIZON, PLOT_AHEAD) * span), 60)
    fitted = _series(trend, steps)
    return {"step": cross, "interval": interval, "status": status, "mixed_now": now, "shapes": None,
            "horizon_step": float(trend["s1"] + HORIZON * span), "fitted": {"mixed": fitted},
            "projection": {"step": proj_steps, "mixed": trend_rate(trend, proj_steps), "predictive": trend_predictive(
                trend, refits, proj_steps, n_rows, dispersion(obs, n_rows, fitted, 1))}}


def forecast(groups: RunGroups, threshold: float = DEFAULT_THRESHOLD, full: bool = True,
             model: str = GROUP_EXPIRY) -> dict:
    """The expiry, its interval, its predictive band and its backtest by ``model`` (:data:`EXPIRY_MODELS`; module
    docstring); ``full`` False (what ``diagnose(only=...)`` asks): for the drift no predictive band (None) and no
    backtest (not available), the expiry itself unchanged (the same measurement and draws).

    Returns ``threshold``, ``model`` (in words), ``expiry_model``, ``expiry_choice`` (``chosen``, ``rule``,
    ``weights``, ``scores``: why that model), ``beta``, ``se_beta`` (the trend's slope), ``rate_now`` (the model's
    mixed share at the last step), ``observed_rate_now`` (rolling mean of the last :data:`ROLLING` steps),
    ``already_below``, ``status``, ``crossing_step`` with ``crossing_interval`` ([lo, hi]; None = beyond the
    horizon), ``horizon_step``, ``series`` (observed and fitted per step, groups, all-pass and all-fail shares per
    step), ``projection`` (steps to :data:`PLOT_AHEAD` run lengths, rate and ``predictive``), ``shapes`` (the drift
    chooser's weights; None for the trend), ``prompts_variant`` (the drift's: ``offered``, ``repeat_share``,
    ``reason``, :func:`.drift_prompts.prompt_evidence`; None for the trend), ``backtest`` and ``_trend`` (the trend fit, for :mod:`.skip` and the
    stall forecast; not for printing). Fewer than :data:`MIN_STEPS` steps: the trend's curves, no crossing.
    """
    if model not in EXPIRY_MODELS:
        raise InputError(f"the expiry model must be one of {', '.join(EXPIRY_MODELS)}, got {model!r}")
    if model == "choice":
        from .expiry_choice import choose_expiry

        choice = choose_expiry(groups)
        model = choice["chosen"]
    else:
        rule = ("the default: one model, the drift shapes with the prompts variant among its variants where prompts "
                "repeat" if model == "drift" == GROUP_EXPIRY else f"fixed: forecast(model={model!r})")
        choice = {"chosen": model, "rule": rule, "weights": None, "scores": None}
    steps, obs = observed_rate(groups)
    roll = rolling_mean(obs, ROLLING)
    trend = fit_trend(groups)
    at = np.searchsorted(steps, groups.step)
    n_rows = np.bincount(at, minlength=len(steps)).astype(float)
    unanimous = {k: np.bincount(at, weights=groups.successes == v, minlength=len(steps)) / n_rows
                 for k, v in (("all_pass", groups.K), ("all_fail", 0))}
    drift = model == "drift" and len(steps) >= MIN_STEPS
    bt = backtest(groups, threshold, steps, obs, roll, model) if full or model == "trend" else \
        {"available": False, "reason": "not asked (a partial diagnosis)"}  # the half first: the whole one stays kept
    e = group_expiry(groups, threshold, predictive=full) if drift else \
        _trend_expiry(groups, threshold, trend, steps, obs, n_rows)
    status = e["status"]
    if len(steps) < MIN_STEPS:
        status = f"no trend to extrapolate from {len(steps)} step{'s' if len(steps) != 1 else ''}"
        e.update(step=None, interval=[None, None])
    keep = np.asarray(e["projection"]["step"]) <= steps[-1] + PLOT_AHEAD * max(float(steps[-1] - steps[0]), 1.0)
    pred = e["projection"]["predictive"]
    return {
        "_trend": trend,
        "threshold": float(threshold), "expiry_model": "drift" if drift else "trend", "expiry_choice": choice,
        "model": "drift shapes (the chooser's weights; as the stall risk draws them)" if drift else
        "logit p_x(s) = alpha_x + beta (s - s_first) / (s_last - s_first)",
        "shapes": e["shapes"], "prompts_variant": e.get("prompts_variant"), "beta": trend["beta"],
        "se_beta": trend["se_beta"],
        "status": status, "rate_now": e["mixed_now"], "observed_rate_now": float(roll[-1]),
        "already_below": bool(roll[-1] < threshold), "observed_crossing_step": _first_cross(steps, roll, threshold),
        "crossing_step": e["step"], "crossing_interval": e["interval"], "horizon_step": e["horizon_step"],
        "series": {"step": steps, "observed": obs, "observed_rolling": roll, "fitted": e["fitted"]["mixed"],
                   "groups": n_rows, **unanimous},
        "projection": {"step": np.asarray(e["projection"]["step"])[keep],
                       "rate": np.asarray(e["projection"]["mixed"])[keep],
                       "predictive": None if pred is None else {
                           **pred, "lo": np.asarray(pred["lo"])[keep], "hi": np.asarray(pred["hi"])[keep]}},
        "backtest": bt,
    }


def _fit_at(groups: RunGroups, mask) -> tuple:
    """(trend, refits, n_rows, phi): the trend fitted on the groups in ``mask``, its fits with beta at the 95%
    bounds (alphas refitted), the fitted stretch's groups per step and its dispersion (what :func:`band_at` reads)."""
    trend = fit_trend(groups, mask)
    S, pid, t = trend["_data"]
    refits = []
    for b in (trend["beta"] - Z95 * trend["se_beta"], trend["beta"] + Z95 * trend["se_beta"]):
        if np.isfinite(b):
            refits.append((b, _newton(S, groups.K, pid, t, groups.n_prompts, beta=b, alpha0=trend["alpha"])[0]))
    sub = groups.subset(mask)
    fitted_steps, obs = observed_rate(sub)
    n_rows = groups_per_step(sub, fitted_steps)
    return trend, refits, n_rows, dispersion(obs, n_rows, _series(trend, fitted_steps), 1)


def band_at(groups: RunGroups, mask, steps, median: bool = False) -> dict:
    """The trend fitted on the groups in ``mask``, and its :func:`trend_predictive` band at ``steps`` (a step of the
    fitted stretch's median groups; the dispersion of the fitted steps)."""
    trend, refits, n_rows, phi = _fit_at(groups, mask)
    return trend_predictive(trend, refits, steps, n_rows, phi, median=median)


def trend_draws(groups: RunGroups, mask, steps) -> tuple[np.ndarray, float]:
    """(P, phi): the rate paths :func:`band_at` mixes at ``steps`` (:data:`PREDICTIVE_DRAWS` x steps) and its
    dispersion, the trend fitted on the groups in ``mask``."""
    trend, refits, _, phi = _fit_at(groups, mask)
    return _slope_paths(trend, refits, np.asarray(steps, float)), phi


def _slope_paths(trend: dict, refits, steps, draws: int = PREDICTIVE_DRAWS) -> np.ndarray:
    """The rate at ``steps`` for ``draws`` normal quantiles of the slope (:func:`trend_predictive`); the point fit
    alone without two finite bounds."""
    r0 = trend_rate(trend, steps)
    if len(refits) != 2:
        return r0[None, :]
    lo, hi = (trend_rate(trend, steps, b, a) for b, a in refits)
    z = ndtri((np.arange(draws) + 0.5) / draws)[:, None] / Z95
    return np.clip(r0 + z * (hi - lo) / 2 + z * z * (hi + lo - 2 * r0) / 2, 0.0, 1.0)


def trend_predictive(trend: dict, refits, steps, n_rows, phi: float, draws: int = PREDICTIVE_DRAWS,
                     median: bool = False) -> dict:
    """The :data:`.predictive.LEVEL` predictive band of the effective rate a step of the run's median groups will
    log at ``steps``: the slope's uncertainty as ``draws`` normal quantiles z of beta = beta_hat + z se, the rate
    at each interpolated quadratically in z through the fits at z = -1.96, 0, +1.96 (``refits``: (beta, alphas)
    with the intercepts refitted), mixed with the step's binomial noise over-dispersed by ``phi``
    (:mod:`.predictive`). With no finite bound the point fit alone."""
    P = _slope_paths(trend, refits, np.asarray(steps, float), draws)
    n = float(np.median(n_rows[n_rows > 0])) if np.any(n_rows > 0) else float("nan")
    return {**band(P, n, LEVEL, phi, median), "groups": n, "dispersion": phi, "parameter_draws": int(len(P))}


def _trend_half(groups: RunGroups, threshold: float, steps, cut):
    """(the trend's rate at the later steps, its crossing), fitted on the steps up to ``cut``."""
    trend = fit_trend(groups, groups.step <= cut)
    return _series(trend, steps[steps > cut]), _crossing(trend, threshold)[0]


def _drift_half(groups: RunGroups, threshold: float, steps, cut):
    """(the median drawn mixed share at the later steps, its expiry), the drift measured on the steps up to
    ``cut`` (:func:`.drift_expiry.drift_expiry`, no band)."""
    from .drift_expiry import drift_expiry
    from .scalars_forecast import future_grid

    fitted, counts, dr = measured_drift(groups, groups.step <= cut)
    later = steps[steps > cut].astype(float)
    grid = np.union1d(later, future_grid({"steps": (int(fitted[0]), int(cut))}, HORIZON))
    e = drift_expiry(dr, counts, grid, threshold, _rows(fitted, counts, groups.K), 1.0, predictive=False)
    return np.asarray(e["projection"]["mixed"])[np.searchsorted(grid, later)], e["step"]


def backtest(groups: RunGroups, threshold: float, steps=None, obs=None, roll=None, model: str = GROUP_EXPIRY) -> dict:
    """``model`` (:data:`EXPIRY_MODELS`) fitted on the first half of the steps, forecasting the second half (the
    trend's rate; the drift's median drawn mixed share), compared with what the run did."""
    if steps is None:
        steps, obs = observed_rate(groups)
        roll = rolling_mean(obs, ROLLING)
    if len(steps) < 4:
        return {"available": False, "reason": f"only {len(steps)} steps (need 4 to split in halves)"}
    cut = steps[len(steps) // 2 - 1]
    later = steps > cut
    pred, pred_cross = (_drift_half if model == "drift" else _trend_half)(groups, threshold, steps, cut)
    err = pred - obs[later]
    roll_err = pred - roll[later]
    obs_cross = _first_cross(steps[later], roll[later], threshold) if roll[:len(steps) // 2][-1] >= threshold else None
    return {
        "available": True, "fit_until_step": int(cut), "compared_steps": int(later.sum()),
        "mae": float(np.mean(np.abs(err))), "mean_error": float(np.mean(err)),
        "mae_rolling": float(np.mean(np.abs(roll_err))),
        "observed_crossing_step": obs_cross, "predicted_crossing_step": pred_cross,
        "crossing_error_steps": (pred_cross - obs_cross) if (obs_cross is not None and pred_cross is not None)
        else None,
        "series": {"step": steps[later], "predicted": pred},
    }
