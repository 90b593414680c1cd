r"""The group path's expiry model chosen per run on its own history: the per-prompt trend or the measured drift.

Issue 39 item 7 (the doctor's models chosen by the same out-of-sample score): :func:`choose_expiry` weighs the two
expiry models of :mod:`.forecast` (:data:`.forecast.EXPIRY_MODELS` "trend" and "drift") with the doctor's one
chooser, :func:`.choice.lfo_weights` (leave-future-out log scores at rolling origins, pseudo-BMA+ weights), on the
steps of the groups it is given, at :data:`ORIGINS` origin(s): each model fitted on the steps before the origin
(the trend: :func:`.forecast.trend_draws`; the drift: :func:`.forecast.measured_drift` and
:func:`.drift_expiry.mixed_draws`) scores each later step's logged effective rate by its log predictive density.

**Score** (:func:`log_density`): the predictive law the band is read from (:mod:`.predictive`): the mixture over
the model's draws p_d of Binomial(N, p_d) / N, N = round(n / phi) the step's own groups n over the fitted steps'
dispersion phi (at least 1), at the count round(x N) of the logged share x, times N + 1 (a density on [0, 1], so
that models with a different phi compare). Deviations: the count is rounded onto the effective lattice, and the
trend is scored at each step's own groups where its band uses the run's median groups.

**Rule** (parsimony toward the trend, the default before the one model; :data:`.forecast.GROUP_EXPIRY` is now the
drift, whose ``prompts`` variant holds the trend's information, :mod:`.drift_prompts`; this choice stays a named
alternative, ``forecast(model="choice")``): the drift is chosen only where its
pseudo-BMA+ weight is at least :data:`PARSIMONY` (the Bayesian bootstrap of the scored steps favours it that
clearly); otherwise the trend. Too few steps for an origin (or a model that cannot be fitted there: its score
-1e6): the trend, said in ``rule``.

Cost: one drift measurement per origin (the back-test redoes the choice at each of its cuts,
:func:`.backtest.backtest_trend` with ``model="choice"``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

from ..errors import InputError
from .choice import lfo_weights
from .groups import RunGroups
from .predictive import dispersion

__all__ = ["ORIGINS", "PARSIMONY", "log_density", "choose_expiry"]

ORIGINS = 1  #: rolling origins of the choice (one: fit on the first half of the steps given, score the second)
PARSIMONY = 0.9  #: the drift's pseudo-BMA+ weight needed to leave the default trend
CHOICE_DRAWS = 200  #: drift futures drawn per origin


def log_density(P, n, phi: float, observed) -> np.ndarray:
    """Log predictive density of each logged share ``observed`` (G,) over ``n`` groups (G,) under the draws ``P``
    (D x G) over-dispersed by ``phi`` (module docstring); -inf where n is not finite or below 1."""
    P = np.clip(np.atleast_2d(np.asarray(P, float)), 0.0, 1.0)
    n = np.asarray(n, float)
    ok = np.isfinite(n) & (n >= 1) & np.isfinite(observed)
    N = np.where(ok, np.maximum(np.round(np.where(ok, n, 1.0) / max(float(phi), 1.0)), 1.0), 1.0)
    k = np.round(np.clip(np.nan_to_num(np.asarray(observed, float)), 0.0, 1.0) * N)
    lp = logsumexp(binom.logpmf(k[None, :], N[None, :], P), axis=0) - np.log(len(P)) + np.log(N + 1)
    return np.where(ok, lp, -np.inf)


def _draws(groups: RunGroups, mask, model: str, steps) -> tuple[np.ndarray, float]:
    """(P, phi) of ``model`` fitted on the groups in ``mask``, drawn at ``steps``."""
    from .drift_expiry import FIT_PARAMS, mixed_draws
    from .forecast import _rows, measured_drift, trend_draws

    if model == "trend":
        return trend_draws(groups, mask, steps)
    fitted, counts, dr = measured_drift(groups, mask)
    rows = _rows(fitted, counts, groups.K)
    m = mixed_draws(dr, counts, steps, rows["step"], CHOICE_DRAWS, 0)
    return m["draws"], dispersion(rows["mixed"], rows["groups"], m["fitted"], FIT_PARAMS)


def choose_expiry(groups: RunGroups, mask=None, rng=None) -> dict:
    """The expiry model for the groups in ``mask`` (all by default; module docstring): ``{chosen, rule, weights,
    scores, scored_steps, origins}`` (``origins`` as steps: [last step fitted, last step scored])."""
    from .forecast import MIN_STEPS, groups_per_step, observed_rate

    sub = groups.subset(mask)
    steps, obs = observed_rate(sub)
    n_step = groups_per_step(sub, steps)

    def point_scores(model, cut, end):
        if cut < MIN_STEPS:
            return np.full(end - cut, -np.inf)
        try:
            P, phi = _draws(sub, sub.step <= steps[cut - 1], model, steps[cut:end])
        except InputError:
            return np.full(end - cut, -np.inf)
        return log_density(P, n_step[cut:end], phi, obs[cut:end])

    lfo = lfo_weights(len(steps), ["trend", "drift"], point_scores, rng, ORIGINS)
    w = lfo["weights"]
    if lfo["scores"] is None:
        chosen, rule = "trend", f"the default: {len(steps)} steps leave no origin to score the models at"
    elif w["drift"] >= PARSIMONY:
        chosen, rule = "drift", (f"the drift: its weight {w['drift']:.2f} >= {PARSIMONY:g} (log score "
                                 f"{lfo['scores']['drift']:.1f} against the trend's {lfo['scores']['trend']:.1f})")
    else:
        chosen, rule = "trend", (f"the default trend: the drift's weight {w['drift']:.2f} < {PARSIMONY:g} (log score "
                                 f"{lfo['scores']['drift']:.1f} against the trend's {lfo['scores']['trend']:.1f})")
    return {"chosen": chosen, "rule": rule, "weights": w, "scores": lfo["scores"],
            "scored_steps": lfo["scored_steps"],
            "origins": [[int(steps[a - 1]), int(steps[b - 1])] for a, b in lfo["origins"]]}
