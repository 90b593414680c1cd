"""Run doctor, the fits: parameters recovered from simulated runs within their standard errors,
standard errors calibrated, predicted unanimous shares against Monte Carlo, goodness of fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.doctor.correlation import within_prompt_correlation
from grpo_lab.sims.doctor.fit import fit_beta, fit_mixture, share_interval
from grpo_lab.sims.doctor.groups import RunGroups
from grpo_lab.sims.doctor.whatif import what_if_K
from grpo_lab.sims.errors import InputError

Z = 3.0  # |estimate - truth| <= Z standard errors (fixed seeds: no flakiness, a 0.3% tail per check)


def beta_counts(rng, n, K, a, b):
    return np.bincount(rng.binomial(K, rng.beta(a, b, n)), minlength=K + 1)


def mixture_counts(rng, n, K, w, c1, c2):
    low = rng.random(n) < w
    p = np.where(low, rng.beta(*c1, n), rng.beta(*c2, n))
    return np.bincount(rng.binomial(K, p), minlength=K + 1)


@pytest.mark.parametrize("a,b,K", [(2.0, 3.0, 8), (0.4, 0.35, 4), (5.0, 1.5, 16)])
def test_beta_fit_recovers_parameters_within_se(a, b, K):
    rng = np.random.default_rng(11)
    f = fit_beta(beta_counts(rng, 20_000, K, a, b), K)
    assert not f["at_bound"]
    assert abs(f["alpha"] - a) <= Z * f["se_alpha"], (f["alpha"], f["se_alpha"])
    assert abs(f["beta"] - b) <= Z * f["se_beta"], (f["beta"], f["se_beta"])
    assert not f["gof"]["poor"]


def test_beta_fit_standard_errors_are_calibrated():
    """Over 60 independent runs the z-scores of alpha and beta have standard deviation near 1."""
    rng = np.random.default_rng(5)
    za, zb = [], []
    for _ in range(60):
        f = fit_beta(beta_counts(rng, 3000, 8, 2.0, 3.0), 8)
        za.append((f["alpha"] - 2.0) / f["se_alpha"])
        zb.append((f["beta"] - 3.0) / f["se_beta"])
    for z in (np.array(za), np.array(zb)):
        # the sd of 60 standard normals lies in [0.75, 1.27] with probability > 0.99
        assert 0.75 < z.std(ddof=1) < 1.27
        assert abs(z.mean()) < 3 / np.sqrt(60) + 0.15  # ML bias at n = 3000 is small against the SE


def test_mixture_fit_recovers_parameters_within_se():
    rng = np.random.default_rng(3)
    K, w, c1, c2 = 16, 0.4, (0.5, 5.0), (6.0, 1.5)
    counts = mixture_counts(rng, 30_000, K, w, c1, c2)
    m = fit_mixture(counts, K)
    truth = {"w": w, "alpha1": c1[0], "beta1": c1[1], "alpha2": c2[0], "beta2": c2[1]}
    got = {"w": m["w"], "alpha1": m["components"][0]["alpha"], "beta1": m["components"][0]["beta"],
           "alpha2": m["components"][1]["alpha"], "beta2": m["components"][1]["beta"]}
    for k in truth:
        assert np.isfinite(m["se"][k]) and m["se"][k] > 0
        assert abs(got[k] - truth[k]) <= Z * m["se"][k], (k, got[k], m["se"][k])
    assert not m["gof"]["poor"]
    # one Beta cannot hold both tails: its chi-square says so
    assert fit_beta(counts, K)["gof"]["poor"]


def test_mixture_refused_when_not_identifiable():
    with pytest.raises(InputError, match="K >= 6"):
        fit_mixture(np.ones(5), 4)


@pytest.mark.parametrize("rho", [0.0, 0.25])
def test_within_prompt_correlation_recovers_rho_and_prompt_beta(rho):
    """Prompts from Beta(2, 3), each drawn 4 times; groups of K = 8 beta-binomial with correlation rho."""
    rng = np.random.default_rng(21 if rho else 22)
    P, R, K, a, b = 4000, 4, 8, 2.0, 3.0
    p = rng.beta(a, b, P)
    pid = np.repeat(np.arange(P), R)
    q = p[pid]
    if rho:
        s = 1 / rho - 1
        q = rng.beta(q * s, (1 - q) * s)
    g = RunGroups(K=K, successes=rng.binomial(K, q), step=np.tile(np.arange(R), P), prompt_id=pid, n_prompts=P)
    c = within_prompt_correlation(g)
    assert c["available"] and c["pairs"] == P * (R - 1)
    truth = {"rho": rho, "tau": 1 / (a + b + 1), "prompt_alpha": a, "prompt_beta": b, "mean": a / (a + b)}
    for k, v in truth.items():
        assert abs(c[k] - v) <= Z * c["se"][k], (k, c[k], c["se"][k])


def test_correlation_needs_repeats():
    g = RunGroups(K=4, successes=np.zeros(50, np.int64), step=np.zeros(50, np.int64),
                  prompt_id=np.arange(50), n_prompts=50)
    assert not within_prompt_correlation(g)["available"]


@pytest.mark.parametrize("K", [4, 16])
def test_predicted_unanimous_shares_match_monte_carlo(K):
    """The fitted model's all-pass / all-fail shares at K against groups simulated from the fitted model."""
    rng = np.random.default_rng(K)
    f = fit_beta(beta_counts(rng, 5000, K, 0.8, 1.3), K)
    n = 400_000
    mc = rng.binomial(K, rng.beta(f["alpha"], f["beta"], n))
    for share, pred in ((np.mean(mc == K), f["predicted_all_pass"]), (np.mean(mc == 0), f["predicted_all_fail"])):
        se = np.sqrt(pred * (1 - pred) / n)
        assert abs(share - pred) <= 4 * se
    # the what-if table (the core's closed forms) agrees with Monte Carlo at other K too
    for row in what_if_K((f["alpha"], f["beta"]), (2 * K,)):
        mc2 = rng.binomial(2 * K, rng.beta(f["alpha"], f["beta"], n))
        useful = np.mean((mc2 > 0) & (mc2 < 2 * K))
        assert abs(useful - row["effective_group_rate"]) <= 4 * np.sqrt(useful * (1 - useful) / n)


def test_mixture_predicted_shares_match_monte_carlo():
    rng = np.random.default_rng(8)
    K = 8
    m = fit_mixture(mixture_counts(rng, 20_000, K, 0.3, (0.6, 4.0), (4.0, 0.6)), K)
    (c1, c2), w, n = m["components"], m["w"], 400_000
    low = rng.random(n) < w
    p = np.where(low, rng.beta(c1["alpha"], c1["beta"], n), rng.beta(c2["alpha"], c2["beta"], n))
    s = rng.binomial(K, p)
    for share, pred in ((np.mean(s == K), m["predicted_all_pass"]), (np.mean(s == 0), m["predicted_all_fail"])):
        assert abs(share - pred) <= 4 * np.sqrt(pred * (1 - pred) / n)
    rows = what_if_K([(w, c1["alpha"], c1["beta"]), (1 - w, c2["alpha"], c2["beta"])], (K,))
    assert rows[0]["all_pass"] == pytest.approx(m["predicted_all_pass"], rel=1e-9)
    assert rows[0]["all_fail"] == pytest.approx(m["predicted_all_fail"], rel=1e-9)


def test_share_interval_is_jeffreys_and_covers():
    lo, hi = share_interval(30, 100)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 30.5, 70.5)) and hi == pytest.approx(stats.beta.ppf(0.975, 30.5, 70.5))
    assert share_interval(0, 10)[0] == 0 and share_interval(10, 10)[1] == 1
    rng = np.random.default_rng(2)
    k = rng.binomial(200, 0.1, 4000)
    lo, hi = share_interval(k, 200)
    cover = np.mean((lo <= 0.1) & (0.1 <= hi))
    assert abs(cover - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 4000) + 0.01  # discreteness allows ~1%


def test_gof_p_value_is_uniform_under_the_model():
    """Under a true Beta population the chi-square test rejects at about its level."""
    rng = np.random.default_rng(9)
    rejected = [fit_beta(beta_counts(rng, 2000, 8, 2.0, 3.0), 8)["gof"]["p_value"] < 0.05 for _ in range(120)]
    assert np.mean(rejected) < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 120)


def test_fits_reach_the_maximum_of_the_likelihood():
    """The fitted log-likelihood is the maximum: a tight Nelder-Mead from the truth finds nothing higher."""
    from scipy import optimize

    rng = np.random.default_rng(4)
    K = 8
    counts = mixture_counts(rng, 100_000, K, 0.35, (0.7, 3.0), (5.0, 1.0))
    s = np.arange(K + 1)
    f = fit_beta(counts, K)
    nm = optimize.minimize(lambda x: -np.sum(counts * stats.betabinom.logpmf(s, K, *np.exp(x))),
                           np.log([f["alpha"] * 1.3, f["beta"] * 0.8]), method="Nelder-Mead",
                           options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 20_000})
    assert f["loglik"] >= -nm.fun - 1e-3
    m = fit_mixture(counts, K)

    def nll(x):
        w = 1 / (1 + np.exp(-x[0]))
        a1, b1, a2, b2 = np.exp(x[1:])
        return -np.sum(counts * np.log(w * stats.betabinom.pmf(s, K, a1, b1) + (1 - w) * stats.betabinom.pmf(s, K, a2, b2)))

    nm = optimize.minimize(nll, [np.log(0.35 / 0.65), *np.log([0.7, 3.0, 5.0, 1.0])], method="Nelder-Mead",
                           options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 50_000, "maxfev": 50_000})
    assert m["loglik"] >= -nm.fun - 1e-2


def test_a_chi_square_with_no_degree_of_freedom_is_reported_as_not_testable():
    """Few groups pool into few cells: df = cells - 1 - 2 < 1 has no test, and the report says so
    instead of printing a negative df (SmolLM2's 32-group runs in runs/lm pool into 2 or 3 cells)."""
    from grpo_lab.sims.doctor.fit import gof
    from grpo_lab.doctor_report.text import gof_text

    g = gof([14, 1, 0, 0, 1], stats.betabinom.pmf(np.arange(5), 4, 0.3, 0.6), n_params=2)
    assert g["cells"] == 2 and g["df"] == -1 and np.isnan(g["p_value"]) and not g["poor"]
    assert gof_text(g) == "chi-square not testable (2 cells after pooling, too few for the fit's parameters)"
    many = gof([400, 50, 30, 60, 300], stats.betabinom.pmf(np.arange(5), 4, 0.3, 0.6), n_params=2)
    assert many["df"] == 2 and gof_text(many).startswith(f"chi-square p = {many['p_value']:.3g} (df 2)")
