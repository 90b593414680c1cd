r"""Doctor honesty: refuse a "population" the record cannot identify, and intervals that hold when prompts repeat.

**How many distinct prompts a population fit needs.** The doctor fits p ~ Beta(alpha, beta) over
*prompts*. Its mean is identified by the rollouts, but its spread (alpha + beta, equivalently the
between-prompt variance Var(p)) only by how prompts differ from one another: with P distinct prompts
the between-prompt variance is estimated from P prompt means, a sample variance on P - 1 degrees of
freedom, whose relative standard error is sqrt(2 / (P - 1)) even when every prompt's pass rate were
known exactly (normal theory; rollout noise only adds to it). A record of one prompt has 0 degrees of
freedom: its "population" spread is the within-prompt noise mistaken for prompts (a 40-group record of
one prompt got Beta(27.9 +- 199, 1244 +- 8873) and a negative between-prompt share). The doctor asks for
a relative standard error of at most :data:`MAX_REL_SE` = 1/2, i.e. P - 1 >= 2 / MAX_REL_SE^2 = 8:
:data:`MIN_PROMPTS` = 9 distinct prompts, and refuses fewer with one line saying so
(:func:`check_population`).

**Intervals with repeated prompts.** The beta-binomial fit treats every group as independent. Where a
prompt is drawn r times its r groups share one pass rate, so the likelihood counts the same prompt r
times and the Fisher standard errors are too small (over 100 simulated replicates with repeats the 95%
intervals covered the true alpha 72% and beta 70% of the time). The point estimate stays consistent
(each group is still beta-binomial marginally), so only the spread of the estimate needs repair:
a **cluster (prompt-level) bootstrap** (Davison & Hinkley 1997, section 3.8; Field & Welsh 2007):
prompts are resampled with replacement, all their groups with them (multinomial weights on each
prompt's cell counts, so a resample costs a (K + 1)-vector), and each resample is refitted by ML with
:func:`fit_beta_batch` (Newton's method on all resamples at once, in log-parameters). The interval is
normal on the log scale, log alpha-hat +- z sd*, with sd* the bootstrap standard deviation of log alpha
times sqrt(P / (P - 1)) (the usual small-sample factor of cluster-robust variances over P prompts), mapped
back (``interval_alpha``, ``interval_beta``; ``se_alpha`` = alpha-hat sd*, the delta method). The percentile
interval was tried first and under-covers (92.5% / 91% for alpha / beta over 400 replicates of 100 prompts
drawn 10 times, against 94% / 94% for this one; 30 prompts: 92.5% / 91% against 94.5% / 95.5%). Without repeats the
cluster bootstrap is the ordinary bootstrap over groups and agrees with the Fisher intervals.
Deviation: the groups' steps are ignored (drift of a prompt's pass rate between its draws is part of
what the resampling carries along, not modelled).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import InputError
from .fit import LOG_BOUNDS
from .groups import RunGroups

__all__ = ["MAX_REL_SE", "MIN_PROMPTS", "N_BOOT", "check_population", "fit_beta_batch", "prompt_cells",
           "bootstrap_resamples", "cluster_bootstrap"]

MAX_REL_SE = 0.5  #: the largest relative standard error of the between-prompt variance the doctor accepts
MIN_PROMPTS = 1 + math.ceil(2.0 / MAX_REL_SE**2)  #: distinct prompts a population fit needs (9; module docstring)
N_BOOT = 200  #: cluster-bootstrap resamples
LEVEL = 0.95  #: coverage of the intervals
UNIDENTIFIED_RATIO = 100.0  #: an interval wider than this factor (hi / lo) is called unidentified in the report
_CHUNK = 25  #: resamples drawn at a time (bounds memory: 25 x prompts weights)
_NEWTON_ITERS = 60
_TOL = 1e-9


def check_population(groups: RunGroups) -> int:
    """The number of distinct prompts drawn; InputError (one line) when it is below :data:`MIN_PROMPTS`."""
    distinct = int(np.unique(groups.prompt_id).size)
    if distinct < MIN_PROMPTS:
        raise InputError(f"the record draws {distinct} distinct prompt{'s' if distinct != 1 else ''}: too few to fit "
                         f"a population of prompts (the between-prompt spread needs at least {MIN_PROMPTS} distinct "
                         f"prompts, {MIN_PROMPTS - 1} degrees of freedom); its groups describe "
                         f"{'that prompt' if distinct == 1 else 'those prompts'}, not a population")
    return distinct


def _loglik(counts: np.ndarray, K: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Beta-binomial log-likelihood (without the binomial coefficients) of cell counts (M, K + 1)."""
    s = np.arange(K + 1)
    a_, b_ = a[:, None], b[:, None]
    cell = (special.gammaln(s + a_) + special.gammaln(K - s + b_) - special.gammaln(K + a_ + b_)
            - special.gammaln(a_) - special.gammaln(b_) + special.gammaln(a_ + b_))
    return np.sum(counts * cell, axis=1)


def _moment_starts(counts: np.ndarray, K: int, n: np.ndarray) -> np.ndarray:
    """:func:`.fit.moment_start` of every row of ``counts`` at once: (M, 2) starting (alpha, beta)."""
    y = np.arange(K + 1) / K
    m = np.clip(counts @ y / n, 1e-3, 1 - 1e-3)
    var_y = np.sum(counts * (y[None, :] - m[:, None]) ** 2, axis=1) / n
    v, noise = m * (1 - m), m * (1 - m) / K
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.clip(np.where(v > noise, (var_y - noise) / (v - noise), 0.5), 1e-3, 0.95)
    total = 1.0 / tau - 1.0
    return np.stack([m * total, (1 - m) * total], axis=1)


def fit_beta_batch(counts, K: int) -> tuple[np.ndarray, np.ndarray]:
    """ML (alpha, beta) of many beta-binomial cell-count vectors at once: ``counts`` (M, K + 1) -> two (M,) arrays.

    Newton's method in (log alpha, log beta) from the moment start, with the analytic gradient and Hessian
    (digamma / trigamma of s + alpha, K - s + beta, K + alpha + beta, alpha, beta, alpha + beta), steps capped
    at 1 in log units and halved until the likelihood does not fall; where the Hessian is not negative
    definite a gradient step is taken. Parameters are kept in :data:`~.fit.LOG_BOUNDS`, as :func:`.fit.fit_beta`;
    one held at a bound by its gradient is fixed there and the other is climbed alone (projected Newton).
    """
    counts = np.atleast_2d(np.asarray(counts, float))
    M = counts.shape[0]
    s = np.arange(K + 1)
    n = counts.sum(axis=1)
    x = np.clip(np.log(_moment_starts(counts, K, n)), *LOG_BOUNDS)
    ll = _loglik(counts, K, *np.exp(x).T)
    for _ in range(_NEWTON_ITERS):
        a, b = np.exp(x).T
        A, B = a[:, None], b[:, None]
        common = special.digamma(A + B) - special.digamma(K + A + B)  # (M, K+1) without the n_s weights
        da = np.sum(counts * (special.digamma(s + A) + common), axis=1) - n * special.digamma(a)
        db = np.sum(counts * (special.digamma(K - s + B) + common), axis=1) - n * special.digamma(b)
        tcommon = special.polygamma(1, A + B) - special.polygamma(1, K + A + B)
        dab = np.sum(counts * tcommon, axis=1)
        daa = np.sum(counts * (special.polygamma(1, s + A) + tcommon), axis=1) - n * special.polygamma(1, a)
        dbb = np.sum(counts * (special.polygamma(1, K - s + B) + tcommon), axis=1) - n * special.polygamma(1, b)
        g = np.stack([a * da, b * db], axis=1)  # gradient in log-parameters
        huu, hvv, huv = a * a * daa + a * da, b * b * dbb + b * db, a * b * dab
        # a parameter held at its bound by a gradient pointing outwards is fixed: Newton on the other one
        fixed = ((x <= LOG_BOUNDS[0] + 1e-12) & (g < 0)) | ((x >= LOG_BOUNDS[1] - 1e-12) & (g > 0))
        g = np.where(fixed, 0.0, g)
        huv = np.where(fixed.any(axis=1), 0.0, huv)
        huu, hvv = np.where(fixed[:, 0], -1.0, huu), np.where(fixed[:, 1], -1.0, hvv)
        det = huu * hvv - huv**2
        negdef = (huu < 0) & (det > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = -np.stack([(hvv * g[:, 0] - huv * g[:, 1]) / det, (huu * g[:, 1] - huv * g[:, 0]) / det], axis=1)
        scale = np.maximum(np.abs(np.where(negdef[:, None], 0.0, g)).max(axis=1), 1.0)
        step = np.where(negdef[:, None], newton, g / scale[:, None])
        step = np.nan_to_num(step)
        size = np.abs(step).max(axis=1)
        step = step / np.maximum(size, 1.0)[:, None]
        t = np.ones(M)
        active = np.abs(g).max(axis=1) > _TOL * np.maximum(n, 1.0)
        if not active.any():
            break
        for _half in range(30):
            cand = np.clip(x + t[:, None] * step, *LOG_BOUNDS)
            ll_new = _loglik(counts, K, *np.exp(cand).T)
            ok = (ll_new >= ll - 1e-12 * np.abs(ll)) | ~active
            if ok.all():
                break
            t = np.where(ok, t, t / 2)
        x = np.where(active[:, None], cand, x)
        ll = np.where(active, ll_new, ll)
    a, b = np.exp(x).T
    return a, b


def prompt_cells(groups: RunGroups) -> np.ndarray:
    """(distinct prompts, K + 1): each drawn prompt's groups counted by successes (rows in prompt-id order)."""
    K = groups.K
    _, inv = np.unique(groups.prompt_id, return_inverse=True)
    P = int(inv.max()) + 1
    return np.bincount(inv * (K + 1) + groups.successes, minlength=P * (K + 1)).reshape(P, K + 1).astype(float)


def bootstrap_resamples(groups: RunGroups, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """The cluster bootstrap's resamples and their single-Beta ML fits (see the module docstring).

    Returns ``{cells, alpha, beta, prompts, draws}``: ``cells`` (n_boot, K + 1), the resampled groups' cell counts
    (P prompts drawn with replacement, all their groups with them); ``alpha``, ``beta`` (n_boot,), their
    :func:`fit_beta_batch` fits; ``prompts`` P; ``draws`` (P,), groups per distinct prompt. Other sections of the
    doctor refit their own models on the same ``cells`` (:mod:`.sampler_intervals`)."""
    cells = prompt_cells(groups)
    P = cells.shape[0]
    rng = np.random.default_rng(seed)
    resampled = []
    for start in range(0, n_boot, _CHUNK):  # chunks bound the memory: (chunk, P) weights at a time
        reps = min(_CHUNK, n_boot - start)
        pick = rng.integers(0, P, size=(reps, P)) + P * np.arange(reps)[:, None]  # P prompts drawn per resample
        resampled.append(np.bincount(pick.ravel(), minlength=reps * P).reshape(reps, P).astype(float) @ cells)
    boot = np.concatenate(resampled)
    a, b = fit_beta_batch(boot, groups.K)
    return {"cells": boot, "alpha": a, "beta": b, "prompts": int(P), "draws": cells.sum(axis=1)}


def cluster_bootstrap(groups: RunGroups, alpha: float, beta: float, n_boot: int = N_BOOT, seed: int = 0,
                      level: float = LEVEL, resamples: dict | None = None) -> dict:
    """Prompt-level bootstrap of the single-Beta fit (see the module docstring).

    ``alpha``, ``beta``: the ML fit of all groups, the intervals' centre (on the log scale); ``resamples``:
    :func:`bootstrap_resamples`' result for the same groups when the caller has it (else drawn here with
    ``n_boot`` and ``seed``). Returns ``{method, prompts, repeated_prompts, max_draws, n_boot, se_alpha, se_beta,
    interval_alpha, interval_beta, level}``.
    """
    res = bootstrap_resamples(groups, n_boot, seed) if resamples is None else resamples
    P, draws, a, b = res["prompts"], res["draws"], res["alpha"], res["beta"]
    n_boot = int(a.size)
    z = float(special.ndtri(0.5 + level / 2))
    adj = math.sqrt(P / (P - 1)) if P > 1 else float("nan")  # the small-sample factor of cluster-robust variances
    out = {"method": f"cluster bootstrap over prompts ({n_boot} resamples; normal interval on the log scale)",
           "prompts": int(P), "repeated_prompts": int(np.sum(draws > 1)), "max_draws": int(draws.max()),
           "n_boot": int(n_boot), "level": level}
    for name, hat, boot in (("alpha", alpha, a), ("beta", beta, b)):
        sd = float(np.std(np.log(boot), ddof=1)) * adj
        out[f"se_{name}"] = hat * sd  # delta method from the log scale
        out[f"interval_{name}"] = [hat * math.exp(-z * sd), hat * math.exp(z * sd)]
    return out
