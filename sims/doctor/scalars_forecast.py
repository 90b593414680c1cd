r"""Expiry and stall forecasts from a scalars-only fit (:mod:`.scalars_fit`).

**Expiry.** The fitted mixed share at future step s is 1 - E[p(s)^K] - E[(1 - p(s))^K] (the drift
continued past the last step). The expiry step is the first step after the last logged one at which it
falls below the threshold (default :data:`~.forecast.DEFAULT_THRESHOLD`), searched up to
:data:`~.forecast.HORIZON` run lengths ahead on a grid of :data:`NEAR` steps within the next run length and
:data:`FAR` beyond (:func:`future_grid`). Its 95% interval: the 2.5% and 97.5% quantiles of the same step over :data:`~.scalars_fit.DRAWS`
parameter vectors from the fit's normal approximation (a draw that never crosses counts as beyond the
horizon; an upper bound beyond it is None).

**Stall.** The trainer's DAPO step (:mod:`.stall`) needs rounds of ``gen_batch`` prompts until
``train_batch`` mixed groups are kept; prompts are drawn from the population, so the rounds' law depends on
the mean mixed share only and :func:`.stall.rounds_distribution` is exact for it (with a finite pool it
uses its Binomial stand-in). Per future step: P(stall) = P(R > cap) and the expected rounds. Reported:
the first step with P(stall) > q for each of :data:`.stall.LEVELS` (interval over the parameter draws, as
the expiry), and the **first cap hit**: the run stops at the first step whose rounds exceed the cap, so
P(no stall through s) = prod over steps s' <= s of (1 - P(stall at s')); its median and its 2.5% / 97.5%
quantiles (the trainer's own randomness at the fitted parameters), with the median's 95% interval over the
draws (the fit's uncertainty), and the ``predictive`` 95% interval (2.5% and 97.5% quantiles of the first hit
averaged over the draws: both uncertainties). The cause at the stall: all-fail collapse when the fitted all-fail share
exceeds the all-pass share there, else all-pass saturation; "not identified" when only the mixed share is
(the zero-std share or the rounds per step). The K of the trainer's config is used where it gives one (the population is K-free).
"""

from __future__ import annotations

import numpy as np

from .forecast import DEFAULT_THRESHOLD, HORIZON
from .predictive import LEVEL, band, dispersion
from .scalars_fit import DRAWS, draws, population_moments, shares_at
from .stall import LEVELS, rounds_distribution, unavailable
from .tie_trend import is_tie_fit, tie_predict

__all__ = ["NEAR", "FAR", "expiry_forecast", "stall_forecast", "stall_from_curves", "future_grid", "row_groups",
           "mixed_dispersion", "predictive_mixed", "expiry_from_curves", "quasi_fit"]

#: the stall's cause where the log gives the mixed share only (the drift maps' and the drift shapes' forecasts)
NO_SIDE = "not identified (the log gives the mixed share only: the zero-std share or the rounds per step)"

MAX_NEED = 1000  #: without a cap, a step expected to need more rounds than this is reported as never filling
NEAR = 120  #: future steps evaluated within one run length of the last step (every step if fewer)
FAR = 80  #: future steps evaluated from one run length to the horizon


def future_grid(fit: dict, horizon: float = HORIZON) -> np.ndarray:
    """Future steps from s_last + 1 to s_last + ``horizon`` run lengths: :data:`NEAR` points over the first run
    length (every step where it is shorter), :data:`FAR` evenly spread beyond."""
    s0, s1 = fit["steps"]
    span = max(s1 - s0, 1)
    near = np.linspace(s1 + 1, s1 + span, min(NEAR, span))
    far = np.linspace(s1 + span, s1 + horizon * span, FAR)
    return np.unique(np.round(np.concatenate([near, far])))


_CACHE: dict = {}


def _draw_mixed(fit: dict, grid: np.ndarray, K: int, n_draws: int, seed: int) -> np.ndarray:
    """Mixed share on ``grid`` per parameter draw (draws x grid); the last two results are kept, as the expiry
    and the stall forecast of one diagnosis ask for the same curves."""
    key = (fit["theta"].tobytes(), fit["cov"].tobytes(), fit["model"], tuple(fit["steps"]), grid.tobytes(), K,
           n_draws, seed, fit.get("logit_shift"))
    got = _CACHE.get(key)
    if got is None:  # kept in a local: another thread may clear the cache meanwhile
        th = draws(fit, n_draws, seed=seed)
        got = np.array([_mixed(fit, x, grid, K)[0] for x in th]).reshape(len(th), len(grid))
        _CACHE.clear() if len(_CACHE) >= 2 else None
        _CACHE[key] = got
    return got


def _t(fit, steps):
    s0, s1 = fit["steps"]
    return (np.asarray(steps, float) - s0) / max(s1 - s0, 1)


def _mixed(fit, theta, steps, K):
    """The mixed share (and pi_pass, pi_fail) at ``steps``; a fit with ``logit_shift`` (the data's difficulty changed,
    :func:`.rules.cap_changes`; logit maps only) moves every drifted logit by it: the logit map's logits move by
    g t, so by g (t + shift / g)."""
    t = _t(fit, steps)
    if fit.get("logit_shift"):
        t = t + fit["logit_shift"] / float(theta[2])
    mo = population_moments(theta, t, K, fit["model"], shares=True)
    return np.clip(1 - mo["all_pass"] - mo["all_fail"], 0.0, 1.0), mo


def _first(grid, mask):
    i = np.flatnonzero(mask)
    return float(grid[i[0]]) if i.size else np.inf


def _interval(values) -> list:
    """[2.5%, 97.5%] quantiles of steps (inf = beyond the horizon: None)."""
    v = np.asarray(values, float)
    if not v.size:
        return [None, None]
    lo, hi = np.quantile(v, [0.025, 0.975], method="inverted_cdf")
    return [None if not np.isfinite(lo) else float(lo), None if not np.isfinite(hi) else float(hi)]


def _step(x):
    return None if x is None or not np.isfinite(x) else float(x)


def row_groups(fit: dict) -> float:
    """Groups per logged row ahead: the median over the fitted rows."""
    n = np.asarray(fit["series"]["groups"], float)
    n = n[np.isfinite(n) & (n > 0)]
    return float(np.median(n)) if n.size else float("nan")


def mixed_dispersion(fit: dict) -> float:
    """Pearson over-dispersion of the logged mixed shares about the fit (:func:`.predictive.dispersion`)."""
    s = fit["series"]
    return dispersion(s["observed_mixed"], s["groups"], s["fitted_mixed"], fit["n_params"])


def quasi_fit(fit: dict) -> dict:
    """``fit`` with its covariance scaled by :func:`mixed_dispersion` (quasi-likelihood: rows that scatter phi times
    the binomial leave the parameters phi times as uncertain); the fit itself where phi = 1."""
    phi = mixed_dispersion(fit)
    return fit if phi <= 1.0 else {**fit, "cov": fit["cov"] * phi}


def predictive_mixed(fit: dict, steps, n_draws: int = DRAWS, seed: int = 0, level: float = LEVEL,
                     median: bool = False) -> dict:
    """The ``level`` predictive band of the mixed share a row of :func:`row_groups` groups will log at ``steps``:
    the parameter draws' mixed shares (the drift's and the population's uncertainty, the covariance scaled by the
    over-dispersion: :func:`quasi_fit`) mixed with each row's binomial noise, over-dispersed by
    :func:`mixed_dispersion` (:mod:`.predictive`). Adds ``groups`` and ``dispersion``; with no covariance the point
    fit alone carries the band."""
    steps = np.asarray(steps, float)
    P = _draw_mixed(quasi_fit(fit), steps, fit["K"], n_draws, seed)
    if not len(P):
        P = _mixed(fit, fit["theta"], steps, fit["K"])[0][None, :]
    n, phi = row_groups(fit), mixed_dispersion(fit)
    return {**band(P, n, level, phi, median), "groups": n, "dispersion": phi,
            "parameter_draws": int(len(P))}


def expiry_forecast(fit: dict, threshold: float = DEFAULT_THRESHOLD, seed: int = 0, n_draws: int = DRAWS,
                    predictive: bool = True) -> dict:
    """``threshold``, ``mixed_now`` (fitted, last step), ``step``, ``interval``, ``status``, ``horizon_step``,
    ``projection`` {step, mixed, predictive} (see the module docstring; ``predictive``: the :data:`.predictive.LEVEL`
    band of the logged mixed share, :func:`predictive_mixed`; None where ``predictive`` is False: it draws the
    parameters again where the rows are over-dispersed, and nothing else reads it)."""
    grid = future_grid(fit)
    K = fit["K"]
    now = shares_at(fit, [fit["steps"][1]])["mixed"][0]
    mixed, _ = _mixed(fit, fit["theta"], grid, K)
    curves = _draw_mixed(fit, grid, K, n_draws, seed)
    return expiry_from_curves(grid, mixed, curves, now, threshold, "drift",
                              predictive_mixed(fit, grid, n_draws, seed=seed) if predictive else None)


def expiry_from_curves(grid, mixed, curves, now: float, threshold: float, what: str, predictive: dict) -> dict:
    """The expiry dict from the point curve ``mixed`` and the parameter draws' ``curves`` on ``grid`` (the fitted
    mixed share ``now`` at the last step; ``what`` names what is extrapolated in the status)."""
    step = _first(grid, mixed < threshold)
    found = [_first(grid, c < threshold) for c in curves]
    if now < threshold:
        status, step = "already below the threshold at the last step (fit)", np.inf
    elif not np.isfinite(step):
        status = f"stays above the threshold for {HORIZON:g} run lengths if the {what} holds"
    else:
        status = f"crosses the threshold near step {step:.0f} if the {what} holds"
    return {"threshold": float(threshold), "mixed_now": float(now), "step": _step(step),
            "interval": _interval(found) if np.isfinite(step) else [None, None], "status": status,
            "horizon_step": float(grid[-1]), "projection": {"step": grid, "mixed": mixed, "predictive": predictive}}


def _is_tie(fit) -> bool:
    return is_tie_fit(fit)


def _point_mixed(fit, steps, K):
    """(mixed share at ``steps`` at the fit, moments or None): the pass-rate fit's, or the tie-share trend's."""
    if _is_tie(fit):
        return tie_predict(fit, steps, 1.0, n_draws=1)["mixed"], None
    return _mixed(fit, fit["theta"], steps, K)


def _hit_cdf(grid, p_stall, start) -> np.ndarray:
    """P(the run has exceeded its cap by each grid step) from P(stall) per step (rows: curves). Steps between
    grid points take the later point's P(stall)."""
    width = np.diff(np.concatenate([[start - 1], grid]))
    return 1 - np.exp(np.cumsum(width * np.log1p(-np.clip(p_stall, 0.0, 1 - 1e-15)), axis=-1))


def _quantiles(grid, cdf, qs=(0.025, 0.5, 0.975)) -> list:
    """Steps at which ``cdf`` first reaches each q (inf beyond the grid)."""
    return [float(grid[i]) if (i := np.searchsorted(cdf, q)) < len(grid) else np.inf for q in qs]


def _uncapped(s1, grid, mixed, settings) -> dict:
    """No cap: no stall, only the rounds a step needs, per step (inf beyond :data:`MAX_NEED` rounds expected);
    ``mixed`` the point mixed share at the last logged step ``s1`` and at each step of ``grid``."""
    B, T = settings["gen_batch"], settings["train_batch"]
    expected = np.full(len(mixed), np.inf)
    for i, u in enumerate(mixed):  # one step at a time: the rounds' range follows each step's own need
        if u > 0 and T / (B * u) <= MAX_NEED:
            expected[i] = rounds_distribution(np.array([u]), B, T, 0)["expected"]
    return {"available": True, "settings": settings, "now": {"step": int(s1), "p_stall": 0.0,
                                                             "expected": float(expected[0])},
            "stall": {}, "first_cap_hit": None, "cause": None, "horizon_step": float(grid[-1]),
            "series": {"step": grid, "p_stall": np.zeros(len(grid)), "expected": expected[1:]}}


def stall_forecast(fit: dict, settings: dict | None, seed: int = 0, n_draws: int = DRAWS) -> dict:
    """The stall forecast for the trainer's ``settings`` (:func:`.trainer_config.read_trainer_config`);
    ``{"available": False, "reason"}`` without them (see the module docstring). ``n_draws``: parameter draws
    of the intervals. ``fit``: a :func:`.scalars_fit.fit_scalars` fit, or a :func:`.tie_trend.fit_tie_trend` fit
    for rewards that are not binary (the rounds depend on the mixed share alone; the cause is then not
    identified)."""
    if (off := unavailable(settings)) is not None:
        return off
    settings = {**settings, "K": int(settings.get("K") or fit.get("K") or 0)}
    s1 = fit["steps"][1]
    grid = future_grid(fit)
    mixed, mo = _point_mixed(fit, np.concatenate([[s1], grid]), settings["K"])
    if not settings["cap"] and not settings.get("pool"):
        return _uncapped(s1, grid, mixed, settings)
    curves = (tie_predict(fit, grid, 1.0, n_draws, seed)["draws"] if _is_tie(fit)
              else _draw_mixed(fit, grid, settings["K"], n_draws, seed))
    if mo is None:  # the tie-share trend: no pass / fail split
        return stall_from_curves(settings, s1, grid, mixed, curves, None, "not identified (rewards not binary: a "
                                 "group's rewards tie or not; no pass / fail split)")
    split = lambda i: (float(mo["all_pass"][i + 1]), float(mo["all_fail"][i + 1]))  # noqa: E731
    return stall_from_curves(settings, s1, grid, mixed, curves, split, None if fit["identified"]["split"] else
                             NO_SIDE)


def stall_from_curves(settings: dict, s1, grid, mixed, curves, split, cause: str | None = None) -> dict:
    """The stall forecast's dict (module docstring) from the mixed share ``mixed`` at the last logged step ``s1``
    and at each step of ``grid`` (the point curve), ``curves`` (draws x grid) the drawn mixed share of the
    intervals; ``settings`` the trainer's with ``K`` (a cap or a pool, else :func:`_uncapped`). ``split``: a
    function of a grid index giving the (all-pass, all-fail) shares there, or None (no split: none given); the
    cause is read at the first step with P(stall) over the lowest level (the larger of the two), unless ``cause``
    says it (not identified). Used by the drift maps (:func:`stall_forecast`) and the shares' measured drift
    (:func:`.shares_fit.drift_stall_forecast`)."""
    grid, mixed = np.asarray(grid, float), np.asarray(mixed, float)
    if not settings["cap"] and not settings.get("pool"):
        return _uncapped(s1, grid, mixed, settings)
    rd = rounds_distribution(mixed[:, None], settings["gen_batch"], settings["train_batch"], settings["cap"],
                             settings.get("pool"))
    p_all, e_all = np.asarray(rd["p_stall"], float), np.asarray(rd["expected"], float)
    now_p, p, expected = p_all[0], p_all[1:], e_all[1:]
    curves = np.asarray(curves, float).reshape(-1, len(grid))
    if curves.size:
        d = rounds_distribution(curves.reshape(-1, 1), settings["gen_batch"], settings["train_batch"],
                                settings["cap"], settings.get("pool"))
        curves = np.asarray(d["p_stall"], float).reshape(curves.shape)
    levels = {}
    for q in LEVELS:
        step = _first(grid, p > q)
        levels[str(q)] = {"step": _step(step), "interval": _interval([_first(grid, c > q) for c in curves]),
                          "already": bool(now_p > q)}
    hit = _quantiles(grid, _hit_cdf(grid, p, s1 + 1))
    cdfs = _hit_cdf(grid, curves, s1 + 1)
    hit_draws = [_quantiles(grid, c, (0.5,))[0] for c in cdfs]
    pred = _quantiles(grid, cdfs.mean(axis=0)) if len(cdfs) else [np.inf] * 3
    at = levels[str(LEVELS[0])]["step"]
    i = int(np.searchsorted(grid, at)) if at is not None else 0
    ap, af = (0.0, 0.0) if split is None else split(min(i, len(grid) - 1))
    cause = cause or ("all-fail collapse" if af > ap else "all-pass saturation")
    return {"available": True, "settings": settings, "now": {"step": int(s1), "p_stall": float(now_p),
                                                             "expected": float(e_all[0])},
            "stall": levels, "cause": cause, "cause_share_all_fail": af / (ap + af) if ap + af > 0 else None,
            "first_cap_hit": {"median": _step(hit[1]), "range": [_step(hit[0]), _step(hit[2])],
                              "median_interval": _interval(hit_draws),
                              "predictive": [_step(pred[0]), _step(pred[2])]},
            "horizon_step": float(grid[-1]), "series": {"step": grid, "p_stall": p, "expected": expected}}
