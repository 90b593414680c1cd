"""The profile-likelihood interval (sims/doctor/profile_interval.py) against closed forms, and on the rounds' fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from grpo_lab.sims.doctor.profile_interval import TOL, profile_interval


def _normal_nll(x):
    """Negative log-likelihood of a normal sample in (mu, log sigma)."""
    def nll(th):
        mu, ls = th
        return float(len(x) * ls + 0.5 * np.sum((x - mu) ** 2) / np.exp(2 * ls))
    return nll


@pytest.mark.parametrize("n,level", [(8, 0.95), (40, 0.9)])
def test_normal_mean_profile_interval_is_the_likelihood_ratio_closed_form(n, level):
    """mu of a normal sample, sigma profiled out: 2 (pl(mu) - min) = n log(1 + (xbar - mu)^2 / s2) (s2 the ML
    variance), so the interval is xbar +- sqrt(s2 (exp(chi2_1(level) / n) - 1)), wider than the Wald xbar +- z s/sqrt(n)
    at small n."""
    x = np.random.default_rng(n).normal(1.0, 2.0, n)
    xbar, s2 = x.mean(), x.var()
    half = np.sqrt(s2 * np.expm1(chi2.ppf(level, 1) / n))
    out = profile_interval(_normal_nll(x), np.array([xbar, 0.5 * np.log(s2)]), [(-50, 50), (-10, 10)], 0,
                           se=np.sqrt(s2 / n), level=level)
    np.testing.assert_allclose(out["interval"], [xbar - half, xbar + half], atol=TOL)
    assert out["at_bound"] == [False, False] and not out["capped"]


def test_a_side_the_likelihood_does_not_limit_ends_at_the_bound():
    """A likelihood flat for v >= 0 (a one-sided bound: nll = v^2 for v < 0 only): the upper end is the bound, said."""
    def nll(th):
        v, w = th
        return float((min(v, 0.0) * 3) ** 2 + (w - 1) ** 2)
    out = profile_interval(nll, np.array([0.0, 1.0]), [(-5, 4), (-5, 5)], 0, se=float("nan"))
    lo = -np.sqrt(chi2.ppf(0.95, 1) / 2) / 3  # 2 (3 v)^2 = chi2 at the lower end
    assert out["interval"][0] == pytest.approx(lo, abs=TOL)
    assert out["interval"][1] == 4 and out["at_bound"] == [False, True]
