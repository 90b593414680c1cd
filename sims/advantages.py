r"""Group-relative advantage estimators, one pure function each, chosen by name.

Every estimator maps a reward array of shape ``(groups, G)`` (binary or
continuous) to advantages of the same shape, row by row:

``grpo``     A_i = (r_i - mean(r)) / (std(r) + eps), std unbiased (ddof = 1), eps = 1e-4,
             as TRL computes it with ``scale_rewards=True``.
``dr_grpo``  A_i = r_i - mean(r)  (Dr. GRPO: centred, not scaled).
``sign``     A_i = sign(r_i - c), threshold c = 0.5; for binary rewards this is 2 r_i - 1.
``tasa``     threshold-anchored signed advantage: A_i = +1/n_+ if r_i > c,
             -1/n_- if r_i < c, 0 if r_i = c, where n_+ and n_- count the group's
             rewards above and below c. A mixed binary group gives +1/n_+ and
             -1/(G - n_+); all-fail gives -1/G each, all-pass +1/G each.

A group of one (G = 1) has no spread: ``grpo`` and ``dr_grpo`` give 0 there.

For binary rewards at pass rate p and group size G this module also gives each
estimator's exact expected policy-gradient coefficient, in units of |grad p|,

    c(p, G) = sum_n Binom(n; G, p) (1/G) [ n A_+(n) / p  -  (G - n) A_-(n) / (1 - p) ],

where A_+(n), A_-(n) are the advantages of a correct and an incorrect rollout in
a group with n correct (using E[grad log pi(y) | y correct] = grad p / p and
E[grad log pi(y) | y wrong] = -grad p / (1 - p)), and its coverage, the
probability that a group carries any non-zero advantage.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats

from ._checks import as_group_size, as_prob
from .errors import InputError

EPS = 1e-4  #: TRL's epsilon in the std-normalised advantage
THRESHOLD = 0.5  #: the fixed reference of ``sign`` and ``tasa``

__all__ = [
    "EPS",
    "THRESHOLD",
    "ESTIMATORS",
    "grpo",
    "dr_grpo",
    "sign",
    "tasa",
    "advantages",
    "as_rewards",
    "max_abs_advantage",
    "expected_gradient_coef",
    "coverage",
]


def _mean(r: np.ndarray) -> np.ndarray:
    return r.mean(axis=-1, keepdims=True)


def grpo(r: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(r - mean) / (unbiased std + eps), per group."""
    G = r.shape[-1]
    std = r.std(axis=-1, ddof=1, keepdims=True) if G > 1 else np.zeros_like(r[..., :1])
    return (r - _mean(r)) / (std + eps)


def dr_grpo(r: np.ndarray) -> np.ndarray:
    """r - mean, per group (no std division)."""
    return r - _mean(r)


def sign(r: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """sign(r - threshold); 2r - 1 for binary rewards."""
    return np.sign(r - threshold)


def tasa(r: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """+1/n_+ above the threshold, -1/n_- below it, 0 at it."""
    above, below = r > threshold, r < threshold
    n_above = above.sum(axis=-1, keepdims=True)
    n_below = below.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(above, 1.0 / np.maximum(n_above, 1), 0.0)
        neg = np.where(below, 1.0 / np.maximum(n_below, 1), 0.0)
    return pos - neg


ESTIMATORS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "grpo": grpo,
    "dr_grpo": dr_grpo,
    "sign": sign,
    "tasa": tasa,
}


def as_rewards(rewards) -> np.ndarray:
    """Validate a reward array: finite floats, shape ``(G,)`` or ``(groups, G)`` with G >= 1."""
    try:
        r = np.asarray(rewards, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"rewards must be numbers, got {rewards!r}") from None
    if r.ndim not in (1, 2) or r.shape[-1] < 1 or r.size == 0:
        raise InputError(f"rewards must have shape (G,) or (groups, G) with G >= 1, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise InputError("rewards must be finite numbers (no NaN or inf)")
    return r


def get_estimator(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """Look an estimator up by name, raising InputError for an unknown one."""
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise InputError(f"unknown estimator {name!r}; choose from {', '.join(ESTIMATORS)}") from None


def advantages(rewards, estimator: str = "grpo") -> np.ndarray:
    """Advantages of ``rewards`` (shape ``(G,)`` or ``(groups, G)``) under the named estimator."""
    fn = get_estimator(estimator)
    return fn(as_rewards(rewards))


def max_abs_advantage(adv) -> float:
    """max |A| over a batch (seed 000's dashboard metric); 0.0 for an empty batch."""
    a = np.asarray(adv, dtype=float)
    return float(np.max(np.abs(a))) if a.size else 0.0


def _composition_table(G: int, estimator: str):
    """A_+(n) and A_-(n) for n = 0..G correct, from the estimator itself on canonical groups."""
    n = np.arange(G + 1)
    rewards = (np.arange(G)[None, :] < n[:, None]).astype(float)  # n ones then zeros
    adv = advantages(rewards, estimator)
    a_plus = np.where(n > 0, adv[:, 0], 0.0)
    a_minus = np.where(n < G, adv[:, -1], 0.0)
    return n, a_plus, a_minus


def expected_gradient_coef(p, G: int, estimator: str) -> np.ndarray:
    """Exact expected policy-gradient coefficient of ``estimator`` in units of |grad p| (binary rewards).

    Sums over the G + 1 binomial group compositions (see the module docstring),
    normalised by 1/G. Defined for 0 < p < 1; at p = 0 or 1 the score of the
    impossible outcome is undefined and the result is NaN.
    """
    p = np.asarray(as_prob(p), dtype=float)
    G = int(as_group_size(G, "G"))
    n, a_plus, a_minus = _composition_table(G, estimator)
    pm = stats.binom.pmf(n[:, None], G, np.ravel(p)[None, :])  # (G+1, len(p))
    with np.errstate(divide="ignore", invalid="ignore"):
        pp = np.ravel(p)[None, :]
        term = (n[:, None] * a_plus[:, None] / pp) - ((G - n)[:, None] * a_minus[:, None] / (1 - pp))
        coef = (pm * term).sum(axis=0) / G
    coef = np.where((np.ravel(p) > 0) & (np.ravel(p) < 1), coef, np.nan)
    return coef.reshape(p.shape)[()]


def coverage(p, G: int, estimator: str) -> np.ndarray:
    """P(a group of G binary rollouts at pass rate p has any non-zero advantage under ``estimator``)."""
    p = np.asarray(as_prob(p), dtype=float)
    G = int(as_group_size(G, "G"))
    n, a_plus, a_minus = _composition_table(G, estimator)
    signal = (np.abs(a_plus) > 0) | (np.abs(a_minus) > 0)
    pm = stats.binom.pmf(n[:, None], G, np.ravel(p)[None, :])
    cov = np.minimum((pm * signal[:, None]).sum(axis=0), 1.0)
    return cov.reshape(p.shape)[()]
