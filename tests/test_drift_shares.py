"""The per-step shares' likelihood on the group path's grid (sims/doctor/drift_shares.py) and the scalars path's
stall risk built on it.

At K = 2 the three shares are the group counts themselves (k = 0, 1, 2), so the shares' table must equal the
groups' (drift.step_loglik) exactly, and the mean reward adds only its variance floor's constant; at K = 8 the
vectorised table against a row-by-row sum written from the pmf; a row of rounds against drift.rounds_logp; the
population and the drift recovered from simulated shares within their standard errors; a diagnosis of a
scalars-only log gives the risk and `when` says it; the study's plateau seed that the drift maps missed.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.doctor.drift import H_GRID, population_table, rounds_logp, step_loglik
from grpo_lab.sims.doctor.drift_shares import shares_drift, shares_evidence, shares_risk
from grpo_lab.sims.doctor.scalars_fit import Y_FLOOR, StepShares, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

NAN = np.nan


def _shares(counts: np.ndarray, K: int, mean: bool = False) -> StepShares:
    n = counts.sum(1)
    rm = (counts @ np.arange(K + 1)) / (K * n) if mean else np.full(len(n), NAN)
    return StepShares(np.arange(len(n)), n, counts[:, K] / n, counts[:, 0] / n, (counts[:, 0] + counts[:, K]) / n, rm,
                      K)


def test_k2_shares_are_the_group_counts():
    """K = 2: all-pass / all-fail / mixed are k = 2 / 0 / 1, so the shares' LL[s, h] is the groups' to rounding; the
    mean reward then fixes the total successes exactly (Var(S | class) = 0), adding -log(2 pi Y_FLOOR) / 2 a row."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 30, size=(12, 3)).astype(float) + 1
    tab = population_table(0.7, 1.3, 2, "logit", w0=0.1, w1=0.05)
    want = step_loglik(tab, counts, False)
    np.testing.assert_allclose(shares_evidence(_shares(counts, 2)).loglik(tab), want, rtol=1e-10, atol=1e-8)
    got = shares_evidence(_shares(counts, 2, mean=True)).loglik(tab)
    np.testing.assert_allclose(got, want - 0.5 * np.log(2 * np.pi * Y_FLOOR), rtol=1e-10, atol=1e-8)


def test_k8_table_against_a_row_by_row_sum():
    """K = 8, a row with all three shares and the mean reward and a row with the zero-std share alone: the
    vectorised table against sums over the pmf written out per shift."""
    K = 8
    tab = population_table(1.5, 2.5, K, "loglog", grid=H_GRID[::20])
    d = StepShares(np.array([0, 1, 2]), np.array([40.0, 40.0, 40.0]), np.array([0.25, NAN, 0.1]),
                   np.array([0.15, NAN, 0.2]), np.array([0.4, 0.35, 0.3]), np.array([0.55, NAN, 0.45]), K)
    LL = shares_evidence(d).loglik(tab)
    k = np.arange(K + 1)
    for j, pmf in enumerate(tab["pmf"]):
        pp, pf = pmf[K], pmf[0]
        pm = 1 - pp - pf
        for s, (ap, af) in enumerate([(0.25, 0.15), (NAN, NAN), (0.1, 0.2)]):
            if s == 1:  # the zero-std share alone: (unanimous, mixed)
                want = 40 * 0.35 * np.log(pp + pf) + 40 * 0.65 * np.log(pm)
            else:
                n = 40 * np.array([ap, af, 1 - ap - af])
                want = n @ np.log([pp, pf, pm])
                e_mix = (k[1:K] @ pmf[1:K]) / pm
                v_mix = (k[1:K] ** 2 @ pmf[1:K]) / pm - e_mix**2
                mean, var = n[0] * K + n[2] * e_mix, n[2] * v_mix + Y_FLOOR
                y = d.reward_mean[s] * K * 40
                want += -0.5 * np.log(2 * np.pi * var) - 0.5 * (y - mean) ** 2 / var
            assert LL[s, j] == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_rounds_rows_use_the_rounds_likelihood():
    """Rows that log no share but their rounds: LL = log P(R = r | u(h)) (drift.rounds_logp)."""
    K, r = 8, np.array([1.0, 2.0, 3.0, 1.0])
    d = StepShares(np.arange(4), np.array([64.0] * 4), *(np.full(4, NAN) for _ in range(4)), K, rounds=r,
                   settings={"gen_batch": 64, "train_batch": 40, "cap": 3})
    tab = population_table(1.0, 1.0, K, "logit", grid=H_GRID[::30])
    want = rounds_logp(r[:, None], tab["u"][None, :], 64, 40)
    np.testing.assert_allclose(shares_evidence(d).loglik(tab), want, rtol=1e-12)
    r = shares_risk(d, {"gen_batch": 64, "train_batch": 40, "cap": 3, "pool": None}, 40, mixed_only_shapes=False)
    assert r["available"] is False and "rounds" in r["reason"]  # kept on the drift maps: they forecast


def test_population_and_drift_recovered_from_shares():
    """Shares simulated from Beta(1.5, 2.5) under a logit drift of +0.03 a step (200 groups of K = 8, 60 steps): the
    Beta variant's logit-link population within 3.5 standard errors of the truth on the log scale, and the
    per-step shifts' weighted slope within 4 of its standard errors of 0.03."""
    rec = simulate_shares(1.5, 2.5, 0.03, 8, 60, 200, seed=5)
    _, dr = shares_drift(step_shares(rec))
    lk = dr["variants"]["beta"]["logit"]
    pop = lk["population"]
    se = np.sqrt(np.diag(pop["cov"]))
    assert abs(pop["x"][0] - np.log(1.5)) < 3.5 * se[0] and abs(pop["x"][1] - np.log(2.5)) < 3.5 * se[1]
    tau, h, sd = dr["tau"], lk["h"], lk["se"]
    w = 1 / sd**2
    X = np.stack([np.ones_like(tau), tau], 1)
    cov = np.linalg.inv(X.T @ (X * w[:, None]))
    slope = (cov @ X.T @ (w * h))[1]
    assert abs(slope - 0.03) < 4 * np.sqrt(cov[1, 1])


def test_the_study_plateau_seed_the_drift_maps_missed():
    """The stall study's plateau regime, seed 0, scalars mode (tinker's names): the drift maps put the 95% interval
    of the first stall before the truth (0 of 16 seeds covered); on the shares' table the plateau shape carries
    the largest weight and the 90% interval holds the truth."""
    from grpo_lab.testing.stall_study import one

    r = one("plateau", "scalars", 0)
    assert not r["stalled_in_log"]
    assert max(r["weights"], key=r["weights"].get) == "plateau"
    assert r["lo"] <= r["truth"] <= r["hi"]
    assert r["level"] == 0.9


def test_risk_without_a_cap_and_mixed_share_only():
    """No cap: not available; a log with the zero-std share alone (h and its mirror fit alike): the risk is drawn on
    the shifts measured on one mirror branch, its cause "not identified"; kept on the drift maps
    (``mixed_only_shapes=False``) not available, the drift map forecasts; with the mean reward beside it (TRL's
    pair) the risk is drawn and its cause said."""
    rec = simulate_shares(1.5, 1.5, 0.05, 8, 40, 64, seed=2, logged=("frac_reward_zero_std",))
    d = step_shares(rec)
    st = {"gen_batch": 64, "train_batch": 40, "cap": 0, "pool": None}
    assert shares_risk(d, st, 400)["available"] is False
    r = shares_risk(d, {**st, "cap": 3}, 400, draws=48)
    assert r["available"] and r["level"] == 0.9 and r["cause"].startswith("not identified")
    r = shares_risk(d, {**st, "cap": 3}, 400, draws=48, mixed_only_shapes=False)
    assert r["available"] is False and "mixed share only" in r["reason"]
    rec = simulate_shares(1.5, 1.5, 0.05, 8, 40, 64, seed=2, logged=("frac_reward_zero_std", "reward_mean"))
    r = shares_risk(step_shares(rec), {**st, "cap": 3}, 400, draws=48)
    assert r["available"] and r["level"] == 0.9 and r["cause"] == "all-pass saturation"


def test_a_horizon_past_the_risks_reach_keeps_the_first_step_over_the_cap():
    """More future steps than RISK_MAX_STEPS: the risk is not available (with why) and `when` says the stall
    forecast's first step over the cap (the same drift's on a sided log: tests/test_shares_fit.py); rows beyond
    POOL_ROWS are pooled for the table."""
    from grpo_lab.sims.doctor.drift_shares import POOL_ROWS, RISK_MAX_STEPS
    from grpo_lab.sims.doctor.when import scalars_stall

    n = 2 * POOL_ROWS + 7
    d = step_shares(simulate_shares(1.5, 2.0, 3.0 / n, 8, n, 96, seed=1))
    assert shares_evidence(d).shape[0] <= POOL_ROWS + 2 and shares_evidence(d).P["n"].sum() == d.n.sum()
    st = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8}
    r = shares_risk(d, st, n + RISK_MAX_STEPS + 1)
    assert r["available"] is False and "first step over the cap is the forecast" in r["reason"]
    sf = {"available": True, "first_cap_hit": {"median": 900.0, "predictive": [850.0, 990.0]}, "cause": "c",
          "risk": r}
    assert scalars_stall(sf)["step"] == 900.0 and scalars_stall(sf)["level"] == 0.95
