"""Logs of the mixed share only (the zero-std share alone, the rounds alone) on the drift shapes (issue 39, item 8:
one doctor): each step's shift measured on one mirror branch (drift.shift_estimates' fold).

The known truth is computed apart from drift.py: the mixed share of Beta(a, b) pass rates moved by h on the logit
scale, integrated with scipy's quad (tests/test_drift_expiry.py's _true_mixed)."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.doctor.drift import H_GRID, population_table, shift_estimates
from grpo_lab.sims.doctor.drift_shares import MIXED_BIN_GROUPS, shares_drift, shares_evidence, shares_expiry
from grpo_lab.sims.doctor.scalars_fit import StepShares, best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_forecast import expiry_forecast
from grpo_lab.sims.doctor.scalars_sim import simulate_shares
from test_drift_expiry import _true_mixed

NAN = float("nan")


def test_the_fold_measures_one_mirror_branch():
    """Beta(2, 2) (the mixed share's peak at h = 0, its two sides mirror images), three rows of 5,000 groups whose
    zero-std share is the truth's at h = 1.5: the row's likelihood has a mode at +1.5 and one at -1.5, so its mean
    over the whole grid sits near the peak; cut at the peak, it measures +1.5 where the reference lies right of
    the peak and -1.5 where it lies left, within 3 of its standard errors."""
    K, h = 8, 1.5
    tab = population_table(2.0, 2.0, K, "logit")
    u = float(np.interp(h, H_GRID, tab["u"]))
    n = np.full(3, 5000.0)
    d = StepShares(np.arange(3), n, np.full(3, NAN), np.full(3, NAN), np.full(3, 1 - u), np.full(3, NAN), K)
    ev = shares_evidence(d)
    assert ev.mixed_only
    LL = ev.loglik(tab)
    whole, _ = shift_estimates(LL)
    assert np.all(np.abs(whole) < 0.2)
    for side in (1.0, -1.0):
        m, se = shift_estimates(LL, (tab["u"], np.full(3, 0.1 * side)))
        assert np.all(np.abs(m - side * h) < 3 * se) and np.all(se < 0.3), (side, m, se)


def test_a_log_of_the_mixed_share_only_pools_its_rows_into_bins_of_enough_groups():
    """60 zero-std rows of 64 groups: bins of at least MIXED_BIN_GROUPS groups (12 bins of 5 rows); the same rows
    with the all-pass share too are sided and keep a bin a row."""
    zs = shares_evidence(step_shares(simulate_shares(1.5, 2.5, 0.03, 8, 60, 64, seed=1,
                                                     logged=("frac_reward_zero_std",))))
    assert zs.mixed_only and zs.points == 60 * 64 // MIXED_BIN_GROUPS == 12
    assert int(shares_drift(step_shares(simulate_shares(1.5, 2.5, 0.03, 8, 60, 64, seed=1, logged=(
        "frac_reward_zero_std",))))[1]["bins"][-1]) + 1 == 12
    both = shares_evidence(step_shares(simulate_shares(1.5, 2.5, 0.03, 8, 60, 64, seed=1)))
    assert not both.mixed_only and both.points >= 60


def test_zero_std_only_expiry_covers_the_truth_paired_with_the_drift_maps():
    """Six simulated logs of the zero-std share alone (Beta(1.5, 2.5) under +0.03 a step, K 8, 60 steps of 200
    groups, seeds 0-5): the true first step under 0.5 (quad) inside the drift shapes' 95% expiry interval in at
    least 5 of 6 (Binomial(6, 0.95) gives fewer with probability 0.03), and in at least as many as the drift maps'
    on the same seeds."""
    a, b, rate, K = 1.5, 2.5, 0.03, 8
    truth = next(s for s in range(61, 2000) if _true_mixed(a, b, K, rate * (s - 1)) < 0.5)
    shapes = maps = 0
    for seed in range(6):
        d = step_shares(simulate_shares(a, b, rate, K, 60, 200, seed=seed, logged=("frac_reward_zero_std",)))
        e = shares_expiry(d, 0.5, predictive=False)
        assert e["model"] == "drift shapes"
        lo, hi = e["interval"]
        shapes += (lo or -1) <= truth <= (hi or 1e9)
        lo, hi = expiry_forecast(best_fit(fit_models(d)), 0.5, predictive=False)["interval"]
        maps += (lo or -1) <= truth <= (hi or 1e9)
    assert shapes >= 5 and shapes >= maps, (shapes, maps, truth)


def test_rounds_only_first_stall_covers_the_truth_paired_with_the_drift_maps():
    """Six simulated DAPO runs that log their rounds alone (benchmarks/rounds_coverage.py's "collapse, cap 6":
    Beta(2, 1.2) under -0.02 a step, K 8, rounds of 32 prompts to fill 16 mixed groups, the first 150 steps logged;
    seeds 0-5, none stalled by then): the loop's first stall inside the drift shapes' 90% interval (its risk) in at
    least 5 of 6, and in at least as many as the drift map's first cap hit's 95% predictive interval on the same
    seeds (here 6 and 4); the cause not identified."""
    from test_doctor_rounds_fit import _rounds_only

    from grpo_lab.sims.doctor.drift_shares import shares_risk
    from grpo_lab.sims.doctor.scalars_forecast import stall_forecast
    from grpo_lab.sims.doctor.scalars_sim import simulate_dapo

    K, B, T, cap, logged = 8, 32, 16, 6, 150
    st = {"trainer": "verl", "gen_batch": B, "train_batch": T, "cap": cap, "cap_effective": cap, "pool": None, "K": K}
    shapes = maps = 0
    for seed in range(6):
        rec, stall = simulate_dapo(2.0, 1.2, -0.02, K, 400, B, T, cap, seed=seed)
        assert stall is not None and stall > logged
        d = step_shares(_rounds_only(rec, logged + 1), settings=st)  # the rounds of steps 1-150
        r = shares_risk(d, st, 600, seed=seed)
        assert r["available"] and r["cause"].startswith("not identified")
        lo, hi = r["first_stall"]["interval"]
        shapes += lo <= stall <= (hi or 601)
        lo, hi = stall_forecast(best_fit(fit_models(d)), st)["first_cap_hit"]["predictive"]
        maps += (lo or 0) <= stall <= (hi or 601)
    assert shapes >= 5 and shapes >= maps, (shapes, maps)


def test_diagnose_reads_a_zero_std_only_log_on_the_drift_shapes_and_says_the_side_is_not_identified():
    """diagnose on a log of the zero-std share alone with a trainer config: the fit, the expiry, the stall forecast
    and its risk all from the drift shapes (no drift map fitted), the cause "not identified" in the forecast and the
    risk, the fit's note on the mirror and its unidentified population in the text; the JSON and the HTML whole."""
    import json

    from test_doctor_scalars import SETTINGS

    from grpo_lab.doctor_report import html_report, text_report
    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.doctor.scalars_forecast import NO_SIDE
    from grpo_lab.sims.doctor.shares_fit import MIRROR_NOTE
    from grpo_lab.sims.jsonable import jsonable

    rec = simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2, logged=("frac_reward_zero_std",))
    d = diagnose(rec, trainer_config=SETTINGS)
    assert d["fit"]["source"] == d["stall_forecast"]["source"] == "drift shapes" and d["expiry"]["model"] == "drift shapes"
    assert d["fit"]["identified"] == {"mixed_share": True, "split": False, "population": False}
    assert d["stall_forecast"]["cause"] == NO_SIDE and d["stall_forecast"]["risk"]["cause"] == NO_SIDE
    rk = d["stall_forecast"]["risk"]
    assert rk["available"] and d["when"]["stall"]["step"] == rk["first_stall"]["median"]
    json.dumps(jsonable(d), allow_nan=False)
    text = text_report(d)
    assert MIRROR_NOTE in text and "population's parameters are not identified" in text and NO_SIDE in text
    page = html_report(d)
    assert page.count("<svg") == 3 and "Stall risk" in page and "<script" not in page


def test_an_all_one_round_log_widens_the_expiry_to_what_its_rounds_cannot_tell():
    """A simulated DAPO run that logs its rounds alone (Beta(3, 3) under -0.02 a step, K 8, rounds of 64 prompts to
    fill 40 mixed groups, cap 3: the study's batches), its first 60 steps each one round: the rounds say only that
    the mixed share stayed above about 0.7, which the truth's 0.93 -> 0.81 did. The true first step under 0.5
    (quad: 125) lies inside the drift shapes' 95% expiry interval (before the shapes' draws weighed their paths by
    the tabulated likelihood it began at 126: every bin's flat-topped likelihood summed as a normal measurement),
    and that interval is wider than the same run's logged to step 100, whose later rows draw two rounds now and
    then (the drift seen): it starts no later and reaches past the horizon where the other ends within it."""
    from test_doctor_rounds_fit import _rounds_only

    from grpo_lab.sims.doctor.scalars_sim import simulate_dapo

    a, b, rate, K, B, T, cap = 3.0, 3.0, -0.02, 8, 64, 40, 3
    st = {"trainer": "verl", "gen_batch": B, "train_batch": T, "cap": cap, "cap_effective": cap, "pool": None, "K": K}
    truth = next(s for s in range(1, 2000) if _true_mixed(a, b, K, rate * (s - 1)) < 0.5)
    rec, _ = simulate_dapo(a, b, rate, K, 100, B, T, cap, seed=0)
    r = np.asarray(rec.steps["scalar/gen_batches"])
    assert np.all(r[:60] == 1) and np.any(r[60:] > 1)
    out = {}
    for n in (60, 100):
        e = shares_expiry(step_shares(_rounds_only(rec, n + 1), settings=st), 0.5, predictive=False)
        assert e["model"] == "drift shapes"
        out[n] = (*e["interval"], e["horizon_step"])
    lo, hi, _ = out[60]
    assert lo is not None and lo <= truth <= (hi or 1e9), (out, truth)
    lo_seen, hi_seen, horizon = out[100]
    assert lo_seen is not None and lo <= lo_seen and hi is None and hi_seen is not None and hi_seen < horizon, out
