r"""Intervals on the doctor's samplers table from the fit's uncertainty: the comparison re-run on bootstrap populations.

**The populations.** The first :data:`N_RESAMPLES` of the cluster bootstrap's resamples
(:func:`.honesty.bootstrap_resamples`: prompts drawn with replacement, all their groups with them; the same
resamples as the fit's intervals, not drawn again) each give a population of the model the doctor prefers:

* *single Beta*: the resample's own ML fit (``alpha``, ``beta`` of :func:`.honesty.fit_beta_batch`, already
  computed for the fit's intervals);
* *two-component mixture*: the resample's own ML fit, climbed from the full fit theta-hat (logit w, log a1,
  log b1, log a2, log b2, :func:`.fit.fit_mixture`'s parameters) by Newton's method on all resamples at once
  (:func:`mixture_refits`: gradient and Hessian of sum_s n*_s log P_s(theta) by central differences, the
  Hessian's eigenvalues made negative (saddle-free Newton), steps capped at 1 in those units and halved until
  the likelihood does not fall; stops below :data:`_STOP`). Started at theta-hat it finds the resample's
  maximum nearest to the full fit, which :func:`.fit.fit_mixture`'s several BFGS starts find too (checked
  in the tests) at about 0.6 s a resample; these cost a few ms all together. A resample that has not converged
  in :data:`NEWTON_ITERS` iterations is left out (``populations`` counts the rest).

**The interval.** For each population the comparison (:func:`grpo_lab.sims.samplers.compare`, same settings
as the table) runs on :data:`PROMPTS` mid-quantile pass rates; a figure's interval is the hull of (a) the table's
value +- z sqrt(sd*^2 P / (P - 1) + mc_se^2), sd* the figure's standard deviation over the populations, P the
distinct prompts (the cluster bootstrap's normal interval, :mod:`.honesty`, on the figure's own scale; mc_se the
point's own Monte Carlo error for a simulated figure) and (b) the percentile interval of the populations' values
shifted by the table's value minus the fitted population's value at :data:`PROMPTS` prompts; clipped to the
figure's range (shares to [0, 1], expiry to [0, HORIZON]). The percentile part matters where a figure jumps: DAPO's
expiry is 0 ("already below") on some populations and about 0.8 on the rest when its rate at t = 0 sits at the
threshold; the normal interval alone covered its truth in 18 of 40 replicates there, the hull in 38 of 40 (``benchmarks/doctor_sampler_coverage.py``). Where more than 2.5% of the populations put an expiry beyond the
search's horizon the interval's upper end is None (beyond it); where a figure is undefined on more than 2.5%
of them the interval is None. The simulated samplers keep their common random numbers across populations
(the same seed), so their Monte Carlo error adds little to sd*; it is reported beside each simulated figure
(``mc_se``). With :data:`N_RESAMPLES` = 40 the sd* has a relative standard error of about 1 / sqrt(2 x 39) =
11% (normal theory).

Deviation: the interval carries the population's uncertainty only, at the table's fixed settings and decay
model; not the drift of the run (the stall forecast's section has that).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["N_RESAMPLES", "PROMPTS", "FIGURES", "bootstrap_populations", "mixture_refits",
           "interval", "row_intervals"]

N_RESAMPLES = 40  #: bootstrap populations the comparison is re-run on
PROMPTS = 1000  #: mid-quantile pass rates per bootstrap population (the table itself uses up to 20,000)
NEWTON_ITERS = 40  #: most Newton iterations of a mixture refit
_STOP = 1e-6  #: a refit stops when its Newton step is this small (log / logit units)
LEVEL = 0.95
_H = 1e-4  #: central-difference step (log / logit units)
#: figure -> (low, high) range it is clipped to (None: unbounded; "horizon": the expiry search's HORIZON)
FIGURES = {"useful_per_1000": (0.0, None), "rollouts_per_useful": (0.0, None), "never_trained": (0.0, 1.0),
           "expiry_t": (0.0, "horizon"), "expiry_shift": (None, None), "expiry_shift_steps": (None, None)}


def _mixture_logp(theta: np.ndarray, K: int) -> np.ndarray:
    """log P(S = s), s = 0..K, of the two-component beta-binomial mixture at parameter rows ``theta`` (M, 5):
    (logit w, log a1, log b1, log a2, log b2) -> (M, K + 1)."""
    s = np.arange(K + 1)
    lw = -np.logaddexp(0.0, -theta[:, :1])  # log w
    lw1 = -np.logaddexp(0.0, theta[:, :1])  # log (1 - w)

    def comp(la, lb):
        a, b = np.exp(la), np.exp(lb)
        return (special.gammaln(s + a) + special.gammaln(K - s + b) - special.gammaln(K + a + b)
                - special.gammaln(a) - special.gammaln(b) + special.gammaln(a + b)
                + special.gammaln(K + 1) - special.gammaln(s + 1) - special.gammaln(K - s + 1))

    return np.logaddexp(lw + comp(theta[:, 1:2], theta[:, 2:3]), lw1 + comp(theta[:, 3:4], theta[:, 4:5]))


def _gradients(theta: np.ndarray, K: int) -> np.ndarray:
    """d log P_s / d theta at each row: (M, K + 1, 5), central differences."""
    out = np.empty((theta.shape[0], K + 1, 5))
    for i in range(5):
        e = np.zeros(5)
        e[i] = _H
        out[:, :, i] = (_mixture_logp(theta + e, K) - _mixture_logp(theta - e, K)) / (2 * _H)
    return out


def _hessians(theta: np.ndarray, K: int) -> np.ndarray:
    """d2 log P_s / d theta2 at each row: (M, K + 1, 5, 5), central differences of :func:`_gradients`."""
    out = np.empty((theta.shape[0], K + 1, 5, 5))
    for i in range(5):
        e = np.zeros(5)
        e[i] = _H
        out[:, :, i, :] = (_gradients(theta + e, K) - _gradients(theta - e, K)) / (2 * _H)
    return (out + np.swapaxes(out, 2, 3)) / 2


def mixture_refits(cells: np.ndarray, K: int, w: float, c1: tuple, c2: tuple, iters: int = NEWTON_ITERS):
    """ML mixture fits of many resampled cell-count vectors at once, climbed from the full fit (module docstring).

    ``cells`` (M, K + 1); ``w``, ``c1`` = (a1, b1), ``c2`` = (a2, b2): the full fit. Returns ((M, 5) rows of
    (w, a1, b1, a2, b2), (M,) converged)."""
    w = min(max(float(w), 1e-12), 1 - 1e-12)
    hat = np.array([math.log(w / (1 - w)), *np.log(c1), *np.log(c2)], float)
    M = cells.shape[0]
    theta = np.repeat(hat[None, :], M, axis=0)
    ll = np.sum(cells * _mixture_logp(theta, K), axis=1)
    done = np.zeros(M, bool)
    for _ in range(iters):
        g = np.einsum("ms,msi->mi", cells, _gradients(theta, K))
        H = np.einsum("ms,msij->mij", cells, _hessians(theta, K))
        lam, V = np.linalg.eigh(H)
        lam = -np.maximum(np.abs(lam), 1e-8 * np.maximum(cells.sum(axis=1), 1.0)[:, None])  # saddle-free Newton
        step = -np.einsum("mij,mj->mi", V, np.einsum("mji,mj->mi", V, g) / lam)
        step = step / np.maximum(np.abs(step).max(axis=1), 1.0)[:, None]  # at most 1 in log / logit units
        done |= np.abs(step).max(axis=1) < _STOP
        if done.all():
            break
        t = np.ones(M)
        for _half in range(30):
            cand = theta + t[:, None] * step
            ll_new = np.sum(cells * _mixture_logp(cand, K), axis=1)
            better = (ll_new >= ll - 1e-12 * np.abs(ll)) | done
            if better.all():
                break
            t = np.where(better, t, t / 2)
        theta = np.where(done[:, None], theta, cand)
        ll = np.where(done, ll, ll_new)
    ok = done & np.all(np.isfinite(theta), axis=1)
    rows = np.column_stack([special.expit(theta[:, 0]), np.exp(theta[:, 1:])])
    return rows, ok


def bootstrap_populations(model: str, population, resamples: dict, K: int, n: int = N_RESAMPLES) -> tuple[list, int]:
    """(populations, resamples used): the first ``n`` resamples' populations of ``model`` ("beta" or "mixture";
    ``population`` the full fit as the samplers section takes it) (module docstring)."""
    if model == "mixture":
        (w, a1, b1), (_, a2, b2) = population
        rows, ok = mixture_refits(resamples["cells"][:n], K, w, (a1, b1), (a2, b2))
        pops = [[(r[0], r[1], r[2]), (1 - r[0], r[3], r[4])] for r in rows[ok]]
        return pops, len(pops)
    a, b = resamples["alpha"][:n], resamples["beta"][:n]
    return [(float(x), float(y)) for x, y in zip(a, b)], int(min(n, a.size))


def interval(point, values, prompts: int, bounds=(None, None), level: float = LEVEL, centre=None, mc_se=None):
    """The hull of the normal interval ``point`` +- z sqrt((sd(values) sqrt(P / (P - 1)))^2 + mc_se^2) and the
    percentile interval of ``values`` - ``centre`` + ``point``, clipped to ``bounds`` (module docstring).
    ``values``: the figure on each bootstrap population, None / NaN where undefined and +inf beyond the horizon;
    ``centre``: the figure on the fitted population at the bootstrap's prompt count (default ``point``);
    ``mc_se``: the point's Monte Carlo standard error (simulated figures). Returns [lo, hi] (hi None: beyond the
    horizon) or None."""
    if point is None or not np.isfinite(point):
        return None
    centre = point if centre is None or not np.isfinite(centre) else centre
    v = np.array([np.nan if x is None else x for x in values], float)
    tail = (1 - level) / 2
    if v.size < 2 or np.mean(np.isnan(v)) > tail:
        return None
    beyond = np.mean(np.isinf(v)) > tail
    v = v[np.isfinite(v)]
    if v.size < 2:
        return None
    z = float(special.ndtri(0.5 + level / 2))
    sd = float(np.std(v, ddof=1)) * (math.sqrt(prompts / (prompts - 1)) if prompts > 1 else float("nan"))
    se = float(mc_se) if mc_se is not None and np.isfinite(mc_se) else 0.0
    half = z * math.sqrt(sd * sd + se * se)
    q_lo, q_hi = np.quantile(v - centre + point, [tail, 1 - tail])
    lo, hi = bounds
    low, high = min(point - half, q_lo), max(point + half, q_hi)
    low = low if lo is None else max(lo, low)
    high = high if hi is None else min(hi, high)
    return [float(low), None if beyond else float(high)]


def row_intervals(rows: list[dict], boot_rows: list[list[dict]], prompts: int, centre_rows=None) -> None:
    """Adds ``interval`` ({figure: [lo, hi] or None}) to each of ``rows`` from the same rows of the comparisons
    on the bootstrap populations (``boot_rows``, one list per population; ``centre_rows``: the comparison on the
    fitted population at their prompt count, default ``rows``); an expiry beyond the horizon (None in a
    comparison) counts as +inf."""
    from ..samplers.compare import HORIZON  # here: grpo_lab.sims.samplers imports this package

    for i, row in enumerate(rows):
        out = {}
        for key, bounds in FIGURES.items():
            bounds = tuple(HORIZON if b == "horizon" else b for b in bounds)
            vals = [b[i][key] for b in boot_rows]
            if key == "expiry_t":
                vals = [math.inf if x is None else x for x in vals]
            elif key.startswith("expiry_shift"):
                vals = [math.inf if x is None and b[i]["expiry_t"] is None else x for x, b in zip(vals, boot_rows)]
            c = (centre_rows or rows)[i][key]
            out[key] = interval(row[key], vals, prompts, bounds, centre=math.inf if c is None else c,
                                mc_se=row.get("mc_se", {}).get(key))
        row["interval"] = out
