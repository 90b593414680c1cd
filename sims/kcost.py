r"""What a bigger group costs: useful groups per rollout across K, for a population of prompts.

For prompts with pass rates p_x (x = 1..n) and groups of K rollouts, the expected share of groups
that carry a gradient is

    U(K) = mean_x P(useful | p_x, K) = mean_x [1 - p_x^K - (1 - p_x)^K]     (rho = 0)

(beta-binomial for rho > 0, :func:`sims.outcomes.outcome_probabilities`). One step spends K
rollouts per prompt, so at a fixed rollout budget

    useful rollouts per 1,000         = 1000 U(K)        (rollouts that sit in a group with a gradient)
    useful groups per 1,000 rollouts  = 1000 U(K) / K    (the same rollouts, K to a group)
    rollouts per useful group         = K / U(K)
    cost against a baseline K_b       = (K / U(K)) / (K_b / U(K_b))

U(K) rises towards 1 with K, so a bigger group looks free on the share alone; the last lines say
what it costs. Both of the first two are true at once: as K grows, more of the rollouts sit in
groups with a gradient (1000 U rises), but each group takes K of them, so the useful groups bought
per 1,000 rollouts (1000 U / K) fall. The lab's K-cost table (``lab/views/kcost.py``) prints these.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_group_size, as_prob, as_rho
from .outcomes import outcome_probabilities

__all__ = ["k_cost", "BASELINE_K"]

BASELINE_K = 4  #: the group size costs are stated against (the smallest K in the lab's table)


def k_cost(pass_rates, Ks, rho: float = 0.0, baseline_K: int = BASELINE_K) -> dict[str, np.ndarray]:
    """Expected useful share and cost per useful group for each K in ``Ks``, over the prompts' pass rates.

    Parameters: ``pass_rates`` (1-D, in [0, 1]; the prompts counted, e.g. those a filter keeps),
    ``Ks`` (group sizes >= 1), ``rho`` (within-group correlation), ``baseline_K`` (the K costs are
    relative to).

    Returns arrays over ``Ks``: ``K``, ``useful_share`` U(K), ``useful_rollouts_per_1000`` 1000 U (rollouts
    in a group with a gradient), ``useful_per_1000_rollouts`` 1000 U / K (useful groups), ``rollouts_per_useful`` K / U (NaN where U = 0), ``cost_vs_baseline``
    (rollouts per useful group over the baseline's; NaN where either is undefined), and the
    scalar ``baseline_K``. With no prompts (an empty array) every value is NaN.
    """
    p = np.atleast_1d(as_prob(pass_rates, "pass rates")).astype(float)
    K = np.atleast_1d(as_group_size(Ks)).astype(int)
    base = int(as_group_size(baseline_K, "baseline_K"))
    rho = float(as_rho(rho))
    if p.size == 0:
        nan = np.full(K.shape, np.nan)
        return {"K": K, "useful_share": nan, "useful_rollouts_per_1000": nan, "useful_per_1000_rollouts": nan, "rollouts_per_useful": nan,
                "cost_vs_baseline": nan, "baseline_K": base}
    allK = np.append(K, base)
    share = np.mean(outcome_probabilities(p[None, :], allK[:, None], rho)["p_useful"], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_useful = np.where(share > 0, allK / np.where(share > 0, share, 1.0), np.nan)
    return {"K": K, "useful_share": share[:-1], "useful_rollouts_per_1000": 1000.0 * share[:-1],
            "useful_per_1000_rollouts": 1000.0 * share[:-1] / K,
            "rollouts_per_useful": per_useful[:-1], "cost_vs_baseline": per_useful[:-1] / per_useful[-1],
            "baseline_K": base}
