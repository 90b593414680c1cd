r"""Maximum-likelihood fits of a run's difficulty from its groups' success counts.

Each group of K binary rollouts has S successes. If the prompt's pass rate is
p ~ Beta(alpha, beta) and the rollouts pass independently given p, then S is
beta-binomial::

    P(S = s) = C(K, s) B(s + alpha, K - s + beta) / B(alpha, beta)     (scipy.stats.betabinom)

so the counts ``n_s`` of groups with s = 0..K successes are sufficient and the
log-likelihood is ``sum_s n_s log P(S = s)``: a fit costs O(K), whatever the
number of groups. Fits are in log-parameters (BFGS on the objective with the
parameters clipped to [:data:`LOG_BOUNDS`]); standard errors come from the observed Fisher information
(the inverse of the numerical Hessian of the negative log-likelihood at the
optimum, mapped to the natural parameters by the delta method). They assume
independent groups; a prompt drawn many times makes them optimistic.

The **two-component mixture** ``w BetaBin(K, a1, b1) + (1 - w) BetaBin(K, a2, b2)``
(components ordered by mean) has 5 parameters against the K free cell shares,
so it is fitted only for K >= :data:`MIXTURE_MIN_K`; it is preferred when its
BIC (``2 NLL + k ln N``) is lower than the single Beta's.

**Goodness of fit**: Pearson's chi-square over the K + 1 cells, adjacent cells
pooled from the ends until each expects at least :data:`MIN_EXPECTED` groups,
``df = cells - 1 - parameters``; the fit is called poor when ``p <`` :data:`GOF_ALPHA`.
With very many groups the test rejects small, harmless misfits: read it beside
the predicted-vs-observed unanimous shares.

**Observed shares** carry the Jeffreys 95% interval, the 2.5% and 97.5% quantiles
of Beta(k + 1/2, n - k + 1/2).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

from ..errors import InputError

__all__ = ["LOG_BOUNDS", "MIXTURE_MIN_K", "GOF_ALPHA", "MIN_EXPECTED", "fit_beta", "fit_mixture", "gof",
           "share_interval", "mixture_pmf", "moment_start"]

LOG_BOUNDS = (np.log(1e-3), np.log(1e5))  #: bounds of log alpha and log beta in every fit
W_BOUNDS = (-9.0, 9.0)  #: bounds of the mixture weight's logit
MIXTURE_MIN_K = 6  #: the smallest K at which the 5-parameter mixture is identifiable and testable
GOF_ALPHA = 0.01  #: a fit whose chi-square p-value is below this is reported as poor
MIN_EXPECTED = 5.0  #: cells are pooled until each expects at least this many groups
INTERVAL = 0.95  #: coverage of the observed shares' intervals
MIXTURE_STARTS = 2  #: the mixture is climbed from this many of its starting points (the most likely ones)
GTOL_PER_GROUP = 1e-7  #: BFGS stops when the gradient's norm is below this times the number of groups
_EDGE = 1e-6  #: a parameter this close (in log) to its bound is reported at the bound


def _gtol(w: np.ndarray) -> float:
    """BFGS's gradient tolerance, relative to the number of groups: the log-likelihood grows with it."""
    return GTOL_PER_GROUP * float(np.sum(w)) + 1e-8


def _loglik(w: np.ndarray, logpmf: np.ndarray) -> float:
    """sum_i w_i log P_i, with 0 log 0 = 0 (a cell no group falls in costs nothing)."""
    return float(np.sum(np.where(w > 0, w * logpmf, 0.0)))


def _moments(s: np.ndarray, n: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Method-of-moments (alpha, beta) from weighted (successes, trials) cells, for a starting point:
    m = sum w s / sum w n; the variance of s/n beyond binomial noise m(1 - m) E[1/n] is Var(p), and
    alpha + beta = m (1 - m) / Var(p) - 1. Clipped into range."""
    y = s / n
    m = float(np.clip(np.sum(w * s) / np.sum(w * n), 1e-3, 1 - 1e-3))
    var_y = float(np.sum(w * (y - m) ** 2) / np.sum(w))
    noise = m * (1 - m) * float(np.sum(w / n) / np.sum(w))
    tau = float(np.clip((var_y - noise) / (m * (1 - m) - noise) if m * (1 - m) > noise else 0.5, 1e-3, 0.95))
    total = 1.0 / tau - 1.0
    return m * total, (1 - m) * total


def moment_start(counts, K: int) -> tuple[float, float]:
    """Method-of-moments (alpha, beta) from group cell counts ``n_s`` (s = 0..K); see :func:`_moments`."""
    counts = np.asarray(counts, float)
    return _moments(np.arange(K + 1, dtype=float), np.full(K + 1, float(K)), counts)


def _hessian(f, x: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Central-difference Hessian of a scalar function f at x."""
    n = len(x)
    H = np.empty((n, n))
    f0 = f(x)
    for i in range(n):
        ei = np.zeros(n)
        ei[i] = h
        H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / h**2
        for j in range(i + 1, n):
            ej = np.zeros(n)
            ej[j] = h
            H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h**2)
    return H


def _covariance(nll, x: np.ndarray, jac: np.ndarray) -> np.ndarray:
    """Delta-method covariance of the natural parameters: J H^-1 J^T; NaN where H is not positive definite."""
    H = _hessian(nll, x)
    try:
        np.linalg.cholesky(H)
        cov_x = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        return np.full((len(x), len(x)), np.nan)
    return jac @ cov_x @ jac.T


def share_interval(k, n, level: float = INTERVAL) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys interval for a share k / n: quantiles of Beta(k + 1/2, n - k + 1/2); [0, 1] where n = 0."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    tail = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(tail, k + 0.5, n - k + 0.5), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - tail, k + 0.5, n - k + 0.5), 1.0)
    return np.where(n > 0, lo, 0.0), np.where(n > 0, hi, 1.0)


def gof(counts, expected_probs, n_params: int) -> dict:
    """Pearson chi-square of cell counts against model cell probabilities, pooling sparse end cells.

    Returns ``{statistic, df, p_value, poor, cells}``; p is NaN (and ``poor`` False) when df < 1.
    """
    counts = np.asarray(counts, float)
    e = np.asarray(expected_probs, float) * counts.sum()
    groups, cur_o, cur_e = [], 0.0, 0.0
    for o, x in zip(counts, e):  # pool left to right until a cell expects MIN_EXPECTED
        cur_o, cur_e = cur_o + o, cur_e + x
        if cur_e >= MIN_EXPECTED:
            groups.append([cur_o, cur_e])
            cur_o, cur_e = 0.0, 0.0
    if groups:
        groups[-1][0] += cur_o
        groups[-1][1] += cur_e
    else:
        groups = [[cur_o, cur_e]]
    o, x = np.array(groups).T
    stat = float(np.sum((o - x) ** 2 / np.where(x > 0, x, np.inf)))
    df = len(o) - 1 - n_params
    p = float(stats.chi2.sf(stat, df)) if df >= 1 else float("nan")
    return {"statistic": stat, "df": int(df), "p_value": p, "poor": bool(df >= 1 and p < GOF_ALPHA),
            "cells": int(len(o))}


def _check_counts(counts, K: int) -> np.ndarray:
    counts = np.asarray(counts, float)
    if counts.shape != (K + 1,) or np.any(counts < 0) or counts.sum() <= 0:
        raise InputError(f"cell counts must be K + 1 = {K + 1} non-negative numbers with a positive sum")
    return counts


def _fit_beta_cells(s: np.ndarray, n: np.ndarray, w: np.ndarray) -> dict:
    """ML Beta(alpha, beta) for weighted (successes s, trials n) cells: the core of :func:`fit_beta`."""

    def nll(x):
        x = np.clip(x, *LOG_BOUNDS)
        return -_loglik(w, stats.betabinom.logpmf(s, n, np.exp(x[0]), np.exp(x[1])))

    x0 = np.clip(np.log(_moments(s, n, w)), *LOG_BOUNDS)
    res = optimize.minimize(nll, x0, method="BFGS", options={"gtol": _gtol(w)})
    x = np.clip(res.x, *LOG_BOUNDS)
    a, b = np.exp(x)
    at_bound = bool(np.any(np.abs(x - LOG_BOUNDS[0]) < _EDGE) or np.any(np.abs(x - LOG_BOUNDS[1]) < _EDGE))
    cov = _covariance(nll, x, np.diag(np.exp(x))) if not at_bound else np.full((2, 2), np.nan)
    return {
        "alpha": float(a), "beta": float(b),
        "se_alpha": float(np.sqrt(cov[0, 0])), "se_beta": float(np.sqrt(cov[1, 1])), "cov": cov,
        "mean": float(a / (a + b)), "rho": float(1.0 / (a + b + 1.0)),
        "loglik": -float(res.fun), "n_groups": int(w.sum()), "at_bound": at_bound,
    }


def fit_beta(counts, K: int) -> dict:
    """ML beta-binomial fit of cell counts ``n_s`` (s = 0..K).

    Returns ``alpha``, ``beta``, ``se_alpha``, ``se_beta``, ``cov`` (2 x 2), ``mean`` (alpha / (alpha + beta)),
    ``rho`` (the intra-group correlation 1 / (alpha + beta + 1)), ``loglik``, ``n_groups``, ``at_bound``
    (a parameter hit :data:`LOG_BOUNDS`; its SE is then not meaningful), ``cell_probs`` (the fitted pmf),
    ``predicted_all_pass`` / ``predicted_all_fail`` (pmf at K and 0) and ``gof`` (see :func:`gof`).
    """
    counts = _check_counts(counts, K)
    s = np.arange(K + 1)
    out = _fit_beta_cells(s.astype(float), np.full(K + 1, float(K)), counts)
    probs = stats.betabinom.pmf(s, K, out["alpha"], out["beta"])
    out.update(cell_probs=probs, predicted_all_pass=float(probs[K]), predicted_all_fail=float(probs[0]),
               gof=gof(counts, probs, 2))
    return out


def mixture_pmf(K: int, w: float, a1: float, b1: float, a2: float, b2: float) -> np.ndarray:
    """Cell probabilities of w BetaBin(K, a1, b1) + (1 - w) BetaBin(K, a2, b2), s = 0..K."""
    s = np.arange(K + 1)
    return w * stats.betabinom.pmf(s, K, a1, b1) + (1 - w) * stats.betabinom.pmf(s, K, a2, b2)


def _mixture_starts(s: np.ndarray, n: np.ndarray, w: np.ndarray):
    """Starting points: split the cells at pass rates 1/4, 1/2, 3/4 and moment-fit each side; plus two fixed tails."""
    y = s / n
    for cut in (0.25, 0.5, 0.75):
        low = y <= cut
        if w[low].sum() > 0 and w[~low].sum() > 0:
            yield (w[low].sum() / w.sum(), _moments(s[low], n[low], w[low]),
                   _moments(s[~low], n[~low], w[~low]))
    yield 0.5, (0.5, 4.0), (4.0, 0.5)


def _fit_mixture_cells(s: np.ndarray, n: np.ndarray, wt: np.ndarray) -> dict:
    """ML two-component mixture for weighted (successes, trials) cells: the core of :func:`fit_mixture`."""

    def unpack(x):
        return 1.0 / (1.0 + np.exp(-np.clip(x[0], *W_BOUNDS))), *np.exp(np.clip(x[1:], *LOG_BOUNDS))

    def nll(x):
        w, a1, b1, a2, b2 = unpack(x)
        lp = np.logaddexp(np.log(w) + stats.betabinom.logpmf(s, n, a1, b1),
                          np.log1p(-w) + stats.betabinom.logpmf(s, n, a2, b2))
        return -_loglik(wt, lp)

    best = None
    lo, hi = [W_BOUNDS[0]] + [LOG_BOUNDS[0]] * 4, [W_BOUNDS[1]] + [LOG_BOUNDS[1]] * 4
    starts = [np.clip(np.concatenate([[np.log(w0 / (1 - w0))], np.log(c1), np.log(c2)]), lo, hi)
              for w0, c1, c2 in _mixture_starts(s, n, wt)]
    for x0 in sorted(starts, key=nll)[:MIXTURE_STARTS]:  # climb from the most likely starting points only
        res = optimize.minimize(nll, x0, method="BFGS", options={"gtol": _gtol(wt)})
        if best is None or res.fun < best.fun:
            best = res
    x = np.clip(best.x, lo, hi)
    w, a1, b1, a2, b2 = unpack(x)
    if a1 / (a1 + b1) > a2 / (a2 + b2):  # order the components by mean
        x = np.concatenate([[-x[0]], x[3:5], x[1:3]])
        w, a1, b1, a2, b2 = unpack(x)
    jac = np.diag([w * (1 - w), a1, b1, a2, b2])
    cov = _covariance(nll, x, jac)
    se = np.sqrt(np.where(np.diag(cov) >= 0, np.diag(cov), np.nan))
    return {
        "w": float(w),
        "components": [{"alpha": float(a1), "beta": float(b1), "mean": float(a1 / (a1 + b1))},
                       {"alpha": float(a2), "beta": float(b2), "mean": float(a2 / (a2 + b2))}],
        "se": dict(zip(("w", "alpha1", "beta1", "alpha2", "beta2"), map(float, se))),
        "loglik": -float(best.fun), "n_groups": int(wt.sum()),
    }


def fit_mixture(counts, K: int) -> dict:
    """ML two-component beta-binomial mixture of cell counts (direct ML, several starts).

    Returns ``w`` (weight of the lower-mean component), ``components`` (``[{alpha, beta, mean}, ...]``
    low then high), ``se`` (``{w, alpha1, beta1, alpha2, beta2}``, NaN where the information matrix
    is singular, e.g. when the components coincide), ``loglik``, ``cell_probs``,
    ``predicted_all_pass`` / ``predicted_all_fail`` and ``gof``. Raises InputError for K < MIXTURE_MIN_K.
    """
    counts = _check_counts(counts, K)
    if K < MIXTURE_MIN_K:
        raise InputError(f"a two-component mixture has 5 parameters: it needs K >= {MIXTURE_MIN_K} "
                         f"(this run has K = {K})")
    s = np.arange(K + 1)
    out = _fit_mixture_cells(s.astype(float), np.full(K + 1, float(K)), counts)
    (c1, c2), w = out["components"], out["w"]
    probs = mixture_pmf(K, w, c1["alpha"], c1["beta"], c2["alpha"], c2["beta"])
    out.update(cell_probs=probs, predicted_all_pass=float(probs[K]), predicted_all_fail=float(probs[0]),
               gof=gof(counts, probs, 5))
    return out


def bic(loglik: float, n_params: int, n: int) -> float:
    """Bayesian information criterion, -2 loglik + k ln n (lower is better)."""
    return -2.0 * loglik + n_params * np.log(n)
