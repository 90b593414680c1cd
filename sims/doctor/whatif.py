r"""What-ifs on a run's fitted population, through the core's closed forms only.

A population is a single Beta(alpha, beta) or a mixture ``[(weight, alpha, beta), ...]``
of pass rates; rollouts pass independently given the pass rate. Every number
comes from the core:

* effective group rate at K = 1 - D_real and rollouts per useful group =
  K / (1 - D_real), with D_real = E[P(all pass)] + E[P(all fail)] from
  :func:`grpo_lab.sims.population.beta_degeneracy` (exact Beta-function forms),
  weighted over the mixture's components;
* DAPO dynamic sampling: expected rollout amplification
  :func:`grpo_lab.sims.dynamic_sampling.rollout_amplification` (1 / (1 - D)) and
  its 95th percentile for a batch of B groups: the fewest refill rounds R with
  :func:`~grpo_lab.sims.dynamic_sampling.p_batch_not_full` (D, B, R) <= 5%
  (R rounds generate R B groups for the B kept, so R is the amplification);
* a difficulty band [lo, hi]: the kept share P(lo <= p <= hi) and the effective
  rate among kept prompts, E[P(useful) | band];
* estimator coverage: E[:func:`grpo_lab.sims.advantages.coverage` (p, K, estimator)],
  the share of groups to which each estimator gives any non-zero advantage.

Expectations that have no closed form (the band, coverage) are averages over
:data:`QUANTILE_POINTS` mid-quantiles of each component, ``ppf((i + 1/2) / n)``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..advantages import ESTIMATORS, coverage
from ..dynamic_sampling import p_batch_not_full, rollout_amplification
from ..outcomes import p_useful
from ..population import beta_degeneracy
from ..scenario import DEFAULT_BAND

__all__ = ["WHAT_IF_K", "DEFAULT_BAND", "DAPO_PERCENTILE", "QUANTILE_POINTS", "as_components", "what_if_K",
           "dapo", "band", "estimator_coverage", "what_ifs"]

WHAT_IF_K = (4, 8, 16, 32, 64)  #: group sizes the what-if table covers
DAPO_PERCENTILE = 0.95  #: the quantile of the refill rounds reported beside the mean
MAX_ROUNDS = 10_000  #: refill rounds searched for that quantile; beyond it: reported as None
QUANTILE_POINTS = 4000  #: mid-quantiles per component for expectations without a closed form


def as_components(population) -> list[tuple[float, float, float]]:
    """``(alpha, beta)`` or ``[(w, alpha, beta), ...]`` -> normalised ``[(w, alpha, beta), ...]``."""
    if len(population) == 2 and np.isscalar(population[0]):
        return [(1.0, float(population[0]), float(population[1]))]
    comps = [(float(w), float(a), float(b)) for w, a, b in population]
    total = sum(w for w, _, _ in comps)
    return [(w / total, a, b) for w, a, b in comps]


def _outcomes(comps, K: int) -> dict:
    parts = [beta_degeneracy(a, b, K) for _, a, b in comps]
    return {k: sum(w * p[k] for (w, _, _), p in zip(comps, parts)) for k in ("all_pass", "all_fail", "d_real")}


def _grid(comps):
    """(p, weight) mid-quantile points of the mixture."""
    u = (np.arange(QUANTILE_POINTS) + 0.5) / QUANTILE_POINTS
    p = np.concatenate([stats.beta.ppf(u, a, b) for _, a, b in comps])
    wt = np.concatenate([np.full(QUANTILE_POINTS, w / QUANTILE_POINTS) for w, _, _ in comps])
    return np.clip(p, 0.0, 1.0), wt


def what_if_K(population, Ks=WHAT_IF_K) -> list[dict]:
    """``[{K, all_pass, all_fail, effective_group_rate, rollouts_per_useful_group}, ...]`` for each K."""
    comps = as_components(population)
    rows = []
    for K in Ks:
        o = _outcomes(comps, int(K))
        useful = 1.0 - o["d_real"]
        rows.append({"K": int(K), "all_pass": o["all_pass"], "all_fail": o["all_fail"],
                     "effective_group_rate": useful,
                     "rollouts_per_useful_group": int(K) / useful if useful > 0 else float("nan")})
    return rows


def _rounds_quantile(d: float, batch: int, q: float = DAPO_PERCENTILE) -> int | None:
    """Fewest R with P(batch not full after R rounds) <= 1 - q (doubling, then bisection)."""
    target = 1.0 - q
    hi = 1
    while p_batch_not_full(d, batch, hi) > target:
        hi *= 2
        if hi > MAX_ROUNDS:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if p_batch_not_full(d, batch, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def dapo(population, K: int, batch: int) -> dict:
    """DAPO dynamic sampling at group size K for batches of ``batch`` groups (see the module docstring)."""
    d = _outcomes(as_components(population), int(K))["d_real"]
    return {"K": int(K), "batch_groups": int(batch), "degeneracy": d,
            "amplification_expected": float(rollout_amplification(min(d, 1.0))),
            "amplification_p95": _rounds_quantile(min(d, 1.0), int(batch)), "percentile": DAPO_PERCENTILE}


def band(population, K: int, lo: float = DEFAULT_BAND[0], hi: float = DEFAULT_BAND[1]) -> dict:
    """Kept share P(lo <= p <= hi) (exact Beta cdf) and the effective rate among the kept prompts."""
    comps = as_components(population)
    kept = sum(w * (stats.beta.cdf(hi, a, b) - stats.beta.cdf(lo, a, b)) for w, a, b in comps)
    p, wt = _grid(comps)
    inside = (p >= lo) & (p <= hi)
    useful = p_useful(p, int(K))
    eff = float(np.sum(wt * useful * inside) / np.sum(wt * inside)) if np.any(inside) else float("nan")
    eff_all = float(np.sum(wt * useful))
    return {"K": int(K), "lo": float(lo), "hi": float(hi), "kept_share": float(kept),
            "effective_group_rate_kept": eff, "effective_group_rate_all": eff_all}


def estimator_coverage(population, K: int) -> dict[str, float]:
    """Share of groups each core estimator gives a non-zero advantage, E[coverage(p, K, estimator)]."""
    p, wt = _grid(as_components(population))
    return {name: float(np.sum(wt * coverage(p, int(K), name))) for name in ESTIMATORS}


def what_ifs(population, K: int, batch: int, band_lo: float = DEFAULT_BAND[0],
             band_hi: float = DEFAULT_BAND[1], Ks=WHAT_IF_K) -> dict:
    """All of the above for one population: ``{K_table, dapo (at each K), band, coverage}``."""
    return {"K_table": what_if_K(population, Ks),
            "dapo": [dapo(population, k, batch) for k in sorted({int(K), *Ks})],
            "band": band(population, K, band_lo, band_hi),
            "coverage": estimator_coverage(population, K)}
