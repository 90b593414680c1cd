r"""The cost of DAPO dynamic sampling: drop zero-variance groups and oversample to refill.

With a per-group degeneracy D (the probability a sampled prompt's group is
unanimous, averaged over the prompts the sampler draws):

* rollout amplification, rollouts generated per rollout kept: 1 / (1 - D);
* a batch of B groups, refilled in rounds that each sample B fresh prompts, is
  still not full after R rounds with probability P(Binomial(R B, 1 - D) < B);
* dropped groups split into all-pass (retire the prompt) and all-fail (keep it
  in a hard buffer) in proportion E[P(all pass)] : E[P(all fail)].
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ._checks import as_group_size, as_prob
from .outcomes import outcome_probabilities

__all__ = ["rollout_amplification", "p_batch_not_full", "dropped_split", "dynamic_sampling_cost"]


def rollout_amplification(d) -> np.ndarray:
    """Rollouts generated per rollout kept, 1 / (1 - D); inf when every group is degenerate."""
    d = as_prob(d, "degeneracy")
    with np.errstate(divide="ignore"):
        return (1.0 / (1.0 - d))[()]


def p_batch_not_full(d, batch_groups: int, rounds: int) -> np.ndarray:
    """P(fewer than B useful groups after R rounds of B prompts each) = P(Binomial(R B, 1 - D) < B)."""
    d = as_prob(d, "degeneracy")
    B = int(as_group_size(batch_groups, "batch size"))
    R = int(as_group_size(rounds, "rounds"))
    return stats.binom.cdf(B - 1, R * B, 1.0 - d)[()]


def dropped_split(pass_rates, K: int, rho: float = 0.0) -> dict[str, float]:
    """Shares of dropped (unanimous) groups that are all-pass (retire) and all-fail (hard buffer)."""
    probs = outcome_probabilities(np.atleast_1d(pass_rates), K, rho)
    ap, af = float(np.mean(probs["p_all_pass"])), float(np.mean(probs["p_all_fail"]))
    total = ap + af
    if total == 0:
        return {"all_pass": float("nan"), "all_fail": float("nan")}
    return {"all_pass": ap / total, "all_fail": af / total}


def dynamic_sampling_cost(pass_rates, K: int, batch_groups: int = 32, rounds: int = 4, rho: float = 0.0) -> dict:
    """All of the above for a population of per-prompt pass rates sampled uniformly."""
    probs = outcome_probabilities(np.atleast_1d(pass_rates), K, rho)
    d = float(np.mean(probs["p_unanimous"]))
    split = dropped_split(pass_rates, K, rho)
    return {
        "degeneracy": d,
        "rollout_amplification": float(rollout_amplification(d)),
        "p_batch_not_full": float(p_batch_not_full(d, batch_groups, rounds)),
        "batch_groups": int(batch_groups),
        "rounds": int(rounds),
        "dropped_all_pass": split["all_pass"],
        "dropped_all_fail": split["all_fail"],
    }
