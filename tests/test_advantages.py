"""Advantage estimators against independent computations: statistics.stdev, brute-force enumeration, torch."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_lab.sims.advantages import (EPS, ESTIMATORS, advantages, coverage, expected_gradient_coef, max_abs_advantage)
from grpo_lab.sims.errors import InputError

groups = arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(2, 9)), elements=st.sampled_from([0.0, 1.0]))
cont = arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(2, 9)), elements=st.floats(-5, 5))


def test_std_normalisation_amplifies_rare_success():
    """Seed 000: 1 correct of 16 gets about 3.75, a balanced 8/16 group about 0.97 (unbiased std)."""
    one = np.zeros(16)
    one[0] = 1
    half = np.r_[np.ones(8), np.zeros(8)]
    for r in (one, half):
        mean, sd = statistics.fmean(r), statistics.stdev(r)
        expected = [(x - mean) / (sd + EPS) for x in r]
        assert advantages(r, "grpo") == pytest.approx(expected, rel=1e-12)
    assert round(advantages(one, "grpo")[0], 2) == 3.75
    assert round(advantages(half, "grpo")[0], 2) == 0.97


@given(cont)
def test_grpo_matches_torch_std(r):
    import torch
    t = torch.as_tensor(r)
    ref = (t - t.mean(dim=1, keepdim=True)) / (t.std(dim=1, keepdim=True) + EPS)
    assert advantages(r, "grpo") == pytest.approx(ref.numpy(), rel=1e-9, abs=1e-9)


@given(groups)
def test_binary_forms(r):
    G = r.shape[1]
    assert np.array_equal(advantages(r, "sign"), 2 * r - 1)
    tasa = advantages(r, "tasa")
    for row, a in zip(r, tasa):
        n = int(row.sum())
        if n == 0:
            assert np.allclose(a, -1 / G)
        elif n == G:
            assert np.allclose(a, 1 / G)
        else:
            assert np.allclose(a[row == 1], 1 / n) and np.allclose(a[row == 0], -1 / (G - n))
    # centred estimators give exactly zero on unanimous groups
    unanimous = (r.min(axis=1) == r.max(axis=1))
    for name in ("grpo", "dr_grpo"):
        assert np.all(advantages(r, name)[unanimous] == 0.0)
        assert advantages(r, name).sum(axis=1) == pytest.approx(np.zeros(len(r)), abs=1e-9)


def _enumerate_coef(p, G, name):
    """E[(1/G) sum_i A_i d/dp log P(y_i)] by brute force over all 2^G reward vectors."""
    total = 0.0
    cov = 0.0
    for bits in itertools.product([0.0, 1.0], repeat=G):
        r = np.array(bits)
        n = r.sum()
        prob = p**n * (1 - p) ** (G - n)
        a = advantages(r, name)
        score = np.where(r == 1, 1 / p, -1 / (1 - p))  # d/dp log P(y) for a correct / wrong rollout
        total += prob * np.sum(a * score) / G
        cov += prob * bool(np.any(a != 0))
    return total, cov


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("p,G", [(0.25, 4), (0.5, 2), (0.9, 8), (0.05, 6), (0.7, 3)])
def test_expected_gradient_and_coverage_against_enumeration(name, p, G):
    coef, cov = _enumerate_coef(p, G, name)
    assert expected_gradient_coef(p, G, name) == pytest.approx(coef, rel=1e-10)
    assert coverage(p, G, name) == pytest.approx(cov, rel=1e-10)


def test_seed_003_coefficients():
    """Seed 003 at p = 0.25, G = 4: Sign 2.0, std-normalised 1.425, TASA 1.016 (in units of |grad p|)."""
    assert round(float(expected_gradient_coef(0.25, 4, "sign")), 3) == 2.0
    assert round(float(expected_gradient_coef(0.25, 4, "grpo")), 2) == 1.42
    assert round(float(expected_gradient_coef(0.25, 4, "tasa")), 3) == 1.016
    assert coverage(0.25, 4, "sign") == pytest.approx(1.0)
    assert coverage(0.25, 4, "dr_grpo") == pytest.approx(1 - 0.75**4 - 0.25**4)


def test_max_abs_and_continuous_threshold():
    r = np.array([[0.2, 0.9, 0.5, 0.7]])
    assert np.array_equal(advantages(r, "sign"), [[-1.0, 1.0, 0.0, 1.0]])
    assert advantages(r, "tasa")[0] == pytest.approx([-1.0, 0.5, 0.0, 0.5])
    assert max_abs_advantage(advantages(np.r_[1.0, np.zeros(15)], "grpo")) == pytest.approx(3.7485, abs=1e-4)
    assert max_abs_advantage([]) == 0.0


@pytest.mark.parametrize("bad", [[], [[]], [1, float("nan")], "abc", [[[1.0]]]])
def test_bad_rewards(bad):
    with pytest.raises(InputError):
        advantages(bad, "grpo")


def test_unknown_estimator():
    with pytest.raises(InputError, match="unknown estimator"):
        advantages([1, 0], "ppo")
