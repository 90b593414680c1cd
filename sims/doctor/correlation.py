r"""Within-prompt correlation, where the same prompt was drawn more than once.

Model (the core's correlated rollouts, :mod:`grpo_lab.sims.outcomes`): prompt x has
pass rate p_x ~ F with mean m; each group drawn for x has its own rate
q ~ Beta(p_x (1/rho - 1), (1 - p_x)(1/rho - 1)) and its K rollouts pass
independently given q. Then, with v = m (1 - m):

* two rollouts of **different** groups of the same prompt covary by
  ``C_b = Var(p_x)``, so ``tau = C_b / v`` is the share of the rollout variance
  that lies between prompts;
* two rollouts of the **same** group covary by ``C_w = Var(p_x) + rho E[p_x (1 - p_x)]``,
  so their correlation is ``icc = C_w / v = tau + rho (1 - tau)``;
* hence ``rho = (icc - tau) / (1 - tau)``: correlation within a group beyond what
  the prompt's own pass rate explains (rho = 0: independent rollouts).

Moment estimates, with S the successes of a group and y = S / K::

    m   = mean y
    C_w = mean[S (S - 1) / (K (K - 1))] - m^2
    C_b = mean over consecutive draws (y_a, y_b) of one prompt of y_a y_b - m^2

Consecutive draws are used so that the prompt's own drift during training
changes p_x as little as possible between the two groups (what drift remains
biases tau down and rho up). The prompt-level Beta matching m and tau is
``a = m (1/tau - 1)``, ``b = (1 - m)(1/tau - 1)``. Standard errors: a cluster
bootstrap over prompts (prompts resampled with replacement, all their groups
with them), :data:`N_BOOT` resamples.
"""

from __future__ import annotations

import warnings

import numpy as np

from .groups import RunGroups

__all__ = ["N_BOOT", "within_prompt_correlation"]

N_BOOT = 200  #: bootstrap resamples for the standard errors
_CHUNK = 25  #: resamples per matrix product (bounds memory at 100,000 prompts)
MIN_PAIRS = 20  #: fewer repeated draws than this: no estimate


def _per_prompt_sums(groups: RunGroups) -> np.ndarray:
    """(n_prompts, 6): groups, sum y, sum S(S-1)/(K(K-1)), pairs, sum y_a y_b, (unused) per prompt."""
    K, P = groups.K, groups.n_prompts
    pid = groups.prompt_id
    y = groups.successes / K
    ss = groups.successes * (groups.successes - 1) / (K * (K - 1))
    order = np.lexsort((np.arange(groups.n), groups.step, pid))
    po, yo = pid[order], y[order]
    same = po[1:] == po[:-1]
    out = np.zeros((P, 5))
    out[:, 0] = np.bincount(pid, minlength=P)
    out[:, 1] = np.bincount(pid, weights=y, minlength=P)
    out[:, 2] = np.bincount(pid, weights=ss, minlength=P)
    out[:, 3] = np.bincount(po[1:][same], minlength=P)
    out[:, 4] = np.bincount(po[1:][same], weights=(yo[1:] * yo[:-1])[same], minlength=P)
    return out


def _stats(sums: np.ndarray) -> np.ndarray:
    """(…, 5) summed columns -> (…, 6): m, tau, icc, rho, a, b."""
    n, sy, sss, npair, sprod = np.moveaxis(sums, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = sy / n
        v = m * (1 - m)
        tau = (sprod / npair - m**2) / v
        icc = (sss / n - m**2) / v
        rho = (icc - tau) / (1 - tau)
        scale = 1.0 / tau - 1.0
        a, b = m * scale, (1 - m) * scale
    return np.stack([m, tau, icc, rho, np.where(tau > 0, a, np.nan), np.where(tau > 0, b, np.nan)], axis=-1)


def within_prompt_correlation(groups: RunGroups, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """Estimate tau, icc, rho and the prompt-level Beta (see the module docstring), with bootstrap SEs.

    Returns ``{available: False, reason}`` when fewer than :data:`MIN_PAIRS` prompts were drawn twice;
    otherwise ``available``, ``pairs`` (consecutive repeated draws), ``mean``, ``tau``, ``icc``, ``rho``,
    ``prompt_alpha``, ``prompt_beta`` and ``se`` (the same keys).
    """
    sums = _per_prompt_sums(groups)
    pairs = int(sums[:, 3].sum())
    if pairs < MIN_PAIRS:
        return {"available": False, "pairs": pairs,
                "reason": f"only {pairs} repeated draws of a prompt (need {MIN_PAIRS})"}
    keys = ("mean", "tau", "icc", "rho", "prompt_alpha", "prompt_beta")
    est = _stats(sums.sum(axis=0))
    seen = sums[sums[:, 0] > 0]
    rng = np.random.default_rng(seed)
    boots = []
    for start in range(0, n_boot, _CHUNK):
        reps = min(_CHUNK, n_boot - start)
        w = rng.multinomial(len(seen), np.full(len(seen), 1.0 / len(seen)), size=reps).astype(float)
        boots.append(_stats(w @ seen))
    boots = np.concatenate(boots)
    with warnings.catch_warnings():  # a statistic undefined in every resample (e.g. m = 0) has no SE: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.nanstd(boots, axis=0, ddof=1)
    return {"available": True, "pairs": pairs, **dict(zip(keys, map(float, est))),
            "se": dict(zip(keys, map(float, se)))}
