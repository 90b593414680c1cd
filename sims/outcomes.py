r"""Group outcome probabilities for binary rewards.

A group is K rollouts of one prompt, each passing with probability p. The
group carries a GRPO gradient only when its rollouts disagree; a unanimous
group (all pass or all fail) has zero advantage under group-mean centring.

Independent rollouts (``rho = 0``)::

    P(all pass)  = p^K
    P(all fail)  = (1 - p)^K
    P(unanimous) = p^K + (1 - p)^K          (the degeneracy D(p, K))
    P(useful)    = 1 - p^K - (1 - p)^K

Correlated rollouts (``0 < rho < 1``): the number of successes is
beta-binomial with intra-group correlation ``rho``,
``alpha = p s``, ``beta = (1 - p) s`` with ``s = 1/rho - 1`` (:func:`betabinom_scale`);
P(all pass) and P(all fail) are its pmf at K and at 0 (``scipy.stats.betabinom``),
which are the products::

    P(all pass) = prod_{i=0}^{K-1} (p s + i) / (s + i)
    P(all fail) = prod_{i=0}^{K-1} ((1 - p) s + i) / (s + i) The
marginal pass rate of each rollout is still p, and rho = 0 is the iid case.

All functions broadcast over arrays of ``p``, ``K`` and ``rho``. The limits are
exact: K = 1 is never useful, p = 0 and p = 1 are never useful. The iid forms
are evaluated through ``log1p``/``expm1`` on the smaller of p and 1 - p, so
they are symmetric in p <-> 1 - p and keep full relative precision for K up to
10^6 and p within 1e-12 of 0 or 1.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ._checks import as_group_size, as_prob, as_rho

RHO_IID = 1e-12  #: correlations at or below this are treated as independent rollouts

__all__ = [
    "p_all_pass",
    "p_all_fail",
    "p_unanimous",
    "p_useful",
    "max_useful",
    "rollouts_per_useful",
    "outcome_probabilities",
    "betabinom_scale",
]


def _iid_parts(p: np.ndarray, K: np.ndarray):
    """(all_pass, all_fail, useful) for independent rollouts, evaluated stably."""
    small = np.where(p <= 0.5, p, 1.0 - p)  # exact: 1 - p is exact for p >= 0.5
    with np.errstate(divide="ignore"):
        log_small = np.log(small)
    small_pow = np.exp(K * log_small)  # min(p, 1-p)^K, underflows gracefully
    log_big = K * np.log1p(-small)  # log of max(p, 1-p)^K
    big_pow = np.exp(log_big)
    useful = -np.expm1(log_big) - small_pow
    all_pass = np.where(p <= 0.5, small_pow, big_pow)
    all_fail = np.where(p <= 0.5, big_pow, small_pow)
    return all_pass, all_fail, useful


def betabinom_scale(rho):
    """s = 1/rho - 1 = alpha + beta of the beta-binomial with intra-group correlation ``rho`` (0 < rho < 1): the
    prior's weight, in rollouts; large s (small rho) is nearly independent rollouts. Broadcasts over ``rho``."""
    return 1.0 / np.asarray(rho, dtype=float) - 1.0


def _betabinom_parts(p: np.ndarray, K: np.ndarray, rho: np.ndarray):
    """(all_pass, all_fail, useful) for beta-binomial rollouts with 0 < rho < 1 and 0 < p < 1."""
    scale = betabinom_scale(rho)
    # subnormal shape parameters make scipy return NaN; 1e-300 is indistinguishable in every output
    alpha, beta = np.maximum(p * scale, 1e-300), np.maximum((1.0 - p) * scale, 1e-300)
    log_pass = stats.betabinom.logpmf(K, K, alpha, beta)
    log_fail = stats.betabinom.logpmf(0, K, alpha, beta)
    log_pass, log_fail = np.minimum(log_pass, 0.0), np.minimum(log_fail, 0.0)  # scipy may overshoot by an ulp
    useful = -np.expm1(np.logaddexp(log_pass, log_fail))
    return np.exp(log_pass), np.exp(log_fail), np.clip(useful, 0.0, 1.0)


def outcome_probabilities(p, K, rho=0.0) -> dict[str, np.ndarray]:
    """All group-outcome probabilities at once.

    Parameters
    ----------
    p : array_like
        Per-rollout pass rate, in [0, 1].
    K : array_like of int
        Group size, >= 1.
    rho : array_like, optional
        Intra-group correlation in [0, 1); 0 (default) means independent rollouts.

    Returns
    -------
    dict
        ``p_all_pass``, ``p_all_fail``, ``p_unanimous``, ``p_useful`` and
        ``rollouts_per_useful`` (``K / p_useful``, NaN where ``p_useful == 0``),
        each broadcast to the common shape of the inputs.

    Raises
    ------
    InputError
        If p is outside [0, 1] or NaN, K is not an integer >= 1, or rho is outside [0, 1).
    """
    p_arr, K_arr, rho_arr = np.broadcast_arrays(as_prob(p), as_group_size(K), as_rho(rho))
    all_pass, all_fail, useful = _iid_parts(p_arr, K_arr)
    # below RHO_IID the beta-binomial equals the binomial to O(K^2 rho); its parameters would overflow
    corr = (rho_arr > RHO_IID) & (p_arr > 0) & (p_arr < 1) & (K_arr > 1)
    if np.any(corr):
        cp, cf, cu = _betabinom_parts(p_arr[corr], K_arr[corr], rho_arr[corr])
        all_pass, all_fail, useful = (np.array(x, dtype=float) for x in (all_pass, all_fail, useful))
        all_pass[corr], all_fail[corr], useful[corr] = cp, cf, cu
    # exact limits: a single rollout, or a certain outcome, can never disagree
    never = (K_arr == 1) | (p_arr == 0) | (p_arr == 1)
    useful = np.where(never, 0.0, useful)
    unanimous = np.where(never, 1.0, all_pass + all_fail)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # K / a subnormal P(useful) is inf
        per_useful = np.where(useful > 0, K_arr / np.where(useful > 0, useful, 1.0), np.nan)
    out = {
        "p_all_pass": all_pass,
        "p_all_fail": all_fail,
        "p_unanimous": unanimous,
        "p_useful": useful,
        "rollouts_per_useful": per_useful,
    }
    # 0-d results come back as numpy scalars, like scipy.stats does
    return {k: np.asarray(v, dtype=float)[()] for k, v in out.items()}


def p_all_pass(p, K, rho=0.0):
    """P(all K rollouts pass) = p^K (iid) or the beta-binomial pmf at K. See :func:`outcome_probabilities`."""
    return outcome_probabilities(p, K, rho)["p_all_pass"]


def p_all_fail(p, K, rho=0.0):
    """P(all K rollouts fail) = (1-p)^K (iid) or the beta-binomial pmf at 0. See :func:`outcome_probabilities`."""
    return outcome_probabilities(p, K, rho)["p_all_fail"]


def p_unanimous(p, K, rho=0.0):
    """Degeneracy D(p, K) = P(all pass) + P(all fail): the group has zero advantage."""
    return outcome_probabilities(p, K, rho)["p_unanimous"]


def p_useful(p, K, rho=0.0):
    """P(useful) = 1 - D(p, K): the rollouts disagree, so the group carries a gradient."""
    return outcome_probabilities(p, K, rho)["p_useful"]


def max_useful(K: int) -> float:
    """The largest P(useful) at K over every pass rate, reached at p = 1/2: 1 - 2^(1 - K) (0.5 at K = 2). No
    population, sampler or drift of binary rewards gives a larger share of mixed groups."""
    return float(p_useful(0.5, int(K)))


def rollouts_per_useful(p, K, rho=0.0):
    """Expected rollouts generated per useful group, K / P(useful); NaN where no group is useful."""
    return outcome_probabilities(p, K, rho)["rollouts_per_useful"]
