"""Populations, decay and scenarios: exact Beta moments, Jensen, common random numbers, filter."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import integrate, stats

from grpo_lab.sims import decay
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.outcomes import p_unanimous
from grpo_lab.sims.population import beta_degeneracy, degeneracy_iid, degeneracy_real, draw_population, from_pass_rates
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED, Scenario, evaluate, outcome_histogram


@pytest.mark.parametrize("a,b,K", [(2, 3, 8), (0.5, 0.5, 4), (5, 1.5, 16), (1, 1, 1)])
def test_beta_moments_closed_form(a, b, K):
    mpmath.mp.dps = 40  # scipy.stats.beta.moment loses digits at high order; mpmath is the reference
    d = beta_degeneracy(a, b, K)
    assert d["all_pass"] == pytest.approx(float(mpmath.beta(a + K, b) / mpmath.beta(a, b)), rel=1e-12)
    assert d["all_fail"] == pytest.approx(float(mpmath.beta(a, b + K) / mpmath.beta(a, b)), rel=1e-12)
    assert d["all_pass"] == pytest.approx(stats.beta(a, b).moment(K), rel=1e-6)
    assert d["mean_pass_rate"] == pytest.approx(a / (a + b), rel=1e-12)


@pytest.mark.parametrize("t", [0.3, 1.0])
@pytest.mark.parametrize("rho", [0.0, 0.2])
def test_beta_degeneracy_at_progress_against_quadrature(t, rho):
    s = float(decay.exponent(t))
    d = beta_degeneracy(2, 3, 8, t=t, rho=rho)
    ref = integrate.quad(lambda p: p_unanimous(p**s, 8, rho) * stats.beta.pdf(p, 2, 3), 0, 1, limit=200)[0]
    assert d["d_real"] == pytest.approx(ref, rel=1e-7)
    assert d["d_real"] >= d["d_iid"]


@given(arrays(np.float64, st.integers(1, 50), elements=st.floats(0, 1)), st.integers(1, 64))
def test_jensen_gap_is_non_negative(p, K):
    assert degeneracy_real(p, K) >= degeneracy_iid(p, K) - 1e-12


def test_seed_003_jensen_example():
    """Seed 003: 57.5% never solved, 22.5% always, mean 0.325 at G = 2 -> D_real 0.90, D_iid 0.56."""
    rest = (0.325 - 0.225) / 0.2  # the middle 20% must average 0.5 for the stated mean
    p = np.r_[np.zeros(575), np.ones(225), np.full(200, rest)]
    assert degeneracy_iid(p, 2) == pytest.approx(0.325**2 + 0.675**2)
    assert round(degeneracy_iid(p, 2), 2) == 0.56
    assert round(degeneracy_real(p, 2), 2) == 0.90


def test_decay_model_properties():
    p0 = np.linspace(0, 1, 101)
    ts = np.linspace(0, 1, 11)
    pt = decay.pass_rate_at(p0[None, :], ts[:, None])
    assert np.all(np.diff(pt, axis=0) >= 0)  # monotone in t
    assert np.all(np.diff(pt, axis=1) >= 0)  # order-preserving
    assert np.all(pt[:, 0] == 0) and np.all(pt[:, -1] == 1)  # ends fixed
    assert np.array_equal(pt[0], p0)
    assert decay.fit_gain(0.887, 2, 3) == pytest.approx(decay.DEFAULT_GAIN, abs=1e-4)
    assert decay.beta_mean_at(2, 3, 1.0) == pytest.approx(0.887, abs=1e-5)
    with pytest.raises(InputError):
        decay.pass_rate_at(0.5, 1.5)


def test_population_is_a_pure_function_of_seed_and_prefix_stable():
    a, b = draw_population(600, seed=5), draw_population(600, seed=5)
    assert np.array_equal(a.pass_rates, b.pass_rates) and np.array_equal(a.uniforms(64), b.uniforms(64))
    big = draw_population(1000, seed=5)
    assert np.array_equal(big.pass_rates[:600], a.pass_rates)
    assert np.array_equal(big.uniforms(8)[:600], a.uniforms(8))
    assert np.array_equal(a.uniforms(100)[:, :64], a.uniforms(64))  # columns never depend on K
    assert a.uniforms(8).dtype == np.float32
    assert not np.array_equal(draw_population(600, seed=6).pass_rates, a.pass_rates)


def test_common_random_numbers_no_flicker():
    pop = draw_population(600, seed=11)
    ks = [evaluate(Scenario(seed=11, progress=t, K=16), pop).successes for t in np.linspace(0, 1, 21)]
    assert np.all(np.diff(np.array(ks), axis=0) >= 0)  # successes only ever rise with progress
    k8 = evaluate(Scenario(seed=11, progress=0.4, K=8), pop).successes
    k16 = evaluate(Scenario(seed=11, progress=0.4, K=16), pop).successes
    assert np.all(k16 >= k8) and np.all(k16 - k8 <= 8)  # rollouts 1..8 are the same rollouts


def test_outcome_codes_and_filter():
    view = evaluate(Scenario(progress=1.0, band=(0.2, 0.8)))
    k, K = view.successes, 8
    assert np.array_equal(view.outcome == ALL_PASS, k == K)
    assert np.array_equal(view.outcome == ALL_FAIL, k == 0)
    assert np.array_equal(view.outcome == MIXED, (k > 0) & (k < K))
    assert np.array_equal(view.kept, (view.pass_rate >= 0.2) & (view.pass_rate <= 0.8))
    s = view.summary
    assert s["kept_share"] == view.kept.mean()
    assert s["useful_share_realised"] == np.mean(view.outcome[view.kept] == MIXED)
    assert s["all_pass_share"] + s["all_fail_share"] + s["useful_share_realised"] == pytest.approx(1.0)
    assert s["mean_pass_rate"] == pytest.approx(view.pass_rate[view.kept].mean())


def test_realised_groups_match_binomial_and_betabinomial():
    """Realised groups of 200,000 prompts at one pass rate: shares within 5 SE of the closed forms."""
    n, p, K = 200_000, 0.7, 8
    pop = from_pass_rates(np.full(n, p), seed=3)
    for rho in (0.0, 0.3):
        view = evaluate(Scenario(n_prompts=n, progress=0.0, K=K, rho=rho), pop)
        scale = 1 / rho - 1 if rho else None
        pmf = stats.binom(K, p).pmf if rho == 0 else stats.betabinom(K, p * scale, (1 - p) * scale).pmf
        counts = np.bincount(view.successes, minlength=K + 1) / n
        se = np.sqrt(pmf(np.arange(K + 1)) * (1 - pmf(np.arange(K + 1))) / n)
        assert np.all(np.abs(counts - pmf(np.arange(K + 1))) <= 5 * se + 1e-6)


def test_empty_filter_gives_nan_not_crash():
    s = evaluate(Scenario(progress=0.0, band=(0.999, 1.0))).summary
    assert s["n_kept"] == 0 and np.isnan(s["useful_share_realised"]) and np.isnan(s["mean_pass_rate"])


@pytest.mark.parametrize("kw", [dict(n_prompts=0), dict(n_prompts=10**9), dict(a=0), dict(b=-1), dict(seed=-1),
                                dict(K=0), dict(progress=2), dict(rho=1), dict(band=(0.8, 0.2)), dict(band=(-0.1, 0.5))])
def test_bad_scenarios(kw):
    with pytest.raises(InputError):
        evaluate(Scenario(**kw))


def test_outcome_histogram_matches_numpy_histogram():
    rng = np.random.default_rng(4)
    p = rng.random((3, 500))
    p[0, :5] = [0.0, 1.0, np.nan, 0.2, 0.4]  # ends of the range, a missing value, exact bin edges
    cat = rng.integers(0, 4, (3, 500))
    counts = outcome_histogram(p, cat, 10, 4)
    assert counts.shape == (3, 10, 4)
    for i in range(3):
        for c in range(4):
            sel = (cat[i] == c) & np.isfinite(p[i])
            assert np.array_equal(counts[i, :, c], np.histogram(p[i][sel], bins=10, range=(0, 1))[0])
