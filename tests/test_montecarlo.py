"""Monte Carlo against the closed forms, with standard-error tolerances (never a fixed epsilon)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.dynamic_sampling import dynamic_sampling_cost, p_batch_not_full, rollout_amplification
from grpo_lab.sims.montecarlo import DEFAULT_GRID, simulate_groups, simulate_groups_matrix, validate
from grpo_lab.sims.outcomes import outcome_probabilities, p_useful


def test_grid_covers_limits_and_fifteen_pairs():
    assert len(DEFAULT_GRID) >= 15
    assert any(p == 0 for p, _ in DEFAULT_GRID) and any(p == 1 for p, _ in DEFAULT_GRID)
    assert any(K == 1 for _, K in DEFAULT_GRID)


@pytest.mark.parametrize("rho", [0.0, 0.25])
def test_validate_passes(rho):
    result = validate(n_groups=100_000, seed=1, rho=rho)
    assert result["passed"], [r for r in result["rows"] if r["z"] > result["z_crit"]]
    assert result["max_abs_diff"] < 6 * max(r["se"] for r in result["rows"])
    for r in result["rows"]:
        if r["exact"] in (0.0, 1.0):
            assert r["mc"] == r["exact"]  # limits: the simulation is exact too


def test_validate_rejects_a_wrong_formula():
    def wrong(p, K, rho):  # drops one factor from the all-fail term
        return 0.0 if K == 1 or p in (0, 1) else 1 - p**K - (1 - p) ** (K - 1)

    assert not validate(n_groups=100_000, seed=1, exact_fn=wrong)["passed"]


def test_validate_rejects_a_slightly_wrong_formula():
    """A bias of 1% relative is caught at 400,000 groups."""
    assert not validate(n_groups=400_000, seed=2, exact_fn=lambda p, K, rho: 0.99 * float(p_useful(p, K, rho)))["passed"]


@pytest.mark.parametrize("p,K,rho", [(0.3, 5, 0.0), (0.8, 12, 0.0), (0.6, 6, 0.4)])
def test_run_length_and_matrix_simulators_agree_with_all_three_outcomes(p, K, rho):
    n = 200_000
    exact = outcome_probabilities(p, K, rho)
    probs = np.array([exact["p_all_pass"], exact["p_all_fail"], exact["p_useful"]])
    for sim, seed in ((simulate_groups, 1), (simulate_groups_matrix, 2)):
        c = sim(p, K, n, np.random.default_rng(seed), rho=rho)
        observed = np.array([c["all_pass"], c["all_fail"], c["mixed"]])
        chi2 = stats.chisquare(observed, probs * n)
        assert chi2.pvalue > 1e-4


def test_dynamic_sampling_against_simulation():
    rng = np.random.default_rng(7)
    pass_rates = rng.beta(2, 3, size=600) ** 0.3
    K, B, R = 8, 32, 2
    cost = dynamic_sampling_cost(pass_rates, K, batch_groups=B, rounds=R)
    d = cost["degeneracy"]
    # simulate the sampler: rounds of B random prompts until B useful groups are kept
    trials, not_full, generated, kept, pass_drop, drops = 20_000, 0, 0, 0, 0, 0
    for _ in range(trials):
        got = 0
        for _ in range(R):
            idx = rng.integers(0, 600, B)
            k = rng.binomial(K, pass_rates[idx])
            useful = (k > 0) & (k < K)
            got += useful.sum()
            generated += B * K
            kept += useful.sum() * K
            pass_drop += np.sum(k == K)
            drops += np.sum(~useful)
            if got >= B:
                break
        not_full += got < B
    p_nf = not_full / trials
    se = np.sqrt(max(cost["p_batch_not_full"] * (1 - cost["p_batch_not_full"]), 1e-12) / trials)
    assert abs(p_nf - cost["p_batch_not_full"]) <= 5 * se + 1e-4
    assert generated / kept == pytest.approx(cost["rollout_amplification"], rel=0.01)
    assert pass_drop / drops == pytest.approx(cost["dropped_all_pass"], abs=0.01)
    assert rollout_amplification(0.4) == pytest.approx(1 / 0.6)  # seed 000: 40% degenerate -> 1.67x
    assert p_batch_not_full(0.0, 8, 1) == 0.0 and p_batch_not_full(1.0, 8, 4) == 1.0
    assert d == pytest.approx(float(np.mean(outcome_probabilities(pass_rates, K)["p_unanimous"])))
