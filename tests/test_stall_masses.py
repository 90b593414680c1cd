"""Prompts that do not move together (issue 39, item 7): the loop simulator's options for them, the one loop
simulator behind the scalars' DAPO run, and the stall risk's population with masses at p = 0 and p = 1.

The simulator's frozen prompts, correlated rollouts, per-prompt rates and jump once trained against direct
computations; its scalars log against a count of its own groups and its fresh-draw rounds against the closed form;
the masses' group pmf against scipy's beta-binomial mixed with them; the masses fitted from every group within 3
SEs of the truth; the variant chosen by the leave-future-out score where a share is never solved; the masses'
draws following the likelihood where the record tells them and the prior where it cannot (a survivors-only dump).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.doctor.drift import H_GRID, fit_population, measure_drift, population_params, population_table
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.loop_sim import drift, pass_rates, simulate_loop, to_record, to_scalars
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.doctor.stall import rounds_distribution
from grpo_lab.sims.doctor.stall_risk import MASS_PRIOR, population_draws, step_counts, unseen_share

K = 8
I0 = int(np.argmin(np.abs(H_GRID)))


def test_frozen_prompts_never_move_and_rates_scale_the_clock():
    """A frozen prompt keeps p_0 (0: never solved, 1: never failed) at every step; with per-prompt rates,
    prompt x is at the drift's t rates[x]; a prompt once trained is moved by the jump on the logit."""
    p0 = np.array([0.0, 1.0, 0.3, 0.3, 0.6])
    frozen = np.array([True, True, False, False, False])
    rates = np.array([1.0, 1.0, 0.5, 2.0, 1.0])
    for t in (0, 10, 100):
        p = pass_rates(p0, t, "logit", {"beta": 0.03}, frozen, rates)
        assert p[0] == 0.0 and p[1] == 1.0
        assert p[2:] == pytest.approx([float(drift(0.3, 0.5 * t, "logit", beta=0.03)),
                                       float(drift(0.3, 2.0 * t, "logit", beta=0.03)),
                                       float(drift(0.6, t, "logit", beta=0.03))])
    jumped = np.array([False, False, True, False, False])
    p = pass_rates(p0, 10, "logit", {"beta": 0.03}, frozen, None, jumped, 1.5)
    lo = np.log(0.3 / 0.7) + 0.3 + 1.5
    assert p[2] == pytest.approx(1 / (1 + np.exp(-lo))) and p[3] == pytest.approx(float(drift(0.3, 10, "logit", beta=0.03)))
    sim = simulate_loop(np.r_[np.zeros(100), np.full(100, 0.5)], K, 50, 10, 3, "logit", {"beta": 0.05}, 30, seed=1,
                        frozen=np.r_[np.ones(100, bool), np.zeros(100, bool)])
    assert np.all(sim["successes"][sim["prompt_id"] < 100] == 0)


def test_correlated_rollouts_are_the_beta_binomial():
    """Rollouts with intra-group correlation rho on a static prompt set of p = 0.4: the group's successes have
    the beta-binomial's mean K p and variance K p (1 - p) (1 + (K - 1) rho), within 4 standard errors."""
    rho, p = 0.3, 0.4
    sim = simulate_loop(np.full(400, p), K, 100, 1, 1, "static", {}, 300, seed=2, icc=rho)
    k = sim["successes"].astype(float)
    n = len(k)
    c = (1 - rho) / rho
    want = stats.betabinom(K, p * c, (1 - p) * c)
    assert abs(k.mean() - want.mean()) < 4 * want.std() / np.sqrt(n)
    assert want.var() == pytest.approx(K * p * (1 - p) * (1 + (K - 1) * rho))
    se_var = want.var() * np.sqrt(2 / n) * 1.5  # a generous SE of a sample variance (excess kurtosis)
    assert abs(k.var() - want.var()) < 4 * se_var
    assert abs(k.var() - K * p * (1 - p)) > 10 * se_var  # the binomial's variance is far off


def test_a_prompt_jumps_once_trained():
    """With the jump once trained, every prompt the loop trained at a step passes more often at the steps after:
    on a static set of p = 0.3 (logit jump 2.0), the successes of groups of prompts trained before are near
    K expit(logit 0.3 + 2) and of those not trained near K 0.3."""
    sim = simulate_loop(np.full(300, 0.3), K, 30, 10, 5, "static", {}, 40, seed=3, train_jump=2.0)
    seen, before = np.zeros(300, bool), []
    for s in range(1, 41):
        m = sim["step"] == s
        before.append(seen[sim["prompt_id"][m]])
        seen[sim["prompt_id"][m & sim["trained"]]] = True
    before = np.concatenate(before)
    k = sim["successes"]
    hi = 1 / (1 + np.exp(-(np.log(0.3 / 0.7) + 2.0)))
    for mask, p in ((before, hi), (~before, 0.3)):
        n = mask.sum()
        assert n > 200 and abs(k[mask].mean() / K - p) < 4 * np.sqrt(p * (1 - p) / (K * n))


def test_scalars_log_counts_the_loops_groups():
    """:func:`to_scalars`: each row's shares are the shares of the groups the loop drew at that step, the groups
    per step and the rounds its own; the scalars' DAPO run (``simulate_dapo``) is the same loop with fresh
    draws: its rounds follow P(R <= r) = P(Bin(rB, u) >= T) of the Beta's P(mixed) within 4 SEs, its last row is
    the stalled step with ``cap`` rounds."""
    sim = simulate_loop(np.random.default_rng(0).beta(1.5, 1.5, 300), K, 32, 20, 3, "logit", {"beta": 0.05}, 40,
                        seed=4)
    rec = to_scalars(sim, 30, columns=("frac_all_pass", "frac_all_fail"), raw_names={"frac_all_pass": "good"})
    for i, s in enumerate(rec.steps["step"]):
        k = sim["successes"][sim["step"] == s]
        assert rec.steps["frac_all_pass"][i] == np.mean(k == K) and rec.steps["frac_all_fail"][i] == np.mean(k == 0)
        assert rec.steps["groups_per_step"][i] == len(k) == 32 * rec.steps["scalar/gen_batches"][i]
    assert np.all(np.isnan(rec.steps["reward_mean"])) and np.array_equal(rec.steps["scalar/good"],
                                                                         rec.steps["frac_all_pass"])
    a, b, B, T, cap = 1.5, 2.0, 64, 40, 4
    rec, stall = simulate_dapo(a, b, 0.0, K, 400, B, T, cap, seed=5)
    r = rec.steps["scalar/gen_batches"]
    done = r[:-1] if stall is not None else r
    pm = stats.betabinom.pmf(np.arange(K + 1), K, a, b)
    d = rounds_distribution(np.array([1 - pm[0] - pm[K]]), B, T, cap)
    for x in range(1, cap):
        emp, want = np.mean(done <= x), d["cdf"][x - 1] / d["cdf"][-1]
        assert abs(emp - want) < 4 * np.sqrt(want * (1 - want) / len(done)) + 1e-3
    if stall is not None:
        assert rec.steps["step"][-1] == stall and r[-1] == cap


def test_masses_table_is_the_mixture():
    """The group pmf with masses w0 (never solved) and w1 (never failed) is (1 - w0 - w1) beta-binomial + w0 at
    k = 0 + w1 at k = K at h = 0; the masses do not move with the shift; the mixed share scales by 1 - w0 - w1."""
    a, b, w0, w1 = 1.3, 2.1, 0.2, 0.1
    for link in ("logit", "loglog"):
        tab = population_table(a, b, K, link, w0=w0, w1=w1)
        want = (1 - w0 - w1) * stats.betabinom.pmf(np.arange(K + 1), K, a, b)
        want[0] += w0
        want[K] += w1
        assert tab["pmf"][I0] == pytest.approx(want, abs=2e-3)
        plain = population_table(a, b, K, link)
        assert tab["u"] == pytest.approx((1 - w0 - w1) * plain["u"])
        assert np.all(tab["fail"] >= w0 - 1e-12) and np.all(tab["pass"] >= w1 - 1e-12)


def _mass_record(seed, w0=0.3, steps=40, per=150, beta=0.03):
    """Every group of a population with a share w0 never solved and the rest Beta(1.5, 1.5) under a logit drift."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((steps, K + 1))
    for s in range(steps):
        p = rng.beta(1.5, 1.5, per)
        p = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + beta * s)))
        p[rng.random(per) < w0] = 0.0
        counts[s] = np.bincount(rng.binomial(K, p), minlength=K + 1)
    return counts


def test_masses_fitted_from_every_group_and_chosen():
    """Every group logged, 30% never solved: the masses' fit holds w0 within 3 of its SEs (delta method on its
    log-odds) of 0.3 and w1 near 0; the leave-future-out score gives the masses variant most of the weight; the
    Beta alone, fitted to the same record, puts a share of its prompts near p = 0 (a below 0.5)."""
    counts = _mass_record(6)
    steps = np.arange(1, len(counts) + 1)
    d = measure_drift(counts, steps, K, False)
    pop = d["variants"]["masses"]["logit"]["population"]
    x, cov = pop["x"], pop["cov"]
    e = np.exp(x[2:4])
    grad = np.array([e[0] * (1 + e[1]), -e[0] * e[1]]) / (1 + e.sum()) ** 2  # d w0 / d (z0, z1)
    se = float(np.sqrt(grad @ cov[2:4, 2:4] @ grad))
    assert abs(pop["w0"] - 0.3) < 3 * se and se < 0.05 and pop["w1"] < 0.02
    assert d["weights"]["variants"]["masses"] > 0.9
    assert d["variants"]["beta"]["logit"]["population"]["a"] < 0.5


def test_masses_draws_follow_the_likelihood_or_the_prior():
    """The masses' population draws: from every group they cluster at the fitted w0 (sd under 0.05); from the
    survivors only (no unanimous group recorded, no rounds) the likelihood does not hold the masses and the
    draws spread over the prior's [0, MASS_PRIOR] (sd over 0.08; the forecast widens where the data cannot tell)."""
    counts = _mass_record(7)
    steps = np.arange(1, len(counts) + 1)
    surv = counts.copy()
    surv[:, [0, K]] = 0
    spread = {}
    for name, c, s in (("all", counts, False), ("survivors", surv, True)):
        d = measure_drift(c, steps, K, s, variants=("beta", "masses"))
        pop = d["variants"]["masses"]["logit"]["population"]
        xs = population_draws(pop, d, "logit", 200, np.random.default_rng(8), d["links"]["logit"]["population"])
        w0 = np.array([population_params(x, True)[2] for x in xs])
        spread[name] = (float(np.mean(w0)), float(np.std(w0)))
        assert np.all(w0 <= max(MASS_PRIOR, pop["w0"] + 0.1) + 1e-9)
    assert abs(spread["all"][0] - 0.3) < 0.05 and spread["all"][1] < 0.05
    assert spread["survivors"][1] > 0.08


def test_survivors_record_of_a_frozen_share_holds_none_of_it():
    """The loop's trained-only record never holds a never-solved prompt (it is never mixed), so its counts carry
    nothing of the mass: the reason the masses' draws follow the prior there; the share of the prompt set it never
    shows bounds the masses (at least the frozen 30% here; under 5% of a set without masses after 30 steps, about
    four epochs), and the masses' draws keep to that bound."""
    p0 = np.r_[np.zeros(150), np.random.default_rng(9).beta(1.5, 1.5, 350)]
    sim = simulate_loop(p0, K, 64, 40, 3, "logit", {"beta": 0.02}, 30, seed=9, frozen=p0 == 0)
    g = run_groups(to_record(sim, "trained", 30))
    assert not np.any(np.asarray(g.prompt_id) < 150)
    steps, counts = step_counts(g)
    assert counts[:, 0].sum() == 0 and counts[:, K].sum() == 0 and len(steps) == 30
    assert unseen_share(g) >= 0.3
    free = simulate_loop(p0[150:], K, 64, 40, 3, "logit", {"beta": 0.02}, 30, seed=9)
    g2 = run_groups(to_record(free, "trained", 30))
    cap = unseen_share(g2)
    assert cap < 0.05
    steps, counts = step_counts(g2)
    d = measure_drift(counts, steps, K, True)
    pop = d["variants"]["masses"]["logit"]["population"]
    xs = population_draws(pop, d, "logit", 100, np.random.default_rng(10), d["links"]["logit"]["population"], cap)
    assert all(sum(population_params(x, True)[2:]) <= cap + 1e-9 for x in xs)
