r"""What a TRL completion log can be checked against: TRL's own advantages and its logged scalars.

TRL 1.16.0 (``GRPOTrainer._generate_and_score_completions``, ``multi_objective_aggregation =
"sum_then_normalize"``, the default) computes, per generation batch of groups of G rows,

.. math::

    r_i = \mathrm{nansum}_k\, w_k\, r_{ik} \quad (\mathrm{NaN\ if\ every}\ r_{ik}\ \mathrm{is\ NaN}), \qquad
    A_i = \frac{r_i - \mathrm{nanmean}_{g(i)}\, r}{s_i + 10^{-4}}

with :math:`s_i` the group's nanstd (Bessel-corrected) for ``scale_rewards="group"``, the
whole batch's nanstd for ``"batch"``, and no division for ``"none"``; NaN advantages
become 0. The parquet keeps ``A_i`` (float32), so the weights and the scaling that
produced it can be checked: :func:`scale_modes_matching` returns the ``scale_rewards``
values that reproduce the logged advantages from the given rewards. None matching
means the weights (or the aggregation) are not the trainer's.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["SCALE_MODES", "trl_advantages", "scale_modes_matching", "nanstd"]

SCALE_MODES = ("group", "batch", "none")
_EPS = 1e-4  #: TRL adds this to the std before dividing
_ATOL = 2e-3  #: absolute tolerance of the comparison (the parquet holds float32 advantages)


def nanstd(x: np.ndarray, axis=None) -> np.ndarray:
    """TRL's ``nanstd``: NaN-ignoring std with Bessel's correction (NaN when fewer than 2 values)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(x, axis=axis, keepdims=True)
        var = np.nanmean((x - mean) ** 2, axis=axis)
        count = np.sum(~np.isnan(x), axis=axis)
        return np.sqrt(np.where(count > 1, var * count / np.maximum(count - 1, 1), np.nan))


def trl_advantages(rewards: np.ndarray, G: int, mode: str) -> np.ndarray:
    """Advantages TRL computes from one generation batch's total rewards (length a multiple of G)."""
    grouped = rewards.reshape(-1, G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.repeat(np.nanmean(grouped, axis=1), G)
    adv = rewards - mean
    if mode == "group":
        adv = adv / (np.repeat(nanstd(grouped, axis=1), G) + _EPS)
    elif mode == "batch":
        adv = adv / (nanstd(rewards) + _EPS)
    return np.nan_to_num(adv, nan=0.0)


def scale_modes_matching(rewards: np.ndarray, advantages: np.ndarray, G: int) -> set[str]:
    """The ``scale_rewards`` values under which TRL's formula gives ``advantages`` from ``rewards``.

    Edge cases: a batch whose groups are all degenerate has advantages 0 under every
    mode (all three match); an empty batch matches all modes.
    """
    if rewards.size == 0:
        return set(SCALE_MODES)
    out = set()
    for mode in SCALE_MODES:
        expect = trl_advantages(rewards, G, mode)
        if np.allclose(expect, advantages, rtol=1e-3, atol=_ATOL):
            out.add(mode)
    return out
