r"""The run checks the doctor: refit on the first part of the run's own log, score the rest (``--backtest``).

At each cut c in :data:`CUTS` (a share of the logged rows) the forecast is refitted on the rows before the cut
exactly as the diagnosis fits the whole run, and its :data:`.predictive.LEVEL` predictive band of the logged mixed
share, the one the report prints, is compared with each later row that logs the mixed share: for binary rewards
the shares' drift measured on the rows before the cut (:func:`.drift_shares.shares_drift`) and the chooser's shapes
drawn ahead (:func:`.drift_expiry.drift_band`: the draws mixed with each row's binomial noise over its own groups,
over-dispersed by the fitted rows' Pearson statistic; where the rows before the cut give the mixed share only, each
step's shift on one mirror branch, :func:`.drift.shift_estimates`); where such rows keep the maps
(:func:`.drift_shares.on_shapes`, :data:`.drift_shares.MIXED_ONLY_SHAPES` False), the drift maps as the diagnosis keeps them (every drift model of :mod:`.scalars_fit`,
:func:`.scalars_fit.best_fit` kept, the parameters' covariance scaled by the over-dispersion too:
:func:`.scalars_forecast.quasi_fit`); for rewards that are not binary, the tie-share trend of :mod:`.tie_trend`. Reported per cut and pooled: rows scored, rows inside the band (``held``),
the coverage held / scored, and the median absolute error of the band's median against the logged share.

A later stretch longer than :data:`MAX_SCORED` rows is scored on that many rows evenly spread (said as
``scored_every``). A cut that leaves fewer than :data:`~.scalars_fit.MIN_STEPS` rows before it, or none after,
is skipped with its reason; a fit that fails (InputError) likewise. For a record with groups the forecast the
report makes is its expiry model's (:data:`.forecast.GROUP_EXPIRY`, :func:`backtest_trend`: the same cuts of its
steps): the per-prompt trend's band (:func:`.forecast.band_at`), or with ``model="drift"`` the drift measured on the
groups before the cut (:func:`.forecast.measured_drift`, the ``prompts`` variant among its variants where prompts
repeat) and :func:`.drift_expiry.drift_band` of each later step's effective rate over that step's groups,
over-dispersed by the fitted steps' Pearson statistic (the default, ``model="drift"``), or (``model="choice"``) the
one of the two :func:`.expiry_choice.choose_expiry` picks on the steps before the cut alone,
so the choice is scored on steps it did not see (docs/doctor.md, "One doctor": the figures of the three on the
shipped runs); the per-step shares' back-test is given beside it.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .drift_expiry import drift_band
from .predictive import LEVEL, band
from .drift_shares import logged_rows, observed_mixed, on_shapes, shares_drift, shares_evidence
from .scalars_fit import StepShares, best_fit, fit_models
from .scalars_forecast import _draw_mixed, mixed_dispersion, quasi_fit
from .stall_risk import DRAWS
from .tie_trend import fit_tie_trend, tie_predict

__all__ = ["CUTS", "MAX_SCORED", "BACKTEST_DRAWS", "backtest", "backtest_trend", "observed_mixed"]

CUTS = (0.4, 0.5, 0.6, 0.7)  #: where the run is cut, as shares of its logged rows
MAX_SCORED = 400  #: later rows scored per cut at most (evenly spread beyond)
BACKTEST_DRAWS = 200  #: parameter draws per cut


def _fit_binary(d: StepShares):
    return best_fit(fit_models(d))


def _score(obs, b) -> dict:
    inside = (obs >= b["lo"] - 1e-12) & (obs <= b["hi"] + 1e-12)
    return {"held": int(inside.sum()), "scored": int(len(obs)),
            "median_abs_error": float(np.median(np.abs(b["median"] - obs))) if len(obs) else None}


def _pooled(out_cuts: list, level: float, model: str) -> dict:
    """The cuts pooled: held, scored, coverage, the median absolute error of the median and the band's median width
    (hi - lo: a band that holds every row by spanning 0 to 1 says so) over every scored row."""
    done = [x for x in out_cuts if "held" in x]
    if not done:
        return {"available": False, "level": level, "cuts": out_cuts, "model": model,
                "reason": "no cut left rows to fit and rows to score"}
    held, scored = sum(x["held"] for x in done), sum(x["scored"] for x in done)
    errs = np.concatenate([np.abs(x["series"]["median"] - x["series"]["observed"]) for x in done])
    width = np.concatenate([np.asarray(x["series"]["hi"], float) - np.asarray(x["series"]["lo"], float) for x in done])
    return {"available": True, "level": level, "cuts": out_cuts, "held": held, "scored": scored, "model": model,
            "coverage": held / scored if scored else None, "median_abs_error": float(np.median(errs)),
            "median_width": float(np.median(width))}


def backtest_trend(groups, cuts=CUTS, level: float = LEVEL, model: str | None = None,
                   n_draws: int | None = None) -> dict:
    """The same for a record with groups: at each cut the forecast refitted on the steps before it and its band
    against each later step's effective rate; ``model`` "trend" (the per-prompt trend, :func:`.forecast.band_at`)
    or "drift" (the drift shapes drawn, ``n_draws`` futures, default the stall risk's :data:`.stall_risk.DRAWS`)
    or "choice" (at each cut one of the two chosen on the steps before it alone,
    :func:`.expiry_choice.choose_expiry`, the cut's ``chosen`` and ``choice``); None: the report's own,
    :data:`.forecast.GROUP_EXPIRY`."""
    from .forecast import (EXPIRY_MODELS, GROUP_EXPIRY, MIN_STEPS, _rows, band_at, groups_per_step, measured_drift,
                           observed_rate)

    model = GROUP_EXPIRY if model is None else model
    if model not in EXPIRY_MODELS:
        raise InputError(f"the expiry model must be one of {', '.join(EXPIRY_MODELS)}, got {model!r}")
    names = {"drift": "drift shapes", "trend": "group trend", "choice": "chosen per cut"}
    steps, obs = observed_rate(groups)
    n_step = groups_per_step(groups, steps)
    out_cuts = []
    for c in cuts:
        k = int(round(c * len(steps)))
        entry = {"cut": float(c), "fit_until_step": int(steps[k - 1]) if k >= 1 else None}
        if k < MIN_STEPS or k >= len(steps):
            out_cuts.append({**entry, "skipped": f"{k} steps before the cut, {len(steps) - k} after"})
            continue
        later = np.arange(k, len(steps))[::max(1, int(np.ceil((len(steps) - k) / MAX_SCORED)))]
        before = groups.step <= steps[k - 1]
        choice = None
        if model == "choice":
            from .expiry_choice import choose_expiry

            choice = choose_expiry(groups, before)
        used = choice["chosen"] if choice else model
        if used == "drift":
            fitted, counts, dr = measured_drift(groups, before)
            b = drift_band(dr, counts, steps[later], n_step[later], _rows(fitted, counts, groups.K), level,
                           n_draws or DRAWS, 0, median=True)
        else:
            b = band_at(groups, before, steps[later], median=True)
        out_cuts.append({**entry, "model": names[used], "choice": choice, "first_scored_step": int(steps[later[0]]),
                         "last_scored_step": int(steps[later[-1]]), **_score(obs[later], b),
                         "series": {"step": steps[later], "observed": obs[later], "lo": b["lo"], "hi": b["hi"],
                                    "median": b["median"]}})
    return _pooled(out_cuts, level, names[model])


def backtest(d: StepShares, not_binary: bool = False, cuts=CUTS, n_draws: int | None = None,
             level: float = LEVEL, shapes: bool = True) -> dict:
    """The back-test of ``d``'s forecast (see the module docstring): ``{available, level, cuts: [...], held,
    scored, coverage, median_abs_error, model}``. ``n_draws``: draws per cut (None: the report's own, the stall
    risk's :data:`.stall_risk.DRAWS` for the drift shapes, :data:`BACKTEST_DRAWS` for the maps and the tie trend).
    ``shapes`` False: the drift maps at every cut."""
    n_shapes, n_draws = n_draws or DRAWS, n_draws or BACKTEST_DRAWS
    obs_all = observed_mixed(d)
    rows = len(d.step)
    out_cuts = []
    for c in cuts:
        k = int(round(c * rows))
        before = np.arange(rows) < k
        later = np.flatnonzero(~before & np.isfinite(obs_all) & np.isfinite(d.n) & (d.n > 0))
        entry = {"cut": float(c), "fit_until_step": int(d.step[k - 1]) if k >= 1 else None}
        if not later.size:
            out_cuts.append({**entry, "skipped": "no later row logs the mixed share"})
            continue
        every = max(1, int(np.ceil(later.size / MAX_SCORED)))
        later = later[::every]
        steps, n, obs = d.step[later].astype(float), d.n[later], obs_all[later]
        try:
            if not_binary:
                tie = np.where(np.isfinite(obs_all), 1 - obs_all, np.nan)
                tf = fit_tie_trend(d.step[before], d.n[before], tie[before], d.all_pass[before], d.all_fail[before])
                b = tie_predict(tf, steps, n, n_draws, median=True, level=level)["predictive"]
                model = "tie share"
            elif shapes and on_shapes(ev := shares_evidence(sub := d.subset(before))):  # before the measuring
                ev, dr = shares_drift(sub, ev)
                b = drift_band(dr, ev, steps, n, logged_rows(sub), level, n_shapes, 0, median=True)
                model = "drift shapes"
            else:
                fit = _fit_binary(d.subset(before))
                P = _draw_mixed(quasi_fit(fit), steps, d.K, n_draws, 0)
                if not len(P):
                    raise InputError("the fit has no covariance to draw from")
                b = band(P, n, level, mixed_dispersion(fit), median=True)
                model = fit["model"]
        except InputError as exc:
            out_cuts.append({**entry, "skipped": str(exc)})
            continue
        out_cuts.append({**entry, "model": model, "scored_every": every, "first_scored_step": int(steps[0]),
                         "last_scored_step": int(steps[-1]), **_score(obs, b),
                         "series": {"step": steps, "observed": obs, "lo": b["lo"], "hi": b["hi"],
                                    "median": b["median"]}})
    models = {x.get("model") for x in out_cuts} - {None}
    return _pooled(out_cuts, level, "tie-share trend" if not_binary else "drift shapes" if models == {"drift shapes"}
                   else "scalars fit")
