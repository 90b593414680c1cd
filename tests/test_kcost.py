"""sims.kcost against independent computations: scipy's binomial / beta-binomial pmfs, and simulated groups."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.kcost import k_cost

KS = (1, 2, 4, 8, 16, 32, 64)


def useful_by_pmf(p, K, rho):
    """1 - P(0 successes) - P(K successes), from scipy's pmf, one prompt at a time."""
    out = []
    for px in p:
        if rho == 0:
            dist = stats.binom(K, px)
        else:
            s = 1.0 / rho - 1.0
            dist = stats.betabinom(K, px * s, (1 - px) * s)
        out.append(1.0 - dist.pmf(0) - dist.pmf(K) if K > 1 else 0.0)
    return float(np.mean(out))


@pytest.mark.parametrize("rho", [0.0, 0.3])
def test_k_cost_equals_the_pmf(rho):
    p = np.random.default_rng(5).beta(2, 3, size=40)
    got = k_cost(p, KS, rho=rho, baseline_K=4)
    base = 4 / useful_by_pmf(p, 4, rho)
    for i, K in enumerate(KS):
        u = useful_by_pmf(p, K, rho)
        assert got["useful_share"][i] == pytest.approx(u, rel=1e-9, abs=1e-12)
        assert got["useful_per_1000_rollouts"][i] == pytest.approx(1000 * u / K, rel=1e-9, abs=1e-9)
        assert got["useful_rollouts_per_1000"][i] == pytest.approx(1000 * u, rel=1e-9, abs=1e-9)
        if u > 0:
            assert got["rollouts_per_useful"][i] == pytest.approx(K / u, rel=1e-9)
            assert got["cost_vs_baseline"][i] == pytest.approx((K / u) / base, rel=1e-9)
        else:  # K = 1: no group ever has a gradient
            assert np.isnan(got["rollouts_per_useful"][i]) and np.isnan(got["cost_vs_baseline"][i])
    assert got["baseline_K"] == 4
    assert got["cost_vs_baseline"][KS.index(4)] == pytest.approx(1.0)


def test_k_cost_matches_simulated_groups_within_standard_errors():
    """Draw groups of K Bernoulli rollouts per prompt, count useful groups per rollout spent."""
    rng = np.random.default_rng(11)
    p = rng.beta(2, 3, size=300)
    reps = 400
    got = k_cost(p, (4, 16), baseline_K=4)
    for i, K in enumerate((4, 16)):
        wins = rng.random((reps, p.size, K)) < p[None, :, None]
        k = wins.sum(axis=2)
        useful = ((k > 0) & (k < K)).astype(float)
        per_1000 = 1000.0 * useful.sum() / (reps * p.size * K)
        se = 1000.0 / K * np.sqrt(np.mean(useful) * (1 - np.mean(useful)) / useful.size)
        assert abs(per_1000 - got["useful_per_1000_rollouts"][i]) < 4 * se, (K, per_1000, se)


def test_bigger_k_raises_the_share_but_costs_more_per_useful_group():
    p = np.random.default_rng(0).beta(2, 3, size=600) ** 0.2  # an easy, late-training population
    got = k_cost(p, (4, 8, 16, 32, 64))
    assert np.all(np.diff(got["useful_share"]) > 0)
    assert np.all(np.diff(got["useful_rollouts_per_1000"]) > 0)  # more rollouts sit in useful groups ...
    assert np.all(np.diff(got["useful_per_1000_rollouts"]) < 0)  # ... but K of them make a group: fewer groups
    assert np.all(np.diff(got["cost_vs_baseline"]) > 0)


def test_k_cost_of_no_prompts_is_nan():
    got = k_cost(np.array([]), (4, 8))
    for key in ("useful_share", "useful_rollouts_per_1000", "useful_per_1000_rollouts", "rollouts_per_useful", "cost_vs_baseline"):
        assert np.all(np.isnan(got[key]))
