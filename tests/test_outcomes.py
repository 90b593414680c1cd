"""Group outcome probabilities against independent computations (scipy.stats, mpmath, exact sums)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.outcomes import outcome_probabilities, p_all_fail, p_all_pass, p_unanimous, p_useful, rollouts_per_useful

probs = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
inner = st.floats(1e-6, 1 - 1e-6)
sizes = st.integers(1, 2000)
rhos = st.floats(0.0, 0.99)


@given(probs, sizes, rhos)
def test_probabilities_are_a_partition(p, K, rho):
    o = outcome_probabilities(p, K, rho)
    for key in ("p_all_pass", "p_all_fail", "p_unanimous", "p_useful"):
        assert 0.0 <= o[key] <= 1.0
    assert o["p_useful"] + o["p_unanimous"] == pytest.approx(1.0, abs=1e-12)
    if K > 1 and 0 < p < 1:
        assert o["p_all_pass"] + o["p_all_fail"] == pytest.approx(o["p_unanimous"], abs=1e-12)


@given(probs, sizes)
def test_symmetric_in_p(p, K):
    q = 1.0 - p
    # 1 - p is rounded when p < 0.5; compare at the exactly representable mirror pair (q, 1 - q)
    a, b = p_useful(1.0 - q, K), p_useful(q, K)
    assert a == pytest.approx(b, rel=1e-13, abs=1e-300)
    assert p_all_pass(1.0 - q, K) == pytest.approx(p_all_fail(q, K), rel=1e-12, abs=1e-300)


@given(inner, st.integers(1, 500))
def test_useful_increases_with_K(p, K):
    assert p_useful(p, K + 1) >= p_useful(p, K) - 1e-15


@given(probs, rhos)
def test_limits_are_exact(p, rho):
    assert p_useful(p, 1, rho) == 0.0
    assert p_useful(0.0, 8, rho) == 0.0 and p_useful(1.0, 8, rho) == 0.0
    assert p_unanimous(0.0, 8, rho) == 1.0 and p_unanimous(1.0, 64, rho) == 1.0
    assert np.isnan(rollouts_per_useful(p, 1, rho))


@given(probs, st.integers(1, 200))
def test_iid_matches_scipy_binom(p, K):
    assert p_all_pass(p, K) == pytest.approx(stats.binom.pmf(K, K, p), rel=1e-9, abs=1e-300)
    assert p_all_fail(p, K) == pytest.approx(stats.binom.pmf(0, K, p), rel=1e-9, abs=1e-300)


@given(inner, st.integers(2, 100), st.floats(0.01, 0.95))
@settings(max_examples=60)
def test_correlated_matches_betabinom_and_beta_integral(p, K, rho):
    scale = 1 / rho - 1
    a, b = p * scale, (1 - p) * scale
    o = outcome_probabilities(p, K, rho)
    assert o["p_all_pass"] == pytest.approx(stats.betabinom.pmf(K, K, a, b), rel=1e-8, abs=1e-300)
    assert o["p_all_fail"] == pytest.approx(stats.betabinom.pmf(0, K, a, b), rel=1e-8, abs=1e-300)
    # independent route: integrate q^K + (1 - q)^K against the Beta(a, b) mixing density
    assume(a > 0.5 and b > 0.5)  # the quadrature is reliable away from integrable endpoint singularities
    exact = integrate.quad(lambda q: (q**K + (1 - q) ** K) * stats.beta.pdf(q, a, b), 0, 1, limit=500)[0]
    assert o["p_unanimous"] == pytest.approx(exact, rel=1e-6, abs=1e-9)


@given(probs, sizes)
def test_rho_zero_is_iid(p, K):
    a, b = outcome_probabilities(p, K, 0.0), outcome_probabilities(p, K, 1e-12)
    assert a["p_useful"] == pytest.approx(b["p_useful"], rel=1e-6, abs=1e-9)


def test_correlation_makes_unanimity_more_likely():
    p, K = 0.7, 8
    values = [float(p_unanimous(p, K, r)) for r in (0.0, 0.05, 0.2, 0.5, 0.9)]
    assert values == sorted(values) and values[-1] > values[0]


@pytest.mark.parametrize("p", [1e-12, 1e-9, 0.3, 0.5, 1 - 2**-40, 1 - 1e-12])
@pytest.mark.parametrize("K", [2, 8, 1000, 10**6])
def test_high_precision_against_mpmath(p, K):
    mpmath.mp.dps = 60
    P = mpmath.mpf(p)
    exact_pass = P**K
    exact_fail = (1 - P) ** K
    exact_useful = 1 - exact_pass - exact_fail
    o = outcome_probabilities(p, K)
    assert o["p_useful"] == pytest.approx(float(exact_useful), rel=1e-11, abs=1e-300)
    assert o["p_all_pass"] == pytest.approx(float(exact_pass), rel=1e-9, abs=1e-300)
    assert o["p_all_fail"] == pytest.approx(float(exact_fail), rel=1e-9, abs=1e-300)


def test_seed_tables():
    """Seed 000's and 002's tables, recomputed (P(useful) at K = 8; the K table at p = 0.9/0.95/0.99)."""
    k8 = {0.5: 99.2, 0.7: 94.2, 0.8: 83.2, 0.9: 57.0, 0.95: 33.7, 0.99: 7.7, 0.999: 0.8}
    for p, pct in k8.items():
        assert round(100 * float(p_useful(p, 8)), 1) == pct
    grid = {4: (34.4, 18.5, 3.9), 8: (57.0, 33.7, 7.7), 16: (81.5, 56.0, 14.9), 32: (96.6, 80.6, 27.5),
            64: (99.9, 96.2, 47.4)}
    for K, row in grid.items():
        assert tuple(round(100 * float(x), 1) for x in p_useful([0.9, 0.95, 0.99], K)) == row
    deg = {(0.8, 4): "0.41", (0.9, 8): "0.43", (0.95, 16): "0.44", (0.5, 4): "0.13"}  # seed 000, rounded half up
    for (p, K), d in deg.items():
        assert fixed(float(p_unanimous(p, K)), 2) == d


def test_broadcasting():
    out = p_useful(np.array([0.5, 0.9]), np.array([[4], [8]]), 0.0)
    assert out.shape == (2, 2)
    assert out[1, 1] == pytest.approx(1 - 0.9**8 - 0.1**8)


@pytest.mark.parametrize("bad", [dict(p=-0.1, K=4), dict(p=1.1, K=4), dict(p=float("nan"), K=4), dict(p=0.5, K=0),
                                 dict(p=0.5, K=2.5), dict(p=0.5, K=4, rho=1.0), dict(p=0.5, K=4, rho=-0.1),
                                 dict(p="x", K=4)])
def test_bad_input_raises_input_error(bad):
    with pytest.raises(InputError):
        outcome_probabilities(**bad)


@pytest.mark.parametrize("p,K,rho", [(0.3, 8, 0.3), (0.9, 32, 0.05), (0.05, 4, 0.8), (0.5, 64, 0.01)])
def test_correlated_is_the_products_the_lab_shows(p, K, rho):
    """The beta-binomial P(all pass) and P(all fail) the lab writes out (prod_i (p s + i)/(s + i), s = 1/rho - 1)."""
    from grpo_lab.sims.outcomes import betabinom_scale

    s = 1.0 / rho - 1.0
    assert betabinom_scale(rho) == pytest.approx(s, rel=1e-15)
    i = np.arange(K)
    o = outcome_probabilities(p, K, rho)
    assert o["p_all_pass"] == pytest.approx(np.prod((p * s + i) / (s + i)), rel=1e-9)
    assert o["p_all_fail"] == pytest.approx(np.prod(((1 - p) * s + i) / (s + i)), rel=1e-9)
