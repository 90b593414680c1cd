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

**Two sides.** Where the log also splits the tied groups into two sides that sum to the tie share at every row
(tinker-cookbook's ``frac_all_good`` / ``frac_all_bad``: every tied group is in one of them, whatever the rewards;
:attr:`grpo_lab.sims.ingest.trackers.dialects.Dialect.ties_split`), the trend is a multinomial logistic one over
(tied high, tied low, mixed),

    log(pi_hi(s) / pi_mixed(s)) = a_hi + b_hi t,   log(pi_lo(s) / pi_mixed(s)) = a_lo + b_lo t,

(:data:`MODEL_SIDES`, four parameters, the counts of a row multinomial; a normal prior of sd
:data:`SIDES_PRIOR_SD` on each keeps a side that no row holds finite and wide), so the tie share pi_hi + pi_lo can
fall and then rise, as when the groups tied low give way to mixed ones and then to groups tied high: the life of a
run whose policy improves, which the one-sided trend (monotone in t) cannot follow. The two are weighed by the
doctor's one chooser (leave-future-out, pseudo-BMA+, :mod:`.choice`, each scoring the later rows' tied counts) and
the two-sided is kept only where its weight is more than twice the one-sided's (:data:`.scalars_fit.PARSIMONY`,
the drift maps' rule); the fit's ``choice`` holds the weights. On the real runs (tests/fixtures/real) the two-sided is kept on three tinker runs
(weights 0.84-1.00) with every back-test row held as before; on the reward-hacking run whose all-pass groups
arrived in its last four rows the data cannot yet tell (0.61 against 0.39) and the one-sided is kept (averaging the
two trends' draws by weight was tried: its band held 34 of 43 later rows there, the one-sided's 36). The expiry,
intervals and band follow as for the one-sided. The trend not kept stays in ``choice["other"]``; where the log
cannot rule it out (:func:`undecided`) its expiry is computed too (:func:`alternative_expiry`) and a verdict the two
do not share is said as "uncertain" (:func:`.when.check_expiry`): that run's one-sided "stays above" against the
two-sided "crosses near step 27".

**Recent window.** A straight line on the logit scale cannot bend: where the tie share rose fast and then settled
(tinker-arithmetic: the mixed share falls from 81% to 4% in 4 steps and stays near 1% for 95 more), the early
rows, which carry most of the binomial information, set the slope, and the line carries the mixed share on to 0
(there its band for the next row read [0.0%, 0.0%] beside a log whose last 30 rows held 1-3 mixed groups in 12).
The kept trend is therefore weighed, by the same chooser, against itself fitted on the log's last :data:`RECENT`
of the rows only (the earlier rows keep the time scale t and the series but leave the likelihood; at each origin
the recent window is the last half of the rows before it), and the recent fit is kept where its weight is more
than twice the whole log's (the fit's ``window``: ``kept``, ``weights``, ``first_step``). A local trend is the
usual hedge against a drift that changed its pace; where the log follows one line the whole log wins by
parsimony. On the real logs the recent window is kept on tinker-arithmetic (weight 1.00), whose next-row band is
now [0.0%, 2.8%], and on two rlvr runs whose tie shares sit at 0 throughout (bands unchanged in what they hold).
The fleet's own quick trend (:func:`.fleet.fit_trend`) keeps the whole log.

Edge cases: rows without a finite tie share or groups are left out; fewer than 3 rows raise InputError (5 for
two sides, else the one-sided trend is fitted); a tie share (or a side) of 0 or 1 at every row gives a fit at the
Newton cap, or short of it on a flat slope (``at_bound`` either way; the report then gives no slope interval).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..errors import InputError
from .forecast import DEFAULT_THRESHOLD
from .predictive import LEVEL, band, dispersion
from .scalars_fit import LFO_MAX_ROWS, LFO_MAX_SCORED, MAX_ROWS, PARSIMONY  # the chooser's rule for a simpler model: kept
# unless the other's weight is 2x; its pooling of the refits' rows and thinning of the rows scored on long logs

__all__ = ["fit_tie_trend", "tie_expiry", "tie_predict", "is_tie_fit", "undecided", "alternative_expiry", "DRAWS",
           "MODEL", "MODEL_SIDES", "RECENT", "recent_first", "thin_series"]

DRAWS = 400  #: parameter draws of the intervals and the band
MODEL = "tie share: logit pi = a + b t"  #: the fit's ``model`` (what :mod:`.scalars_forecast` dispatches on)
MODEL_SIDES = "tie share by side: log(pi_side / pi_mixed) = a + b t"  #: the two-sided trend's ``model``
SIDES_TOL = 1e-6  #: the two sides must sum to the tie share within this at every row to be fitted as sides
MIN_SIDE_ROWS = 5  #: rows the two-sided trend needs (four parameters)
#: sd of a normal prior on each of the two-sided trend's parameters: a side that no row holds has no finite ML fit
#: (its share's MLE is 0, the slope unbounded); the prior keeps the fit finite and its interval wide there
SIDES_PRIOR_SD = 10.0
RECENT = 0.5  #: the recent window: the last half of the logged rows (module docstring, "Recent window")
CHOICE_DRAWS = 200  #: parameter draws of a refit's predictive density in the one- / two-sided choice
NEWTON = 50  #: Newton iterations at most
BOUND = 30.0  #: |a|, |b| beyond this: at the bound (the tie share at 0 or 1 at every row)
Z95 = 1.959963984540054


def _rows(step, n, tie):
    step, n, tie = (np.asarray(v, float) for v in (step, n, tie))
    ok = np.isfinite(step) & np.isfinite(n) & (n > 0) & np.isfinite(tie)
    return step[ok], n[ok], np.clip(tie[ok], 0.0, 1.0)


def is_tie_fit(fit: dict) -> bool:
    """Whether ``fit`` is a tie-share trend (either kind) rather than a pass-rate fit."""
    return fit.get("model") in (MODEL, MODEL_SIDES)


def _covariance(H: np.ndarray) -> np.ndarray:
    """The inverse of the information ``H``, NaN where it is singular or ill-conditioned (a fit at its bound)."""
    try:
        return np.linalg.inv(H) if np.linalg.cond(H) < 1e12 else np.full(H.shape, np.nan)
    except np.linalg.LinAlgError:
        return np.full(H.shape, np.nan)


def _sides(step, n, tie, hi, lo):
    """The rows of the two-sided trend (step, n, tied high, tied low), or None where the sides do not sum to the tie
    share at every usable row or too few rows remain."""
    step, n, tie, hi, lo = (np.asarray(v, float) for v in (step, n, tie, hi, lo))
    ok = np.isfinite(step) & np.isfinite(n) & (n > 0) & np.isfinite(tie)
    if not ok.any() or not (np.isfinite(hi[ok]).all() and np.isfinite(lo[ok]).all()):
        return None
    if np.max(np.abs(hi[ok] + lo[ok] - tie[ok])) > SIDES_TOL or ok.sum() < MIN_SIDE_ROWS:
        return None
    return step[ok], n[ok], np.clip(hi[ok], 0.0, 1.0), np.clip(lo[ok], 0.0, 1.0)


def _mixed_sides(theta, t):
    """pi_mixed at ``t`` for parameter rows ``theta`` (D x 4: a_hi, b_hi, a_lo, b_lo): 1 / (1 + e^eta_hi + e^eta_lo)."""
    theta = np.atleast_2d(theta)
    eta = np.stack([theta[:, 0:1] + theta[:, 1:2] * t, theta[:, 2:3] + theta[:, 3:4] * t], 0)  # 2 x D x T
    return np.exp(-np.logaddexp(0.0, np.logaddexp(eta[0], eta[1])))


def _fit_sides(s, n, hi, lo, first: int = 0) -> dict:
    """ML fit of the two-sided (multinomial logistic) trend by Newton's method; rows before ``first`` as in
    :func:`_fit_one`."""
    if first and len(s) - first < MIN_SIDE_ROWS:
        raise InputError(f"the two-sided tie trend needs at least {MIN_SIDE_ROWS} rows, got {len(s) - first}")
    s0, s1 = float(s[0]), float(s[-1])
    t = (s - s0) / max(s1 - s0, 1.0)
    w = (np.arange(len(s)) >= first).astype(float)  # the rows in the likelihood
    k = np.stack([hi * n, lo * n], 1) * w[:, None]  # rows x 2 (tied high, tied low); mixed = n - both
    nw = n * w
    X = np.stack([np.ones_like(t), t], 1)
    km = np.maximum(nw - k.sum(1), 0.0)
    x = np.zeros(4)
    for j in range(2):
        x[2 * j] = np.log((k[:, j].sum() + 0.5) / (km.sum() + 0.5))

    def probs(x):
        eta = np.stack([X @ x[:2], X @ x[2:]], 1)
        m = np.maximum(eta.max(1, keepdims=True), 0.0)
        e = np.exp(eta - m)
        return e / (np.exp(-m) + e.sum(1, keepdims=True))  # rows x 2: pi_hi, pi_lo

    def info(pi):
        H = np.zeros((4, 4))
        for a in range(2):
            for b in range(2):
                v = nw * (pi[:, a] * ((a == b) - pi[:, b]))
                H[2 * a:2 * a + 2, 2 * b:2 * b + 2] = (X * v[:, None]).T @ X
        return H

    prec = np.full(4, 1.0 / SIDES_PRIOR_SD**2)
    for _ in range(NEWTON):
        pi = probs(x)
        g = np.concatenate([X.T @ (k[:, j] - nw * pi[:, j]) for j in range(2)]) - prec * x
        dx = np.linalg.solve(info(pi) + np.diag(prec), g)
        x = np.clip(x + np.clip(dx, -5, 5), -BOUND, BOUND)
        if np.max(np.abs(dx)) < 1e-8:
            break
    pi = probs(x)
    cov = _covariance(info(pi) + np.diag(prec))
    se = np.sqrt(np.abs(np.diag(cov)))
    tie_fit = pi.sum(1)
    side = {name: {"a": float(x[2 * j]), "b": float(x[2 * j + 1]), "se_b": float(se[2 * j + 1]),
                   "b_interval": [float(x[2 * j + 1] - Z95 * se[2 * j + 1]), float(x[2 * j + 1] + Z95 * se[2 * j + 1])]}
            for j, name in enumerate(("high", "low"))}
    return {"model": MODEL_SIDES, "theta": x, "cov": cov, "sides": side,
            "at_bound": bool(np.any(np.abs(x) >= BOUND - 1e-9)), "steps": [int(s0), int(s1)], "n_params": 4,
            "fitted_from_step": int(s[first]),
            "series": {"step": s, "groups": n, "observed_tie": hi + lo, "fitted_tie": tie_fit,
                       "observed_high": hi, "observed_low": lo, "fitted_high": pi[:, 0], "fitted_low": pi[:, 1]},
            "dispersion": dispersion(1 - (hi + lo)[first:], n[first:], 1 - tie_fit[first:], 4)}


def _lfo(rows, candidates, fitter) -> dict:
    """The leave-future-out weights of ``candidates`` (:func:`.choice.lfo_weights`, the doctor's one chooser) over
    ``rows`` (step, n, high, low; for a log with no sides, low = 0 and high the tie share): each refitted on the
    rows before an origin (``fitter(candidate, rows_before)``) scores each later row up to the next by log of the
    mean over :data:`CHOICE_DRAWS` parameter draws of Binomial(tied; n, pi_tie). On a long log, as the drift maps'
    chooser (:func:`.scalars_fit.lfo_choice`): the refits pool the rows before the origin beyond
    :data:`.scalars_fit.LFO_MAX_ROWS` (:func:`_pooled`) and every n-th row is scored, n the least that leaves at
    most :data:`.scalars_fit.LFO_MAX_SCORED` (a 1,000,000-row log was 170 s of choice without, 342 s with sides)."""
    from scipy.stats import binom

    from .choice import lfo_weights, origins

    s, n, hi, lo = rows
    k = np.round((hi + lo) * n)
    cuts = origins(len(s))
    every = max(1, -(-(len(s) - cuts[0][0]) // LFO_MAX_SCORED)) if cuts else 1

    def scores(c, cut, end):
        j = np.arange(cut, end)[::every]  # the rows scored: every n-th on a long log (as scalars_fit.lfo_choice)
        try:
            f = fitter(c, _pooled(tuple(v[:cut] for v in rows), LFO_MAX_ROWS))
        except InputError:
            return np.full(len(j), -np.inf)
        tie = 1 - tie_predict(f, s[j], n[j], CHOICE_DRAWS, with_band=False)["draws"]
        return np.log(np.mean(binom.pmf(k[j], n[j], np.clip(tie, 1e-12, 1 - 1e-12)), axis=0))

    return lfo_weights(len(s), candidates, scores)


def _pooled(rows, max_rows: int):
    """``rows`` (step, n, high, low) with more than ``max_rows`` rows: the inner rows pooled into consecutive bins of
    at most ceil((rows - 2) / (max_rows - 2)) (groups summed, shares and step groups-weighted), the first and the last
    row kept alone so the time scale is the rows' own; as :func:`.scalars_fit._pool` pools the maps' refits (exact
    where a bin's shares are equal; they move by at most the trend over a bin)."""
    s, n, hi, lo = rows
    m = len(s)
    if m <= max_rows:
        return rows
    size = int(np.ceil((m - 2) / (max_rows - 2)))
    inner = 1 + np.arange(m - 2) // size
    starts = np.flatnonzero(np.diff(np.r_[-1, 0, inner, inner[-1] + 1]))
    N = np.add.reduceat(n, starts)
    S = np.add.reduceat(s * n, starts) / N
    S[0], S[-1] = s[0], s[-1]
    return S, N, np.add.reduceat(hi * n, starts) / N, np.add.reduceat(lo * n, starts) / N


def _fit_kind(kind: str, rows, first: int = 0) -> dict:
    """The one- or two-sided trend (``kind``: :data:`MODEL` or :data:`MODEL_SIDES`) on ``rows`` (step, n, high,
    low), rows before ``first`` out of the likelihood."""
    s, n, hi, lo = rows
    return _fit_sides(s, n, hi, lo, first) if kind == MODEL_SIDES else _fit_one(*_rows(s, n, hi + lo), first)


def recent_first(rows: int) -> int:
    """The first row of the recent window over ``rows`` rows: the last :data:`RECENT` of them."""
    return int(round((1 - RECENT) * rows))


def _window(fit: dict, rows) -> dict:
    """The kept trend over the whole log or over its recent window (:data:`RECENT`), weighed by the chooser (module
    docstring, "Recent window"): the recent fit is kept where its weight is more than 1 / :data:`PARSIMONY` times
    the whole log's. Adds ``window`` {``kept``, ``weights``, ``scores``, ``origins``, ``scored`` (rows), ``first_step``}."""
    kind = fit["model"]
    ch = _lfo(rows, ["whole", "recent"],
              lambda c, r: _fit_kind(kind, r, recent_first(len(r[0])) if c == "recent" else 0))
    w = ch["weights"]
    first = recent_first(len(rows[0]))
    info = {"weights": w, "scores": ch["scores"], "origins": len(ch["origins"]), "scored": ch["scored_steps"],
            "first_step": int(rows[0][first])}
    if not w["recent"] * PARSIMONY > w["whole"]:  # (the recent fit wins only where its refits on fewer rows fitted)
        return {**fit, "window": {**info, "kept": "whole"}}
    got = _fit_kind(kind, rows, first)
    return {**fit, **{k: v for k, v in got.items() if k != "series"}, "series": {**fit["series"], **got["series"]},
            "window": {**info, "kept": "recent"}}


def fit_tie_trend(step, n, tie, high=None, low=None, recent: bool = True) -> dict:
    """ML fit of the logistic trend of the tie share (see the module docstring). Where ``high`` and ``low`` (the tied
    groups' two sides, shares of a row's groups) sum to ``tie`` at every row, the one- and two-sided trends are
    weighed by their leave-future-out scores (:func:`_lfo`) and the two-sided is kept only where its weight is more
    than 1 / :data:`PARSIMONY` times the one-sided's (the fit's ``choice``). ``recent``: the kept trend is then
    weighed against itself fitted on the log's recent window (:func:`_window`, the fit's ``window``)."""
    r1 = _rows(step, n, tie)
    one = _fit_one(*r1)
    rows = _sides(step, n, tie, high, low) if high is not None and low is not None else None
    if rows is None:
        return _window(one, (*r1, np.zeros_like(r1[2]))) if recent else one
    two = _fit_sides(*rows)
    choice = _lfo(rows, [MODEL, MODEL_SIDES], _fit_kind)
    w = choice["weights"]
    keep, other = (two, one) if w[MODEL_SIDES] * PARSIMONY > w[MODEL] else (one, two)
    if keep is one:  # the rows' sides beside the one-sided trend's tie share (the verdicts' logged tail reads them)
        keep = {**one, "series": {**one["series"], "observed_high": rows[2], "observed_low": rows[3]}}
    kept = {**keep, "choice": {"weights": w, "scores": choice["scores"], "origins": len(choice["origins"]),
                               "kept": keep["model"], "other": other}}
    return _window(kept, rows) if recent else kept


def undecided(fit: dict) -> dict | None:
    """The trend the chooser weighed and did not keep, where the log cannot rule it out: its weight at least
    :data:`PARSIMONY` times the kept one's (the kept one won by parsimony or by less than that factor), else None.
    A verdict of the kept trend about the future stands only where this one agrees (:func:`.when.check_expiry`)."""
    ch = fit.get("choice") or {}
    other = ch.get("other")
    if other is None or ch["weights"][other["model"]] < PARSIMONY * ch["weights"][ch["kept"]]:
        return None
    return other


def alternative_expiry(fit: dict, threshold: float = DEFAULT_THRESHOLD) -> list[dict]:
    """The expiry under the trend the log cannot rule out (:func:`undecided`) as ``[{"model", "weight",
    "kept_model", "kept_weight", "status", "step", "interval"}]``; empty where there is none."""
    other = undecided(fit)
    if other is None:
        return []
    w = fit["choice"]["weights"]
    e = tie_expiry(other, threshold)
    name = {MODEL: "one-sided tie trend", MODEL_SIDES: "two-sided tie trend"}
    return [{"model": name[other["model"]], "weight": float(w[other["model"]]), "kept_model": name[fit["model"]],
             "kept_weight": float(w[fit["model"]]), "status": e["status"], "step": e["step"],
             "interval": e["interval"]}]


def _fit_one(s, n, y, first: int = 0) -> dict:
    """ML fit of the one-sided trend on rows (step, n, tie) as :func:`_rows` gives them; rows before ``first`` are
    kept in the series and on the time scale t but left out of the likelihood (the recent window, :func:`_window`)."""
    if len(s) - first < 3:
        raise InputError(f"the tie-share trend needs at least 3 rows with a zero-std share and their groups, got "
                         f"{len(s) - first}")
    s0, s1 = float(s[0]), float(s[-1])
    t = (s - s0) / max(s1 - s0, 1.0)
    k = y * n
    w = (np.arange(len(s)) >= first).astype(float)  # the rows in the likelihood
    x = np.array([float(np.log((k[first:].sum() + 0.5) / (n[first:].sum() - k[first:].sum() + 0.5))), 0.0])
    X = np.stack([np.ones_like(t), t], 1)
    for _ in range(NEWTON):
        pi = expit(X @ x)
        g = X.T @ (w * (k - n * pi))
        H = (X * (w * n * pi * (1 - pi))[:, None]).T @ X + 1e-9 * np.eye(2)
        dx = np.linalg.solve(H, g)
        x = np.clip(x + np.clip(dx, -5, 5), -BOUND, BOUND)
        if np.max(np.abs(dx)) < 1e-8:
            break
    pi = expit(X @ x)
    cov = _covariance((X * (w * n * pi * (1 - pi))[:, None]).T @ X)
    se = np.sqrt(np.abs(np.diag(cov)))
    return {"model": MODEL, "a": float(x[0]), "b": float(x[1]), "theta": x, "cov": cov,
            "se_a": float(se[0]), "se_b": float(se[1]),
            "intervals": {"b": [float(x[1] - Z95 * se[1]), float(x[1] + Z95 * se[1])]},
            # every fitted row ties, or none does: no finite optimum (Newton stops short of the cap on a flat slope)
            "at_bound": bool(np.any(np.abs(x) >= BOUND - 1e-9) or np.all(k[first:] <= 0) or np.all(k[first:] >= n[first:])),
            "steps": [int(s0), int(s1)], "n_params": 2,
            "fitted_from_step": int(s[first]),
            "series": {"step": s, "groups": n, "observed_tie": y, "fitted_tie": pi},
            "dispersion": dispersion(1 - y[first:], n[first:], 1 - pi[first:], 2)}


def _curve(fit, theta, t):
    """The mixed share at ``t`` (draws x steps) of parameter rows ``theta`` of a one- or two-sided trend."""
    if fit["model"] == MODEL_SIDES:
        return _mixed_sides(theta, t)
    return 1 - expit(theta @ np.stack([np.ones_like(t), t], 0))


def _draws(fit, n_draws, seed):
    if not np.all(np.isfinite(fit["cov"])):
        return fit["theta"][None, :]
    rng = np.random.default_rng(seed)
    cov = fit["cov"] * max(fit["dispersion"], 1.0)  # quasi-likelihood: over-dispersed rows, wider parameters
    return np.clip(rng.multivariate_normal(fit["theta"], cov, size=n_draws, method="eigh"), -BOUND, BOUND)


def tie_predict(fit: dict, steps, n, n_draws: int = DRAWS, seed: int = 0, level: float = LEVEL,
                median: bool = False, with_band: bool = True) -> dict:
    """Fitted mixed share (1 - tie) at ``steps``, its parameter draws and the ``level`` predictive band of a row
    of ``n`` groups (``with_band`` False: no band, the draws alone, as the chooser's scores need)."""
    s0, s1 = fit["steps"]
    t = (np.asarray(steps, float) - s0) / max(s1 - s0, 1.0)
    mixed = _curve(fit, fit["theta"][None, :], t)[0]
    P = _curve(fit, _draws(fit, n_draws, seed), t)  # draws x steps, mixed share
    if not with_band:
        return {"mixed": mixed, "draws": P}
    return {"mixed": mixed, "draws": P,
            "predictive": {**band(P, n, level, fit["dispersion"], median), "groups": float(np.median(n)),
                           "dispersion": fit["dispersion"], "parameter_draws": int(len(P))}}


def thin_series(fit: dict, max_rows: int = MAX_ROWS) -> dict:
    """``fit`` (and the trend its chooser did not keep, ``choice["other"]``) with each per-row series thinned to every
    n-th row and the last, n the least that leaves at most ``max_rows`` (``series_every`` n): what a diagnosis returns
    once every stage has read the full series, so that a 1,000,000-row log's JSON stays bounded (151.8 MB before)."""
    ser = fit["series"]
    m = len(ser["step"])
    out = fit
    if m > max_rows:
        every = -(-m // (max_rows - 1))
        keep = np.unique(np.r_[np.arange(0, m, every), m - 1])
        out = {**fit, "series": {k: np.asarray(v)[keep] for k, v in ser.items()}, "series_every": int(every)}
    other = (out.get("choice") or {}).get("other")
    if other is not None:
        out = {**out, "choice": {**out["choice"], "other": thin_series(other, max_rows)}}
    return out


def tie_expiry(fit: dict, threshold: float = DEFAULT_THRESHOLD, n_draws: int = DRAWS, seed: int = 0) -> dict:
    """The expiry of the mixed share under the tie trend, in the shape of :func:`.scalars_forecast.expiry_forecast`."""
    from .scalars_forecast import expiry_from_curves, future_grid

    grid = future_grid(fit)
    pr = tie_predict(fit, grid, float(np.median(fit["series"]["groups"])), n_draws, seed)
    now = float(1 - fit["series"]["fitted_tie"][-1])
    return {**expiry_from_curves(grid, pr["mixed"], pr["draws"], now, threshold, "trend", pr["predictive"]),
            "model": "tie share"}
