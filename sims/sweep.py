r"""The decay curve: the share of groups with a gradient at many training progresses, in one pass.

:func:`useful_share_curve` gives, for each t in ``ts``, the two numbers
:func:`sims.scenario.evaluate` reports as ``useful_share_expected`` and ``useful_share_realised``
for ``Scenario(progress=t, ...)`` on the same population, computed for every t at once (numpy over
a T x N table) instead of T calls::

    p_t[x]      = p_0[x] ** (1 / (1 + g t))                      (sims.decay)
    q_t[x]      = p_t[x], or the Beta(p_t (1/rho - 1), (1 - p_t)(1/rho - 1)) quantile at the
                  prompt's latent uniform when rho > 0           (sims.scenario.shared_rate)
    k_t[x]      = #{i < K : u[x, i] < q_t[x]}                    (the population's rollout uniforms)
    kept_t[x]   = lo <= p_t[x] <= hi  (every prompt without a band)
    expected(t) = mean over kept x of P(useful | p_t[x], K, rho) (sims.outcomes)
    realised(t) = mean over kept x of [0 < k_t[x] < K]           (never for K = 1)

Both are NaN at a t where the band keeps no prompt. ``tests/test_sweep.py`` checks the curve
against ``evaluate`` at every t.
"""

from __future__ import annotations

import numpy as np

from . import decay
from ._checks import as_group_size, as_rho, band as check_band
from .outcomes import outcome_probabilities
from .population import Population
from .scenario import shared_rate

__all__ = ["useful_share_curve"]

_CHUNK_CELLS = 4_000_000  #: at most this many (t, prompt, rollout) comparisons at once, to bound memory


def useful_share_curve(population: Population, ts, K: int, rho: float = 0.0, band=None,
                       gain: float = decay.DEFAULT_GAIN, realised: bool = True) -> dict[str, np.ndarray]:
    """``{"t", "expected", "realised"}``: the useful share at each progress in ``ts`` (see the module docstring).

    Parameters
    ----------
    population : Population
        The prompts (pass rates, rollout uniforms, latent uniforms).
    ts : array_like
        Training progresses in [0, 1] (1-D).
    K : int
        Group size, 1 <= K <= the population's uniform block.
    rho : float
        Rollout correlation in [0, 1).
    band : (lo, hi) or None
        The difficulty filter's band (shares over the kept prompts), or None for every prompt.
    gain : float
        The decay gain g.
    realised : bool
        False: the expected share only (``realised`` all NaN; the rollout comparisons, most of the cost, skipped).

    Raises InputError for a t outside [0, 1], a bad K, rho or band.
    """
    t = np.atleast_1d(decay._progress(ts)).astype(float)
    K = int(as_group_size(K))
    rho = float(as_rho(rho))
    p_t = decay.pass_rate_at(population.pass_rates[None, :], t[:, None], gain)  # T x N
    if realised:
        latent = np.broadcast_to(population.latent, p_t.shape) if rho > 0 else None
        q = shared_rate(p_t, latent, rho)
        u = population.uniforms(K)  # N x K
        k = np.empty(p_t.shape, np.int64)
        rows = max(1, _CHUNK_CELLS // max(1, u.size))
        for i in range(0, len(t), rows):
            k[i:i + rows] = (u[None, :, :] < q[i:i + rows, :, None]).sum(axis=2)
        mixed = (k > 0) & (k < K) if K > 1 else np.zeros(k.shape, bool)
    if band is None:
        kept = np.ones(p_t.shape, bool)
    else:
        lo, hi = check_band(*band)
        kept = (p_t >= lo) & (p_t <= hi)
    n_kept = kept.sum(axis=1)
    useful = outcome_probabilities(p_t, K, rho)["p_useful"]
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(n_kept > 0, np.sum(np.where(kept, useful, 0.0), axis=1) / n_kept, np.nan)
        real = np.where(n_kept > 0, np.sum(mixed & kept, axis=1) / n_kept, np.nan) if realised else \
            np.full(len(t), np.nan)
    return {"t": t, "expected": expected, "realised": real}
